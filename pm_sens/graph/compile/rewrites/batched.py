"""Joins and splits over a draw axis as one op, not a Python loop over the draws.

A series' lag written as ``pt.concatenate([pt.zeros(1), mu[:-1]])`` joins an
input without the draw axis to one with it once the graph is vectorized over
draws; PyTensor's vectorization then falls back to a `Blockwise` of the join
(and the gradient to one of the split), which runs the core op once per draw
in Python: 4,000 calls for S=2000 in a lagged regression's R-sens.

The batch shapes come from the shapes PyTensor has already inferred
(``fgraph.shape_feature``), not from ``x.shape``: a broadcast's static shape
is inferred on a clone of its shape's graph, which for ``x.shape`` is all of
x's ancestors. Blockwise increments (a gradient's, of a slice) are broadcast
over the batch dims here for the same reason, before PyTensor's
``local_blockwise_inc_subtensor`` does it by ``x.shape``: that took 1.6 s of
an ordered probit's R-sens2 compile, 18 broadcasts of a 1,000-node graph.
A ViewOp (``pm.Deterministic``), vectorized as a `Blockwise` that copies each
draw in Python, is the array it passes through; a diagonal matrix per draw (a
GP's noise ``σ² I``) is allocated for all draws at once.
"""

from pytensor.compile.ops import ViewOp
from pytensor.graph.rewriting.basic import node_rewriter
from pytensor.tensor.basic import AllocDiag, Join, Split
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.subtensor import AdvancedIncSubtensor, IncSubtensor

from pm_sens.graph.compile.nodes import broadcast_typed


def _shape(fgraph, x):
    """The symbolic shape of ``x``, as PyTensor inferred it (`fgraph.shape_feature`)."""
    shape_feature = getattr(fgraph, "shape_feature", None)
    return tuple(x.shape) if shape_feature is None else shape_feature.shape_tuple(x)


def _batch_shape(fgraph, inputs, batch_ndim):
    """The broadcast batch shape of ``inputs``: each dim's (symbolic, static) size.

    Taken from an input that has the dim; (1, 1) where none has.
    """
    shape = []
    for k in range(batch_ndim):
        sized = [x for x in inputs if not x.type.broadcastable[k]]
        shape.append((_shape(fgraph, sized[0])[k], sized[0].type.shape[k]) if sized else (1, 1))
    return shape


def _broadcast(fgraph, x, batch_shape):
    """``x`` broadcast to ``batch_shape`` (`_batch_shape`) on its batch dims.

    The static shape is the inputs' (``batch_shape``'s and x's), not inferred
    from ``x``'s ancestors (`broadcast_typed`).
    """
    b = len(batch_shape)
    static = [
        n if n is not None or x.type.broadcastable[k] else x.type.shape[k]
        for k, (_, n) in enumerate(batch_shape)
    ]
    shape = [s for s, _ in batch_shape] + list(_shape(fgraph, x)[b:])
    return broadcast_typed(x, shape, [*static, *x.type.shape[b:]])


def _core_op(node, kind):
    return isinstance(node.op, Blockwise) and isinstance(node.op.core_op, kind)


@node_rewriter([Blockwise])
def local_blockwise_join(fgraph, node):
    """``Blockwise(Join(a))(x, y)`` → ``Join(a + b)(broadcast(x), broadcast(y))``.

    b batch dims; each input broadcast to the batch shape, so that one join
    copies all draws at once.
    """
    if not _core_op(node, Join):
        return None
    shape = _batch_shape(fgraph, node.inputs, node.op.batch_ndim(node))
    broadcast = [_broadcast(fgraph, x, shape) for x in node.inputs]
    return [Join(node.op.core_op.axis + len(shape))(*broadcast)]


@node_rewriter([Blockwise])
def local_blockwise_split(fgraph, node):
    """``Blockwise(Split(a))(x, sizes)`` → ``Split(a + b)(x, sizes)``, sizes without batch dims.

    The split sizes are an input's shape, the same for every draw; where they
    vary along a batch dim (ragged outputs) the node is left as it is.
    """
    if not _core_op(node, Split):
        return None
    x, sizes = node.inputs
    batch_ndim = node.op.batch_ndim(node)
    if not all(sizes.type.broadcastable[:batch_ndim]):
        return None
    core = node.op.core_op
    x = _broadcast(fgraph, x, _batch_shape(fgraph, [x], batch_ndim))
    split = Split(core.len_splits, core.axis + batch_ndim)
    return split(x, sizes[(0,) * batch_ndim], return_list=True)


@node_rewriter([Blockwise])
def local_blockwise_inc_subtensor_buffer(fgraph, node):
    """``Blockwise(IncSubtensor)(x, y, ...)`` with x broadcast to the batch shape first.

    Where x (a gradient's zeros) is broadcastable on a batch dim another input
    has; PyTensor's ``local_blockwise_inc_subtensor`` then finds nothing to
    broadcast.
    """
    if not _core_op(node, IncSubtensor | AdvancedIncSubtensor):
        return None
    x, *others = node.inputs
    batch_ndim = node.op.batch_ndim(node)
    broadcastable = [all(i.type.broadcastable[k] for i in node.inputs) for k in range(batch_ndim)]
    if list(x.type.broadcastable[:batch_ndim]) == broadcastable:
        return None
    shape = _batch_shape(fgraph, node.inputs, batch_ndim)
    return [node.op(_broadcast(fgraph, x, shape), *others)]


@node_rewriter([Blockwise])
def local_blockwise_view(fgraph, node):
    """``Blockwise(ViewOp)(x)`` → ``x``.

    A ``pm.Deterministic`` is a ViewOp, which PyTensor vectorizes over draws as
    a `Blockwise` that copies each draw in a Python loop (0.27 s of an ordered
    probit's partial dependence); PyTensor removes plain ViewOps, not these.
    """
    if not _core_op(node, ViewOp):
        return None
    (x,) = node.inputs
    return [x]


@node_rewriter([Blockwise])
def local_blockwise_alloc_diag(fgraph, node):
    """``Blockwise(AllocDiag(a1, a2))(x)`` → ``AllocDiag(a1 + b, a2 + b)(x)``, b batch dims.

    A marginal GP's noise ``σ² I`` per draw: built one draw at a time in Python
    (0.27 s of its permutation importance), where AllocDiag takes batch dims.
    """
    if not _core_op(node, AllocDiag):
        return None
    core = node.op.core_op
    batch_ndim = node.op.batch_ndim(node)
    shifted = AllocDiag(
        axis1=core.axis1 + batch_ndim, axis2=core.axis2 + batch_ndim, offset=core.offset
    )
    return [shifted(node.inputs[0])]

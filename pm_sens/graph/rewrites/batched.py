"""Joins and splits over a draw axis as one op, not a Python loop over the draws.

A series' lag written as ``pt.concatenate([pt.zeros(1), mu[:-1]])`` joins an
input without the draw axis to one with it once the graph is vectorized over
draws; PyTensor's vectorization then falls back to a `Blockwise` of the join
(and the gradient to one of the split), which runs the core op once per draw
in Python: 4,000 calls for S=2000 in a lagged regression's R-sens.
"""

import pytensor.tensor as pt
from pytensor.graph.rewriting.basic import node_rewriter
from pytensor.tensor.basic import Join, Split
from pytensor.tensor.blockwise import Blockwise


def _batch_shape(inputs, batch_ndim):
    """The broadcast batch shape of ``inputs``: each dim's size from an input that has it."""
    shape = []
    for k in range(batch_ndim):
        sized = [x for x in inputs if not x.type.broadcastable[k]]
        shape.append(sized[0].shape[k] if sized else 1)
    return shape


def _core_op(node, kind):
    return isinstance(node.op, Blockwise) and isinstance(node.op.core_op, kind)


@node_rewriter([Blockwise])
def local_blockwise_join(fgraph, node):
    """``Blockwise(Join(a))(x, y)`` → ``Join(a + b)(broadcast(x), broadcast(y))``.

    b batch dims; each input broadcast to the batch shape (a view), so that
    one join copies all draws at once.
    """
    if not _core_op(node, Join):
        return None
    batch_ndim = node.op.batch_ndim(node)
    shape = _batch_shape(node.inputs, batch_ndim)
    broadcast = [pt.broadcast_to(x, (*shape, *x.shape[batch_ndim:])) for x in node.inputs]
    return [Join(node.op.core_op.axis + batch_ndim)(*broadcast)]


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
    x = pt.broadcast_to(x, (*_batch_shape([x], batch_ndim), *x.shape[batch_ndim:]))
    split = Split(core.len_splits, core.axis + batch_ndim)
    return split(x, sizes[(0,) * batch_ndim], return_list=True)

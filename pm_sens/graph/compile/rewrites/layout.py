"""Rewrites of where results are written: views instead of copies, one array, not D."""

import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.graph.rewriting.basic import node_rewriter
from pytensor.tensor.basic import Join
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.subtensor import IncSubtensor

from pm_sens.graph.compile.nodes import is_elemwise, is_zeros


@node_rewriter([Join])
def local_join_of_like_elementwise(fgraph, node):
    """``join(f(a_1, c), …, f(a_D, c))`` as ``f(join(a_1, …, a_D), c)``.

    Draw-mode R-sens of several 1-D inputs (bambi's predictors) puts one
    (S, N, 1) column per input side by side, each the same elementwise
    expression of shared (S, N) arrays and of the input's own (S, 1, 1)
    coefficient: computed as one expression of the joined coefficients, the
    (S, N, D) result is written once, where D columns were written and then
    copied side by side.
    """
    return _lifted_join(fgraph, node.op.axis, node.inputs)


def _lifted_join(fgraph, axis, columns, expand=None):
    """``[join(columns)]`` computed below the elementwise op they share, or None.

    The columns are ``expand(x)`` for ``x`` in ``columns`` when ``expand`` (a
    DimShuffle inserting axes) is given. Each column must be one slice along
    ``axis``, the output of the same op with as many inputs, used nowhere
    else; inputs the columns share must be broadcast along ``axis``, the others
    are joined (lifted further where they allow it).
    """
    if len(columns) < 2 or any(len(fgraph.clients.get(x, ())) != 1 for x in columns):
        return None
    if expand is None and all(_inserts_axes(x.owner) for x in columns):
        ops = {x.owner.op for x in columns}
        inner = [x.owner.inputs[0] for x in columns]
        return None if len(ops) != 1 else _lifted_join(fgraph, axis, inner, ops.pop())
    owners = [x.owner for x in columns]
    if any(o is None or not isinstance(o.op, Elemwise) or len(o.outputs) != 1 for o in owners):
        return None
    if len({o.op for o in owners}) != 1 or len({len(o.inputs) for o in owners}) != 1:
        return None  # different ops, or sums or products of different lengths
    wrap = expand if expand is not None else (lambda v: v)
    if any(wrap(x).type.shape[axis] != 1 for x in columns):
        return None
    inputs = []
    for values in zip(*(o.inputs for o in owners), strict=True):
        if all(v is values[0] for v in values):
            shared = wrap(values[0])
            if not shared.type.broadcastable[axis]:
                return None
            inputs.append(shared)
            continue
        lifted = _lifted_join(fgraph, axis, values, expand)
        if lifted is None:
            wrapped = [wrap(v) for v in values]
            if len({v.type.broadcastable for v in wrapped}) != 1:
                return None
            lifted = [pt.join(axis, *wrapped)]
        inputs.append(lifted[0])
    return owners[0].op.make_node(*inputs).outputs


@node_rewriter([Elemwise])
def local_select_only_into_a_loop(fgraph, node):
    """``switch(keep, target, norm)`` as ``norm`` where no elementwise loop computes ``norm``.

    ``keep`` is always false: the select is there for the loop computing
    ``norm`` to run in ``target`` (`compile_predictive`). Where ``norm`` is
    made otherwise (columns joined), the select would only copy it.
    """
    if not is_elemwise(node, ps.Switch):
        return None
    keep, _, norm = node.inputs
    if keep.owner is not None and isinstance(keep.owner.op, DimShuffle):
        keep = keep.owner.inputs[0]
    if not getattr(keep.tag, "always_false", False):
        return None
    if norm.owner is not None and isinstance(norm.owner.op, Elemwise):
        return None
    return [norm]


def _inserts_axes(node):
    """Whether ``node`` only inserts broadcast axes into its input."""
    return node is not None and isinstance(node.op, DimShuffle) and node.op.is_expand_dims


@node_rewriter([IncSubtensor])
def local_set_into_zeros_as_view(fgraph, node):
    """``zeros(..., 1, ...)[..., 0, ...] = y`` as ``y`` with that axis inserted (a view).

    The gradient of a column of a per-draw array is written so (a new array of
    zeros per input and chunk, then a copy): bambi's per-predictor containers
    made ten of them per chunk of draw-mode R-sens.
    """
    x, y, *_ = node.inputs
    if not is_zeros(x):
        return None
    indices = node.op.idx_list
    integers = [k for k, index in enumerate(indices) if not isinstance(index, slice)]
    whole = all(index == slice(None) for index in indices if isinstance(index, slice))
    if len(indices) != x.ndim or len(integers) != 1 or not whole:
        return None
    (axis,) = integers
    kept = [b for k, b in enumerate(x.type.broadcastable) if k != axis]
    if x.type.shape[axis] != 1 or y.ndim != len(kept):
        return None
    if any(by and not bx for by, bx in zip(y.type.broadcastable, kept, strict=True)):
        return None  # y would be broadcast by the assignment
    return [pt.expand_dims(y, axis).astype(x.dtype)]

"""A column written into an array, carried apart through elementwise ops and reductions.

The derivative of a parameter that reads one column of a design matrix
(``sigma = exp(c + g * X[:, 0])``) is an array of zeros with that column set:
written whole for every draw, then read whole by every operation after it.
With ``f(set(X, y, i)) = set(f(X), f(y), i)`` and the same for reductions
along other axes, the zeros meet PyTensor's own rewrites (``0 · s`` and
``a + 0`` drop out) and no array of them is written.
"""

import pytensor.tensor as pt
from pytensor.graph.rewriting.basic import node_rewriter
from pytensor.tensor.elemwise import CAReduce, Elemwise
from pytensor.tensor.subtensor import IncSubtensor, indices_from_subtensor

from pm_sens.graph.compile.nodes import is_zeros


def _set_column(var):
    """``(x, y, axis, index)`` where ``var`` is ``x`` with ``x[..., index, ...] = y``, or None.

    ``var`` must set (or add into zeros) one index along one axis, the other
    axes whole, with ``y`` of that slice's shape (not broadcast by the setting).
    """
    node = var.owner
    if node is None or not isinstance(node.op, IncSubtensor):
        return None
    x, y, *index_inputs = node.inputs
    if not node.op.set_instead_of_inc and not is_zeros(x):
        return None
    indices = indices_from_subtensor(index_inputs, node.op.idx_list)
    integers = [k for k, index in enumerate(indices) if not isinstance(index, slice)]
    whole = all(index == slice(None) for index in indices if isinstance(index, slice))
    if len(integers) != 1 or not whole or len(indices) != x.ndim:
        return None
    (axis,) = integers
    kept = tuple(b for k, b in enumerate(x.type.broadcastable) if k != axis)
    if x.type.broadcastable[axis] or y.type.broadcastable != kept:
        return None
    return x, y, axis, indices[axis]


def _at(value, axis, index):
    """``value[..., index, ...]`` along ``axis``; a broadcast axis is dropped instead.

    Taken from the inputs of the elementwise ops that compute ``value``: a
    slice of their output would have them write the whole array for it.
    """
    if value.type.broadcastable[axis]:
        return value.squeeze(axis)
    node = value.owner
    if node is not None and isinstance(node.op, Elemwise) and len(node.outputs) == 1:
        return node.op(*(_at(v, axis, index) for v in node.inputs))
    return value[(slice(None),) * axis + (index,)]


def _set_into(x, y, axis, index):
    return pt.set_subtensor(x[(slice(None),) * axis + (index,)], y)


@node_rewriter([Elemwise])
def local_elementwise_of_a_set_column(fgraph, node):
    """``f(set(x, y, i), z)`` as ``set(f(x, z), f(y, z[i]), i)``.

    The column's values are computed apart from the array's; where ``x`` is
    zeros, ``f(x, z)`` is often ``z`` or zeros (PyTensor's specializing
    rewrites, after this one, see it), and the set then travels on.
    """
    if len(node.outputs) != 1:
        return None
    (out,) = node.outputs
    for k, value in enumerate(node.inputs):
        found = _set_column(value)
        if found is None or value.ndim != out.ndim:
            continue
        x, y, axis, index = found
        whole = [x if j == k else v for j, v in enumerate(node.inputs)]
        column = [y if j == k else _at(v, axis, index) for j, v in enumerate(node.inputs)]
        values = node.op(*whole)
        result = _set_into(values, node.op(*column), axis, index)
        return [result.astype(out.dtype)]
    return None


@node_rewriter([CAReduce])
def local_reduction_of_a_set_column(fgraph, node):
    """A reduction of ``set(x, y, i)`` as ``set(reduce(x), reduce(y), i)``.

    Along axes other than the column's: exact for any reduction, each output
    value reducing either values of ``x`` or values of ``y``. A reduction along
    the column's axis as well reduces the set result (small) over it after.
    """
    found = _set_column(node.inputs[0])
    if found is None:
        return None
    x, y, axis, index = found
    axes = sorted(node.op.axis if node.op.axis is not None else range(x.ndim))
    others = [a for a in axes if a != axis]
    if not others:
        return None
    column_axes = tuple(a - (a > axis) for a in others)  # y has no axis ``axis``
    left = axis - sum(a < axis for a in others)  # where the column's axis is after
    reduced = _set_into(
        node.op.clone(axis=tuple(others))(x), node.op.clone(axis=column_axes)(y), left, index
    )
    if axis in axes:
        reduced = node.op.clone(axis=(left,))(reduced)
    return [reduced.astype(node.outputs[0].dtype)]

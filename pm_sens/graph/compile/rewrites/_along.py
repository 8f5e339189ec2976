"""What a graph computes along one axis: values constant along it, and factors.

Shared by the contractions (`pm_sens.graph.compile.rewrites.contractions`): a term of
a second derivative is a product whose factors each vary along the points or
along the features, seldom both.
"""

import numpy as np
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.tensor.basic import Alloc
from pytensor.tensor.blas import Dot22
from pytensor.tensor.elemwise import CAReduce, DimShuffle, Elemwise
from pytensor.tensor.math import Dot
from pytensor.tensor.subtensor import IncSubtensor

from pm_sens.graph.compile.nodes import depends_on


def variadic(op, values):
    """``op(*values)`` (``pt.add``, ``pt.mul``), or the one value.

    A one-input sum or product would run element by element in NumPy.
    """
    return values[0] if len(values) == 1 else op(*values)


def split_off_constant_along(x, axis, memo):
    """``(c, p)`` with ``x = c · p`` and ``p`` constant along ``axis`` (length 1 there).

    ``c`` is None when ``x`` itself is constant along ``axis``. None when no
    such ``p`` is found among the inputs of ``x``'s elementwise operations, or
    the rest ``c`` would be constant along ``axis`` too.
    """
    constant = constant_along(x, axis, memo)
    if constant is not None:
        return None, constant
    for candidate in _elementwise_leaves(x):
        if candidate.type.broadcastable[axis]:
            continue
        constant = constant_along(candidate, axis, memo)
        if constant is None:
            continue
        rest = _linear_coefficient(x, candidate)
        if rest is not None and not rest.type.broadcastable[axis]:
            return rest, constant
    return None


def _elementwise_leaves(x):
    """The inputs of the elementwise operations that compute ``x``, first seen first."""
    leaves, stack, seen = [], [x], set()
    while stack:
        var = stack.pop()
        if var in seen:
            continue
        seen.add(var)
        if var.owner is not None and isinstance(var.owner.op, Elemwise):
            stack.extend(reversed(var.owner.inputs))
        else:
            leaves.append(var)
    return leaves


def _linear_coefficient(x, p):
    """``c`` with ``x = c · p``, or None.

    ``x`` must be a sum, difference, quotient or switch of products that each
    hold ``p`` exactly once as a factor. Each backward pass of a second
    derivative multiplies a feature's column into every term of the first
    derivative's chain rule, and through ``switch`` branches (a stable
    sigmoid's two forms).
    """
    if x is p:
        return pt.constant(np.ones((1,) * x.ndim, dtype=x.dtype))
    node = x.owner
    if node is None or not isinstance(node.op, Elemwise) or len(node.outputs) != 1:
        return None
    scalar, inputs = node.op.scalar_op, node.inputs
    holds = [depends_on(i, [p]) for i in inputs]
    if isinstance(scalar, ps.Mul):
        if sum(holds) != 1:
            return None
        k = holds.index(True)
        inner = _linear_coefficient(inputs[k], p)
        rest = [v for i, v in enumerate(inputs) if i != k]
        return None if inner is None else variadic(pt.mul, [*rest, inner])
    if isinstance(scalar, ps.Add | ps.Sub | ps.Neg):
        inner = [_linear_coefficient(v, p) for v in inputs]
        return None if any(c is None for c in inner) else node.op(*inner)
    if isinstance(scalar, ps.TrueDiv) and holds == [True, False]:
        inner = _linear_coefficient(inputs[0], p)
        return None if inner is None else inner / inputs[1]
    if isinstance(scalar, ps.Switch) and not holds[0]:
        branches = [_linear_coefficient(v, p) for v in inputs[1:]]
        return None if None in branches else pt.switch(inputs[0], *branches)
    return None


def constant_along(x, axis, memo=None):
    """``x`` of length 1 along ``axis``, if its value is the same all along it; else None.

    Follows views, elementwise operations, reductions, matrix products and
    writes into an array of one value: the backward pass of one feature's
    column of ``X @ Bᵀ`` is ``onehot_d @ Bᵀ``, ``B[:, d]`` repeated for every
    point. ``memo`` (a dict, one per graph being rewritten) remembers the
    answers, so that every term holding the same column uses one graph for
    it: half the nodes to compile.
    """
    memo = {} if memo is None else memo
    if (x, axis) not in memo:
        memo[x, axis] = _constant_along(x, axis, memo)
    return memo[x, axis]


def _constant_along(x, axis, memo):
    if x.type.broadcastable[axis]:
        return x
    node = x.owner
    if node is None:
        return None
    op = node.op
    if isinstance(op, DimShuffle):
        inner = constant_along(node.inputs[0], op.new_order[axis], memo)
        return None if inner is None else op(inner)
    if isinstance(op, Elemwise):
        inner = [constant_along(v, axis, memo) for v in node.inputs]
        if any(v is None for v in inner):
            return None
        return op.make_node(*inner).outputs[node.outputs.index(x)]
    if isinstance(op, CAReduce):
        (v,) = node.inputs
        reduced = range(v.ndim) if op.axis is None else op.axis
        inner = constant_along(v, [k for k in range(v.ndim) if k not in reduced][axis], memo)
        return None if inner is None else op(inner)
    if isinstance(op, Dot | Dot22) and axis == 0:
        inner = constant_along(node.inputs[0], 0, memo)
        return None if inner is None else op(inner, node.inputs[1])
    if isinstance(op, IncSubtensor):
        return _constant_along_written(node, axis, memo)
    if isinstance(op, Alloc):
        value, *shape = node.inputs
        offset = axis - (x.ndim - value.ndim)
        if offset >= 0 and not value.type.broadcastable[offset]:
            return None
        shape[axis] = 1
        return pt.alloc(value, *shape)
    return None


def _constant_along_written(node, axis, memo):
    """`constant_along` of ``x[index] = y`` (or ``+= y``), ``index`` taking all of ``axis``."""
    x, y, *index_values = node.inputs
    indices = node.op.idx_list
    if axis < len(indices) and indices[axis] != slice(None):
        return None
    # the axis of x[index] (and of y, aligned to its right) that ``axis`` becomes
    kept = [k for k, index in enumerate(indices) if isinstance(index, slice)]
    kept += list(range(len(indices), x.ndim))
    y_axis = kept.index(axis) - (len(kept) - y.ndim)
    inner_x = constant_along(x, axis, memo)
    inner_y = y if y_axis < 0 else constant_along(y, y_axis, memo)
    if inner_x is None or inner_y is None:
        return None
    return node.op(inner_x, inner_y, *index_values)

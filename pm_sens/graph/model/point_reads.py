"""What each point reads from the data besides its own row of the inputs.

A group-level predictor read through an index (``u[county_idx]``) gets a copy
per point, and observations that pick rows of the data (``mu[mask]``) are
computed on those rows only.
"""

import numpy as np
import pytensor.tensor as pt
from pytensor.compile.ops import ViewOp
from pytensor.graph.basic import Constant
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors, graph_inputs
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.math import Dot
from pytensor.tensor.shape import SpecifyShape
from pytensor.tensor.subtensor import AdvancedSubtensor

from pm_sens.graph.compile.nodes import is_float
from pm_sens.graph.model.per_row import numpy_input_names
from pm_sens.graph.model.queries import (
    data_containers,
    data_value,
    first_axis_reads,
    indexes_first_axis,
    replace_rebuilding,
    symbolic_tensor,
)


def per_point_group_inputs(model, params, indices=()):
    """Give each point its own copy of group-level predictors read as ``u[idx]``.

    Each read becomes a per-point symbolic input named like the container, so
    its derivative at point i is with respect to the value its group contributes
    to that point. Returns the new parameters and ``{input: (u, idx)}``.
    """
    # a NumPy array is named after its coefficient, which the reads below move away from
    names = numpy_input_names(model, params, _group_arrays(model, params))
    params = push_indexing_down(model, params, indices)
    reads = group_level_reads(model, params, indices)
    if not reads:
        return params, {}
    copies = {
        read: symbolic_tensor(
            names.get(base) or data_name(model, base), base.dtype, (None, *base.type.shape[1:])
        )
        for read, base, _ in reads
    }
    params = graph_replace(params, copies, strict=False)
    return params, {copies[read]: (base, index) for read, base, index in reads}


def per_point_observation_rows(model, params):
    """Compute on the observed rows only, when the observations pick rows of the data.

    A parameter computed on every row of the data and then indexed by a constant
    (``mu[mask]``, ``mu[rows]``) equals the parameter computed on the picked rows
    (rows do not interact: locality, checked when compiling). Each data container
    inside becomes a per-point input named like it, holding the picked rows, and
    numeric constants with a row per data row are picked too. Returns the new
    parameters and ``{input: (container, rows)}``.
    """
    reads = observation_rows(model, params)
    if not reads or len({tuple(rows) for _, _, rows in reads}) > 1:
        return params, {}  # several different selections: left as they are
    rows = reads[0][2]
    copies = {}
    replacements = {}
    for read, expression, _ in reads:
        inner = {}
        n_rows = int(data_value(expression.shape[0]))  # the data rows picked from
        for container in data_containers(model, [expression]):
            value = container.get_value()
            if not (np.ndim(value) and len(value) == n_rows):
                continue  # group level: read through an index, or held
            if container not in copies:
                shape = (None, *container.type.shape[1:])
                copies[container] = symbolic_tensor(container.name, container.dtype, shape)
            inner[container] = copies[container]
        for const in graph_inputs([expression]):
            numeric = isinstance(const, Constant) and getattr(const.type, "ndim", 0)
            if numeric and const.data.shape[0] == n_rows:
                inner[const] = pt.constant(const.data[rows])
        replacements[read] = graph_replace(expression, inner, strict=False)
    params = replace_rebuilding(params, replacements, keep=model.free_RVs)
    return params, {copy: (container, rows) for container, copy in copies.items()}


def group_level_reads(model, outputs, indices=()):
    """Reads ``u[idx]`` of group-level data ``u`` through an integer container ``idx``.

    ``u`` is a float container or NumPy array, or one re-indexed by integer
    data (a state predictor seen per county, ``u_state[state_of_county]``).
    ``indices`` are
    further variables that may serve as ``idx`` (per-point copies of integer
    containers). Returns ``(read, u, idx)`` triples, ``read`` being the indexing
    expression: a group-level predictor seen from each point (e.g. county
    uranium per household).
    """
    index_variables = set(model.data_vars) | set(indices)
    return [
        (read, base, index)
        for read, base, index in first_axis_reads(outputs)
        if index in index_variables
        and is_float(base)
        and not is_float(index)
        and _is_group_data(model, base)
    ]


def _is_group_data(model, var):
    """Whether ``var`` is a float container or NumPy array, or one re-indexed by integer data.

    E.g. ``u_state[state_of_county]``: the state predictor of each county.
    """
    if var in model.data_vars:
        return is_float(var)
    if isinstance(var, Constant):
        return _is_group_array(var)
    node = var.owner
    if node is None or not isinstance(node.op, AdvancedSubtensor) or len(node.inputs) != 2:
        return False
    base, index = node.inputs
    roots = [v for v in ancestors([index]) if v.owner is None]
    return (
        indexes_first_axis(node)
        and not is_float(index)
        and all(v in model.data_vars or isinstance(v, Constant) for v in roots)
        and _is_group_data(model, base)
    )


def _is_group_array(constant):
    """Whether a NumPy constant is a group-level predictor: one float per group, varying.

    County uranium ``u`` in ``gamma_0 + gamma_1 * u``, as a float container
    would be. Not one: an array of one value (``np.ones(k)``), which explains no
    difference between groups, and an encoding of the levels (the 0/1 dummy or
    contrast columns a formula reads through the group index, ``C[cat]``),
    which is the categorical input itself.
    """
    values = constant.data
    return (
        values.dtype.kind == "f"
        and values.ndim == 1
        and values.shape[0] > 1
        and bool(np.any(values != values[:1]))
        and not np.isin(values, (-1.0, 0.0, 1.0)).all()
    )


def _group_arrays(model, outputs):
    """The group-level NumPy arrays ``outputs`` are computed from, given the draws."""
    return [
        v
        for v in ancestors(outputs, blockers=model.free_RVs)
        if isinstance(v, Constant) and _is_group_array(v)
    ]


def data_name(model, var):
    """A data expression's name: its own, or that of the first float container in it."""
    if var.name:
        return var.name
    upstream = set(ancestors([var]))
    return next(c.name for c in model.data_vars if c in upstream and is_float(c))


#: Ops that pass their one input through unchanged (pm.Deterministic is a ViewOp).
_TRANSPARENT = (ViewOp, SpecifyShape)


def push_indexing_down(model, outputs, indices=()):
    """Rewrite ``f(a, u)[idx]`` as ``f(a[idx], u[idx])`` for element-wise ``f``.

    A group-level expression of data and parameters indexed per point (the
    county intercept ``(g0 + g1 * u)[county]``, possibly through a
    ``pm.Deterministic``) becomes an expression of per-point reads ``u[county]``,
    which `group_level_reads` finds: each point's group-level predictor. The two
    forms are equal (indexing commutes with element-wise operations).
    """
    index_variables = {v for v in model.data_vars if not is_float(v)} | set(indices)
    replacements = {
        read: _indexed(base, index)
        for read, base, index in first_axis_reads(outputs)
        if index in index_variables
        and not _is_group_data(model, base)
        and (
            any(is_float(c) for c in data_containers(model, [base]))
            or _group_arrays(model, [base])
        )
    }
    if not replacements:
        return outputs
    return replace_rebuilding(outputs, replacements, keep=model.free_RVs)


def _is_matrix_product(node):
    """Whether ``node`` is ``U @ B`` with a matrix ``U`` (Dot, or matmul without batch)."""
    op = node.op.core_op if isinstance(node.op, Blockwise) else node.op
    return isinstance(op, Dot) and node.inputs[0].type.ndim == 2


def _indexed(expr, index):
    """``expr[index]`` with the indexing moved through element-wise operations.

    Also through ``pm.Deterministic``, transpositions that keep the first axis,
    and matrix products ``U @ b`` (whose rows are ``U``'s).
    """
    owner = expr.owner
    if owner is not None and isinstance(owner.op, _TRANSPARENT):
        return _indexed(owner.inputs[0], index)
    if owner is not None and isinstance(owner.op, DimShuffle) and owner.op.new_order[:1] == (0,):
        return owner.op(_indexed(owner.inputs[0], index))  # first axis stays first
    if owner is not None and _is_matrix_product(owner):
        return owner.op(_indexed(owner.inputs[0], index), owner.inputs[1])  # rows of U @ b
    if owner is None or not isinstance(owner.op, Elemwise) or len(owner.outputs) > 1:
        return expr[index]
    inputs = [
        value
        if value.type.ndim < expr.type.ndim or value.type.broadcastable[0]
        else _indexed(value, index)  # along the group axis: index it too
        for value in owner.inputs
    ]
    return owner.op(*inputs)


def observation_rows(model, outputs):
    """Reads ``e[rows]`` of an expression of the data through a fixed 1-D index.

    A boolean mask or an integer array that picks, along the first axis, the rows
    that have observations (``mu[mask]`` with ``observed=y[mask]``): a constant,
    or a boolean mask computed from data containers (``eta[~censored]`` with a
    bool container ``censored``), read at its current value. (An integer
    container is a group index, ``a[county_idx]``, not a selection of rows.)
    Returns ``(read, e, rows)`` triples, ``rows`` the picked row numbers.
    """
    containers = set(model.data_vars)
    reads = []
    for read, expression, index in first_axis_reads(outputs):
        if index.ndim != 1:
            continue
        if not (isinstance(index, Constant) or _is_data_mask(index, containers)):
            continue
        if any(var in containers for var in ancestors([expression])):
            data = np.asarray(data_value(index))
            rows = np.flatnonzero(data) if data.dtype == bool else data.astype(int)
            reads.append((read, expression, rows))
    return reads


def _is_data_mask(index, containers):
    """Whether an index is a boolean mask computed from containers and constants only."""
    return index.dtype == "bool" and all(
        isinstance(root, Constant) or root in containers for root in graph_inputs([index])
    )

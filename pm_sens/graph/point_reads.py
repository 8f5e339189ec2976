"""What each point reads from the data besides its own row of the inputs.

A group-level predictor read through an index (``u[county_idx]``) gets a copy
per point, and observations that pick rows of the data (``mu[mask]``) are
computed on those rows only.
"""

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Constant
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import graph_inputs

from pm_sens.graph.model_queries import (
    data_containers,
    data_name,
    data_value,
    group_level_reads,
    observation_rows,
    push_indexing_down,
    replace_rebuilding,
    symbolic_tensor,
)


def per_point_group_inputs(model, params, indices=()):
    """Give each point its own copy of group-level predictors read as ``u[idx]``.

    Each read becomes a per-point symbolic input named like the container, so
    its derivative at point i is with respect to the value its group contributes
    to that point. Returns the new parameters and ``{input: (u, idx)}``.
    """
    params = push_indexing_down(model, params, indices)
    reads = group_level_reads(model, params, indices)
    if not reads:
        return params, {}
    copies = {
        read: symbolic_tensor(data_name(model, base), base.dtype, (None, *base.type.shape[1:]))
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

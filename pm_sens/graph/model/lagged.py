"""A series read in lagged slices: ``x[1:]`` beside ``x[:-1]``.

A regression with lags or AR(1) errors is often written on a container of
N + k rows for N observations (``observed=y[k:]``): ``x[k:]`` is each
observation's own value and ``x[k-l:-l]`` its lag l. The last N rows of the
container belong to the observations and are the points; its first k rows are
the pre-sample values the first lags read, held at their data values. In a
copy of the graph the container becomes ``concatenate([held first k rows,
x_points])``, so that each slice is a shifted copy of the points' series: a
window of rows `pm_sens.graph.model.dependence` finds, measured on the joint
predictive (docs: how_to/time_series.md, "Series: lags and adstock").
"""

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.traversal import apply_ancestors
from pytensor.tensor.subtensor import Subtensor

from pm_sens.graph.compile.nodes import is_float
from pm_sens.graph.model.queries import (
    data_containers,
    data_value,
    replace_rebuilding,
    symbolic_tensor,
)


def lagged_series(model, params, n_rows):
    """Containers read only in slices along rows, with more rows than observations.

    Returns the new parameters and ``{symbol: the container's last n_rows
    rows}``: each such container (of n_rows + k rows, k ≤ n_rows) is replaced
    by its first k rows held and a symbol of n_rows rows, named as it, taken
    as an input.
    """
    if not n_rows:
        return params, {}
    replacements, inputs = {}, {}
    for container in data_containers(model, params, given_draws=True):
        value = np.asarray(data_value(container))
        lead = value.shape[0] - n_rows if value.ndim else 0
        if not (is_float(container) and 0 < lead <= n_rows):
            continue
        if not _read_in_row_slices(container, params, model):
            continue
        rows = symbolic_tensor(container.name, container.dtype, (None, *value.shape[1:]))
        rows.tag.held_rows = lead  # for messages about points of the whole series
        replacements[container] = pt.concatenate([pt.constant(value[:lead]), rows])
        inputs[rows] = value[lead:]
    if not replacements:
        return params, {}
    return replace_rebuilding(params, replacements, keep=model.free_RVs), inputs


def _read_in_row_slices(container, params, model):
    """Whether every read of ``container`` in ``params`` is a slice of its rows."""
    reads = [
        node
        for node in apply_ancestors(params, blockers=model.free_RVs)
        if container in node.inputs
    ]
    return bool(reads) and all(
        isinstance(node.op, Subtensor)
        and node.inputs[0] is container
        and isinstance(node.op.idx_list[0], slice)
        for node in reads
    )

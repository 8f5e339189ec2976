"""A container stored features × observations: ``dot(beta, F)`` with F of shape (K, N).

Notebooks often keep derived features (Fourier terms of a season, basis
functions) as one row per feature, and read them as ``pm.math.dot(beta_f, F)``.
Their observations run along the last axis, so each of the K rows is an input
with one value per observation. In a copy of the graph the container becomes
``rows.T``, with ``rows`` an (N, K) symbol named as the container: the points
are its rows, as for any 2-D input, and its columns are the features.
"""

import numpy as np

from pm_sens.graph.compile.nodes import is_float
from pm_sens.graph.model.queries import (
    data_containers,
    data_value,
    replace_rebuilding,
    symbolic_tensor,
)


def transposed_containers(model, params, n_rows):
    """Float 2-D containers whose last axis, not their first, runs over the observations.

    Returns the new parameters, ``{symbol: the container's values transposed}``
    and ``{symbol: labels of the features}`` (the coordinate of the container's
    first dim, where it has dims).
    """
    if not n_rows or n_rows < 2:
        return params, {}, {}
    replacements, inputs, labels = {}, {}, {}
    for container in data_containers(model, params, given_draws=True):
        value = np.asarray(data_value(container))
        if not (is_float(container) and value.ndim == 2):
            continue
        if value.shape[1] != n_rows or value.shape[0] == n_rows:
            continue
        rows = symbolic_tensor(container.name, container.dtype, (None, value.shape[0]))
        replacements[container] = rows.T
        inputs[rows] = np.ascontiguousarray(value.T)
        dims = model.named_vars_to_dims.get(container.name) or ()
        coords = model.coords.get(dims[0]) if dims else None
        if coords is not None and len(coords) == value.shape[0]:
            labels[rows] = list(coords)
    if not replacements:
        return params, {}, {}
    return replace_rebuilding(params, replacements, keep=model.free_RVs), inputs, labels

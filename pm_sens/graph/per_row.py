"""What belongs to an observation's row and travels with it to every point.

A NumPy constant with one value per observation (a censoring bound) and a
random variable with one value per observation (an observation-level effect)
are read at each point's own row: as symbols held at each point's value,
never moved as inputs, following the points into permuted copies, grids and
finite-difference steps.
"""

import numpy as np
from pytensor.graph.basic import Constant
from pytensor.graph.traversal import ancestors, apply_ancestors
from pytensor.tensor.elemwise import Elemwise

from pm_sens.graph.model_queries import replace_rebuilding, symbolic_tensor


def per_row_constants(model, params, n_rows):
    """Give NumPy constants with one row per observation a symbolic row per point.

    Such a constant (a censoring bound per row, a column of zero logits built
    with ``np.zeros((n, 1))``) belongs to its observation as a ``pm.Data``
    container would: each becomes a symbolic tensor that follows the points and
    is held at each point's value, never moved as an input. Constants in the
    priors of random variables (pymc-bart's Y) stay: their draws are given.
    Returns the new parameters and ``{symbol: value}``.
    """
    if not n_rows or n_rows < 2:
        return params, {}
    constants = [
        c
        for c in dict.fromkeys(ancestors(params, blockers=model.free_RVs))
        if isinstance(c, Constant) and np.ndim(c.data) and c.data.shape[0] == n_rows
    ]
    # one symbol per array: PyMC may hold the same values as several constants
    by_values, symbols = {}, {}
    for c in constants:
        key = (c.dtype, c.data.shape, c.data.tobytes())
        if key not in by_values:
            name = c.name or f"row_constant_{len(by_values)}"
            by_values[key] = symbolic_tensor(name, c.dtype, (None, *c.type.shape[1:]))
        symbols[c] = by_values[key]
    if not symbols:
        return params, {}
    params = replace_rebuilding(params, symbols, keep=model.free_RVs)
    return params, {symbol: c.data for c, symbol in symbols.items()}


#: the per-point index into random variables with one value per observation
OBSERVATION_ROW = "observation_row"


def per_row_variables(model, params, n_rows):
    """Read random variables with one value per observation at each point's row.

    An observation-level effect ``eps`` (dims of the observations, added
    elementwise) belongs to its row as a per-row constant does: it becomes
    ``eps[observation_row]``, with ``observation_row`` held at each point's
    value (0..N−1 for the model's own points). Variables read through an index
    (group effects) or a product are left alone. Returns the new parameters
    and ``{symbol: value}``.
    """
    if not n_rows or n_rows < 2:
        return params, {}
    uses = {}
    for node in apply_ancestors(params):
        for i in node.inputs:
            if i in model.free_RVs and i.ndim >= 1:
                uses.setdefault(i, []).append(node)
    elementwise = [
        rv for rv, nodes in uses.items() if all(isinstance(n.op, Elemwise) for n in nodes)
    ]
    if not elementwise:
        return params, {}
    shapes = model.eval_rv_shapes()
    per_row = [rv for rv in elementwise if shapes[rv.name][:1] == (n_rows,)]
    if not per_row:
        return params, {}
    row = symbolic_tensor(OBSERVATION_ROW, "int64", (None,))
    params = replace_rebuilding(params, {rv: rv[row] for rv in per_row}, keep=model.free_RVs)
    return params, {row: np.arange(n_rows)}

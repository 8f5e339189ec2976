"""Wide observation tables: each cell of the table a point, as in long format.

The survival notebook's piecewise-constant hazard model observes a patients ×
intervals table (exposure per cell). Given the parameters, its cells are
independent, so the model is the long-format model with one point per cell:
the cell's row of every per-row array, its own value of every per-cell array,
and its column as a categorical input (the interval). pm_sens builds that view
in a copy of the graph: every per-row array becomes a per-cell symbol holding
its row's values, every per-cell array a per-cell input written into the
cell's own column of its held table, and the parameters are read at each
cell's column. The table's other columns are computed and not used (T times
the work of the long model, for T columns).
"""

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Constant

from pm_sens.graph.model.per_row import is_flag, numpy_input_names
from pm_sens.graph.model.queries import (
    data_arrays,
    data_value,
    replace_rebuilding,
    symbolic_tensor,
)


def row_coordinate(model, rv):
    """The name of the cells' row index: the table's first dim, else ``<name>_row``."""
    dims = model.named_vars_to_dims.get(rv.name) or (None, None)
    return dims[0] or f"{rv.name}_row"


def cells_of_wide_table(model, params, rv):
    """The parameters per cell of a 2-D observed table, with the per-cell data.

    Parameters
    ----------
    model : pymc.Model
        The model (its free random variables end the walk).
    params : list of TensorVariable
        The likelihood's parameters, broadcasting to the table's shape (R, T).
    rv : TensorVariable
        The observed variable.

    Returns
    -------
    params : list of TensorVariable
        One value per cell, cells in row-major order (R·T,).
    inputs : dict
        ``{symbol: values per cell}`` of the per-row and per-cell float arrays
        and flags (`pm_sens.graph.model.per_row.is_flag`), and of the column index
        (named after the table's second dim).
    held : dict
        ``{symbol: values per cell}`` held at each cell's values: integer
        per-row arrays, the per-cell arrays' tables and each cell's row
        (named after the table's first dim).
    """
    observed = np.asarray(data_value(model.rvs_to_values[rv]))
    n_rows, n_columns = observed.shape
    dims = model.named_vars_to_dims.get(rv.name) or (None, None)
    column = symbolic_tensor(dims[1] or f"{rv.name}_column", "int64", (None,))
    own_column = pt.eq(column[:, None], np.arange(n_columns))
    # each cell's row, held: a coordinate of the cells (summary(by=) per row)
    row = symbolic_tensor(row_coordinate(model, rv), "int64", (None,))
    inputs, held, replacements = {}, {row: np.repeat(np.arange(n_rows), n_columns)}, {}
    _refuse_transposed(model, params, (n_rows, n_columns), rv.name)
    arrays = _per_row_arrays(model, params, n_rows)
    names = numpy_input_names(model, params, [a for a in arrays if isinstance(a, Constant)])
    for array, value in arrays.items():
        name = names.get(array) or array.name
        if value.shape == (n_rows, n_columns):
            cell = symbolic_tensor(name, value.dtype, (None,))
            table = symbolic_tensor(f"{name}_table", value.dtype, (None, n_columns))
            replacements[array] = pt.where(own_column, cell[:, None], table)
            (inputs if value.dtype.kind == "f" or is_flag(value) else held)[cell] = value.ravel()
            held[table] = np.repeat(value, n_columns, axis=0)
        else:
            per_cell = symbolic_tensor(name, value.dtype, (None, *value.shape[1:]))
            replacements[array] = per_cell
            varies = np.any(np.ptp(value, axis=0) > 0)
            target = inputs if (value.dtype.kind == "f" or is_flag(value)) and varies else held
            target[per_cell] = np.repeat(value, n_columns, axis=0)
    inputs[column] = np.tile(np.arange(n_columns), n_rows)  # the interval: a categorical input
    params = replace_rebuilding(params, replacements, keep=model.free_RVs)
    cells = pt.arange(column.shape[0])
    params = [pt.broadcast_to(p, (column.shape[0], n_columns))[cells, column] for p in params]
    return params, inputs, held


def _per_row_arrays(model, params, n_rows):
    """``{array: value}`` of the containers and NumPy arrays with one row per table row."""
    arrays = data_arrays(model, params).items()
    return {array: value for array, value in arrays if np.ndim(value) and len(value) == n_rows}


def _refuse_transposed(model, params, shape, name):
    """An array laid out as the observed table transposed (columns × rows)."""
    n_rows, n_columns = shape
    for array, value in data_arrays(model, params).items():
        if n_rows != n_columns and np.shape(value) == (n_columns, n_rows):
            raise ValueError(
                f"the data {array.name or 'array'!r} {np.shape(value)} is laid out as the "
                f"observed table {name!r} {shape} transposed; pm_sens reads a wide table's "
                "per-cell arrays in the table's layout (rows × columns): build the model "
                "with the array transposed once, outside the likelihood"
            )

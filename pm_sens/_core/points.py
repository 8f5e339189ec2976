"""Where to evaluate: the points, their values for every data variable, and their labels."""

from dataclasses import dataclass

import numpy as np
import xarray as xr

from pm_sens._core.arguments import check_finite_array, is_lazy, native_array
from pm_sens.graph.compile.nodes import is_float
from pm_sens.graph.model.queries import data_value


@dataclass
class PointSet:
    """Values of every data variable at the points, with result labels."""

    values: dict  # variable -> ndarray, rows = points for per-point variables
    per_point: list  # the variables with one row per point
    n_points: int
    point_dim: str
    point_coords: np.ndarray
    features: list  # feature labels, in the order of the derivative columns
    bounds: frozenset = frozenset()  # names of held per-row values that may be ±inf

    @property
    def lazy(self) -> bool:
        """Whether some per-point values are dask-backed (read block by block)."""
        return any(is_lazy(self.values[v]) for v in self.per_point)

    def block(self, start, stop, per_point_values):
        """Points ``start:stop``, given the per-point values of those rows (NumPy).

        Lazily given values are checked here, when their rows are read.
        """
        values = dict(self.values)
        for var, value in zip(self.per_point, per_point_values, strict=True):
            name = f"points[{var.name!r}]"
            held = var.name in self.bounds
            values[var] = native_array(check_finite_array(name, value, bounds=held))
        coords = self.point_coords[start:stop]
        return PointSet(
            values,
            self.per_point,
            stop - start,
            self.point_dim,
            coords,
            self.features,
            self.bounds,
        )

    def computed(self):
        """The same points with every lazy value read into memory."""
        rows = [np.asarray(self.values[v]) for v in self.per_point]
        return self.block(0, self.n_points, rows)


def feature_matrix(values, inputs, n_points=0):
    """The differentiated inputs as one (N, D) matrix, columns in feature order.

    With no inputs, an (n_points, 0) matrix.
    """
    if not inputs:
        return np.empty((n_points, 0))
    return np.concatenate([np.reshape(values[v], (np.shape(values[v])[0], -1)) for v in inputs], 1)


def values_at(points, inputs, rows):
    """Data values for stacked copies of the points whose features are ``rows``.

    ``rows`` is (R·N, D): R blocks of the N points with new feature values. The
    inputs take their columns from it; other per-point variables are tiled R
    times; variables without a row per point keep their values.
    """
    copies = len(rows) // points.n_points
    values = {}
    for var, value in points.values.items():
        if var in points.per_point and var not in inputs:
            values[var] = np.concatenate([value] * copies)
        else:
            values[var] = value
    start = 0
    for var in inputs:
        value = points.values[var]
        width = 1 if np.ndim(value) == 1 else np.shape(value)[1]
        block = rows[:, start : start + width]
        block = block[:, 0] if np.ndim(value) == 1 else block
        values[var] = block.astype(value.dtype, copy=False)
        start += width
    return values


def distinct_rows(points, values):
    """The rows of ``values`` that differ in some per-point variable, and where each row is.

    Rows equal in every per-point variable have the same predictive in a model
    whose rows depend on their own inputs only: a partial dependence of a
    model whose one input is the feature moved has one distinct row per grid
    value. Returns the values at the distinct rows and each row's index among
    them (R,), or None when more than half the rows differ (nothing to gain).
    """
    if any(is_lazy(values[v]) for v in points.per_point):
        return None
    columns = [
        np.reshape(values[v], (len(values[v]), -1)).astype(float, copy=False)
        for v in points.per_point
    ]
    found = _equal_rows(columns[0] if len(columns) == 1 else np.concatenate(columns, 1))
    if found is None:
        return None
    first, inverse = found
    distinct = {v: values[v][first] if v in points.per_point else values[v] for v in values}
    return distinct, inverse


def _equal_rows(table):
    """A row of each set of equal rows and each row's set, or None if most rows differ.

    Rows are grouped by a 64-bit hash of their bits (a sum of the bits times
    odd multipliers, modulo 2**64): sorting R integers is many times faster
    than sorting R rows of many columns. Each row's bits are then checked
    equal to its group's first; if two rows that differ share a hash, the rows
    are grouped by sorting their bits instead.
    """
    bits = np.ascontiguousarray(table).view(np.uint64)
    multipliers = np.random.default_rng(0).integers(0, 2**63, table.shape[1], dtype=np.uint64)
    hashes = bits @ (2 * multipliers + 1)
    order = np.argsort(hashes, kind="stable")
    ordered = hashes[order]
    starts = np.r_[True, ordered[1:] != ordered[:-1]]
    if np.count_nonzero(starts) > len(table) // 2:
        return None
    inverse = np.empty(len(table), dtype=np.intp)
    inverse[order] = np.cumsum(starts) - 1
    first = order[starts]
    if np.array_equal(bits, bits[first][inverse]):
        return first, inverse
    keys = np.ascontiguousarray(table).view(np.dtype((np.void, 8 * table.shape[1])))[:, 0]
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return None if len(first) > len(keys) // 2 else (first, inverse)


def current_value(var, predictive):
    """A data container's value, or the predictive's default for a symbolic input."""
    if hasattr(var, "get_value"):
        return var.get_value()
    if var in predictive.group_inputs:
        # a container read through an index variable, or the rows picked by a constant
        base, index = predictive.group_inputs[var]
        rows = index if isinstance(index, np.ndarray) else current_value(index, predictive)
        # in the copy's dtype: an integer container used in arithmetic has a float copy
        return data_value(base)[rows].astype(var.dtype, copy=False)
    return predictive.defaults.get(var)


def constant_columns(predictive, inputs, points):
    """Whether each feature column holds one value in every row of data and points.

    Such a column (an intercept column of a design matrix) cannot explain any
    variation between points, whatever its derivative. A container holding a
    placeholder (e.g. zeros until the points are given) is not constant when
    the points vary.
    """
    flags = []
    for var in inputs:
        value = current_value(var, predictive)
        value = np.reshape(value, (np.shape(value)[0], -1))
        if len(value) < 2:
            flags.extend([False] * value.shape[1])
            continue
        constant = np.ptp(value, axis=0) == 0
        at_points = points.values.get(var)
        if at_points is not None:
            at_points = at_points.reshape(at_points.shape[0], -1)
            low, high = (np.asarray(f(at_points, axis=0)) for f in (np.min, np.max))
            constant &= (low == value[0]) & (high == value[0])
        flags.extend(constant)
    return np.asarray(flags, dtype=bool)


def feature_columns(points, inputs):
    """``(input, column)`` of each feature column, column None for a 1-D input."""
    owners = []
    for var in inputs:
        value = points.values[var]
        owners += (
            [(var, None)] if np.ndim(value) == 1 else [(var, c) for c in range(value.shape[1])]
        )
    return owners


def _given_points(points, names, bounds=()):
    """Given arrays by name (``bounds``: names of held per-row values, ±inf allowed)."""
    if points is None:
        return {}, {}
    if isinstance(points, xr.Dataset):
        arrays = {k: points[k] for k in points.data_vars}
    elif isinstance(points, dict):
        arrays = dict(points)
    else:
        raise TypeError(
            f"points={type(points).__name__} is not valid; give None, a dict "
            "{container_name: array} or an xarray.Dataset"
        )
    unknown = sorted(set(arrays) - set(names))
    if unknown:
        raise ValueError(
            f"points has unknown name(s) {unknown}; valid: data containers {sorted(names)}"
        )
    dataarrays = {k: v for k, v in arrays.items() if isinstance(v, xr.DataArray)}
    checked = {
        k: check_finite_array(
            f"points[{k!r}]", v.data if isinstance(v, xr.DataArray) else v, bounds=k in bounds
        )
        for k, v in arrays.items()
    }
    return checked, dataarrays


def _check_whole_numbers(var, value):
    fractional = np.mod(value, 1) != 0
    if np.any(fractional):
        raise ValueError(
            f"points[{var.name!r}] holds the non-integer value {value[fractional][0].item()!r}; "
            f"{var.name!r} is an integer container ({var.dtype}): give whole numbers (its levels)"
        )


def _check_point_shape(name, value, current):
    if value.ndim != np.ndim(current) or value.shape[1:] != np.shape(current)[1:]:
        raise ValueError(
            f"points[{name!r}] has shape {value.shape}; expected (n_points, "
            f"{', '.join(map(str, np.shape(current)[1:]))}) like the container's "
            f"{np.shape(current)}".replace(", )", ")")
        )


def _feature_labels(model, predictive, inputs, values, dataarrays):
    if predictive.feature_names is not None and len(inputs) == 1:
        width = 1 if np.ndim(values[inputs[0]]) == 1 else np.shape(values[inputs[0]])[1]
        if len(predictive.feature_names) != width:
            raise ValueError(
                f"feature_names={predictive.feature_names!r} has {len(predictive.feature_names)} "
                f"name(s) but the input {inputs[0].name!r} has {width} column(s)"
            )
        return list(predictive.feature_names)
    labels = []
    for var in inputs:
        if np.ndim(values[var]) == 1:
            labels.append([var.name])
            continue
        dims = model.named_vars_to_dims.get(var.name) or ()
        column_dim = dims[1] if len(dims) > 1 else None
        columns = np.arange(np.shape(values[var])[1])
        if var.name in dataarrays and dataarrays[var.name].ndim == 2:
            da = dataarrays[var.name]
            if da.dims[1] in da.coords:
                columns = da.coords[da.dims[1]].values
        elif column_dim is not None and model.coords.get(column_dim) is not None:
            columns = np.asarray(model.coords[column_dim])
        elif var in predictive.column_labels:
            columns = np.asarray(predictive.column_labels[var])
        prefix = f"{var.name}[{{}}]" if len(inputs) > 1 else "{}"
        labels.append([prefix.format(c) for c in columns])
    flat = [label for group in labels for label in group]
    if len(set(flat)) != len(flat):
        flat = [
            f"{var.name}[{label}]"
            for var, group in zip(inputs, labels, strict=True)
            for label in group
        ]
    return flat


def _point_labels(model, predictive, inputs, n_points, given, dataarrays):
    if predictive.observation_count is not None:  # a wide table's cells
        return "cell", np.arange(n_points)
    first = inputs[0].name
    if first in dataarrays:
        da = dataarrays[first]
        coords = da.coords[da.dims[0]].values if da.dims[0] in da.coords else np.arange(n_points)
        return da.dims[0], coords
    # the rows' dim of the first input, else of the observed variable; a container
    # may leave it unnamed (dims=(None, "predictor"))
    named = [
        (model.named_vars_to_dims.get(name) or (None,))[0]
        for name in (first, predictive.var_name or "")
    ]
    dim = next((d for d in named if d is not None), None)
    coords = model.coords.get(dim) if dim else None
    dim = dim or "point"
    if given or coords is None or len(coords) != n_points:
        coords = np.arange(n_points)
    return dim, np.asarray(coords)


def _take_rows(table, index):
    """``table[index]``, lazily when ``index`` is dask-backed."""
    if not is_lazy(index):
        return table[index]
    return index.map_blocks(
        lambda rows: table[rows],
        dtype=table.dtype,
        chunks=(*index.chunks, *((size,) for size in table.shape[1:])),
        new_axis=list(range(index.ndim, index.ndim + table.ndim - 1)) or None,
    )


def resolve_points(model, predictive, inputs, variables, n_default, points):
    """Values of all data variables at the requested points, checked, with labels."""
    names = {v.name: v for v in variables}
    bounds = {v.name for v in predictive.row_constants}
    given, dataarrays = _given_points(points, names, bounds)

    def rows_per_point(var):
        if var in inputs:
            return True
        current = current_value(var, predictive)
        return (
            predictive.data_per_point
            and np.ndim(current) > 0
            and np.shape(current)[0] == n_default
        )

    per_point = [v for v in variables if rows_per_point(v)]
    values, lengths = {}, {}
    for var in variables:
        current = current_value(var, predictive)
        if var.name in given:
            value = given[var.name]
            if current is not None:
                _check_point_shape(var.name, value, current)
                if not (is_float(var) or is_lazy(value)):
                    _check_whole_numbers(var, np.asarray(value))
            values[var] = value.astype(var.dtype)
            if not (is_float(var) or is_lazy(value)):
                changed = values[var] != value  # beyond the container's integer type
                if np.any(changed):
                    raise ValueError(
                        f"points[{var.name!r}] holds the level {value[changed][0].item()!r}, "
                        f"which does not fit the container's dtype {var.dtype}; valid: "
                        f"{np.iinfo(var.dtype).min}..{np.iinfo(var.dtype).max}"
                    )
            if value.ndim:
                lengths[var.name] = value.shape[0]
        elif current is None:
            raise ValueError(f"points must give {var.name!r}: it has no current value")
        else:
            values[var] = np.asarray(current)
            if var in inputs:  # as given points are: the graph relies on finite inputs
                check_finite_array(f"the model's data {var.name!r}", values[var])
    for var, (base, index) in predictive.group_inputs.items():
        if var.name not in given and not isinstance(index, np.ndarray) and index in values:
            # the group value each point receives, through the points' own index
            values[var] = _take_rows(data_value(base), values[index])
            lengths.pop(var.name, None)
    _check_lagged_lengths(predictive, lengths, n_default)
    n_points = {*lengths.values()}
    if len(n_points) > 1:
        raise ValueError(f"points have different numbers of rows: {lengths}; they must agree")
    n_points = n_points.pop() if n_points else n_default
    if n_points == 0:
        raise ValueError(f"points have 0 rows ({sorted(given)}); give at least one point")
    if n_points != n_default:
        derived = {
            v
            for v, (_, index) in predictive.group_inputs.items()
            if getattr(index, "name", None) in given
        }
        stale = [v.name for v in per_point if v.name not in given and v not in derived]
        if stale:
            arrays = [*predictive.row_constants, *predictive.numpy_inputs]
            constants = [v.name for v in arrays if v.name in stale]
            raise ValueError(
                f"points give {n_points} rows but {stale} still hold(s) {n_default} "
                "(one per original observation); pass new values for them in points too"
                + (
                    f" ({constants} are NumPy arrays with one value per observation in the "
                    "model, by the names pm_sens gives them; a pm.Data container gives "
                    "them a name of yours)"
                    if constants
                    else ""
                )
            )
    labelled = inputs or per_point  # categorical inputs only: label points by them
    dim, coords = _point_labels(model, predictive, labelled, n_points, bool(given), dataarrays)
    features = _feature_labels(model, predictive, inputs, values, dataarrays)
    return PointSet(values, per_point, n_points, dim, coords, features, frozenset(bounds))


def _check_lagged_lengths(predictive, lengths, n_default):
    """A series read in lagged slices given whole: its points are its last rows."""
    for var in predictive.inputs:
        held = getattr(var.tag, "held_rows", 0)
        if held and lengths.get(var.name) == n_default + held:
            raise ValueError(
                f"points[{var.name!r}] has {lengths[var.name]} rows, as many as the "
                f"container; the model reads {var.name!r} in lagged slices, so its points "
                f"are its last {n_default} rows (one per observation) and its first {held} "
                f"are held as the lags' pre-sample values: give points={{{var.name!r}: "
                f"values[{held}:]}}"
            )

"""A result's layout: dims, feature columns, and the DataTree group.

Categorical inputs' columns are appended after the continuous ones; a constant
column is NaN, with the reason in the attrs.
"""

import numpy as np
import xarray as xr

from pm_sens._core.categorical_inputs import (
    LEVEL_METHODS,
    contrast_name,
    rate_pairs_name,
    shown_columns,
)
from pm_sens._core.points import constant_columns, feature_matrix
from pm_sens._core.table_rows import with_row_joints
from pm_sens._version import __version__
from pm_sens.graph.model.dependence import Dependence


def result_dims(name, mode, point_dim):
    """A result variable's dims; ``point_dim`` None: the draws' means over the points."""
    sample = [] if mode == "moment" else ["chain", "draw"]
    points = [] if name in ("aed", "aeh") or point_dim is None else [point_dim]
    pairs = ["feature_bis"] if name in ("rsens2", "eah", "aeh", "mean_hess") else []
    return [*sample, *points, "feature", *pairs]


def feature_kinds(ctx):
    """What each feature's values are: ``"rate"``, ``"constant"`` or ``"level"``.

    ``"rate"``: per unit of a continuous input; ``"constant"``: a column that is
    the same in every row of the data and of the points; ``"level"``: a
    categorical input.
    """
    constant = constant_columns(ctx.predictive, ctx.inputs, ctx.points)[shown_columns(ctx)]
    return [*np.where(constant, "constant", "rate"), *(["level"] * len(ctx.levels))]


def empty_local(name, mode, ctx):
    """A local result with no feature columns (every input is categorical)."""
    sizes = {"chain": len(ctx.draws.chain), "draw": len(ctx.draws.draw)}
    sizes.update(point=ctx.points.n_points, feature=0, feature_bis=0)
    return np.empty([sizes[d] for d in result_dims(name, mode, "point")])


def with_level_columns(results, levels, ctx, mode, kinds):
    """Results with one column per categorical input appended, constant columns NaN.

    A categorical input's column holds its level sensitivity for the methods
    that have one (`LEVEL_METHODS`), NaN for the others; in ``rsens2`` its pairs
    (`pm_sens.local.level_pair_passes`), NaN on its diagonal (no curvature of a level).
    """
    shown = shown_columns(ctx)
    constant = np.asarray(kinds[: shown.sum()]) == "constant"
    out = {}
    for name, value in results.items():
        dims = result_dims(name, mode, "point")
        axes = [dims.index(d) for d in ("feature", "feature_bis") if d in dims]
        value = _shown(value, shown, constant, axes)
        if name == "rsens2" and ctx.levels:
            value = _with_level_pairs(value, levels, ctx, shown, constant)
        else:
            for level in ctx.levels:
                column = levels[f"level_{level.label}"] if name in LEVEL_METHODS else None
                value = _append_column(value, column, axes)
        out[name] = value
    return out


def _shown(value, shown, constant, axes):
    """``value``'s shown feature columns (along ``axes``), NaN in the constant ones."""
    if not shown.all():
        for axis in axes:
            value = np.compress(shown, value, axis=axis)
    if constant.any():  # the arrays are the measure's own: no copy needed
        value = np.asarray(value, dtype=float)
        np.putmask(value, np.broadcast_to(_along(constant, axes, value.ndim), value.shape), np.nan)
    return value


def _with_level_pairs(rsens2, levels, ctx, shown, constant):
    """R-sens2 (..., F, F) bordered by the categorical inputs' pairs, (..., F + L, F + L).

    Built by concatenation (the arrays may be dask arrays).
    """
    n_levels = len(ctx.levels)
    lead = rsens2.shape[:-2]
    with_rates = [
        _shown(levels[rate_pairs_name(level)], shown, constant, [-1])
        if rate_pairs_name(level) in levels
        else np.zeros((*lead, 0))
        for level in ctx.levels
    ]
    rates = np.stack(with_rates, -1)  # (..., F, L)
    nan, pairs = np.full(lead, np.nan), ctx.levels
    block = [
        [
            nan if j == k else levels[contrast_name(pairs[min(j, k)], pairs[max(j, k)])]
            for k in range(n_levels)
        ]
        for j in range(n_levels)
    ]
    block = np.stack([np.stack(row, -1) for row in block], -2)  # (..., L, L)
    if not rsens2.shape[-1]:  # no continuous input (dask cannot chunk empty pieces)
        return block
    top = np.concatenate([rsens2, rates], -1)
    bottom = np.concatenate([np.swapaxes(rates, -1, -2), block], -1)
    return np.concatenate([top, bottom], -2)


def _along(flags, axes, ndim):
    """``flags`` (D,) broadcast along each of ``axes`` of an ndim array, or-ed."""
    mask = np.zeros((1,) * ndim, dtype=bool)
    for axis in axes:
        shape = [1] * ndim
        shape[axis] = len(flags)
        mask = mask | np.reshape(flags, shape)
    return mask


def _append_column(value, column, axes):
    """One more feature (and feature_bis) column: ``column`` on the feature axis, else NaN."""
    first = axes[0]
    shape = list(value.shape)
    shape[first] = 1
    new = np.full(shape, np.nan) if column is None else np.expand_dims(column, first)
    value = np.concatenate([value, new], axis=first)
    if len(axes) == 2:
        shape = list(value.shape)
        shape[axes[1]] = 1
        value = np.concatenate([value, np.full(shape, np.nan)], axis=axes[1])
    return value


#: which predictive R-sens2's pairs describe, per mode, and what that brings
#: (docs: explanation/reading.md, "Interactions the model did not write")
PAIRS_FROM = {
    "moment": (
        "moment-matched predictive",
        "also the pairs that the posterior correlation of the parameters makes through "
        "the predictive variance, in an additive model too",
    ),
    "draw": (
        "per-draw predictives",
        "the pairs the model's expression makes (products, links); none in a model "
        "additive in the likelihood's parameters",
    ),
}


def _pairs_source(name, mode):
    """R-sens2's ``interactions_from`` and ``interactions_note`` attrs."""
    if name != "rsens2":
        return {}
    source, note = PAIRS_FROM[mode]
    return {"interactions_from": source, "interactions_note": note}


def _nan_reasons(name, kinds):
    """The variable's attrs: why some of its feature columns are NaN, if any are."""
    reasons = []
    if "constant" in kinds:
        reasons.append("features of kind 'constant' take one value at every point")
    if "level" in kinds and name == "rsens2":
        reasons.append(
            "a categorical input (feature_kind 'level') has no curvature, so its diagonal "
            "entry is NaN; its pairs are defined (documentation, "
            "'Hierarchical models and categorical inputs')"
        )
    elif "level" in kinds and name not in LEVEL_METHODS:
        pairs = " pairs" if name in ("eah", "aeh") else ""
        reasons.append(
            f"categorical inputs (feature_kind 'level') have no {name}{pairs}; their "
            "level sensitivity is in levels_<input>"
        )
    return {"nan": "; ".join(reasons)} if reasons else {}


#: what the result's ``degenerate`` variable holds
DEGENERATE = (
    "where the predictive is one value (a count law of mean 0, e.g. an exposure of 0): "
    "divergence rates have no value there, so every measure is NaN and summary and "
    "importance leave these points out (local values); the number of such points per "
    "draw (means over the points, which are over the others)"
)


def result_dataset(results, ctx, mode, attrs, kinds, levels=None, local=True):
    """Local measures as an xarray Dataset with the documented dims and coords.

    ``local`` False: ``results`` and ``levels`` are each draw's means over the
    points (`pm_sens.local.passes.point_means`), with no point dim.
    """
    points = ctx.points
    point_dim = points.point_dim if local else None
    n = points.n_points
    shown = shown_columns(ctx)
    features = [
        *np.asarray(points.features, dtype=object)[shown],
        *(level.label for level in ctx.levels),
    ]
    inputs = feature_matrix(points.values, ctx.inputs, n)[:, shown]
    own_levels = [level.own_values[:, None] for level in ctx.levels]
    coords = {
        **point_coordinates(ctx),
        "feature": features,
        "feature_kind": ("feature", kinds),
        # the inputs at the points, for plotting local values against them
        "input_value": ((points.point_dim, "feature"), np.concatenate([inputs, *own_levels], 1)),
    }
    # their sd over the points, for summary(scale="sd"), on every variable
    coords["input_sd"] = ("feature", coords["input_value"][1].std(0))
    if mode == "draw":
        coords.update(chain=ctx.draws.chain, draw=ctx.draws.draw)
    data = {
        name: (
            result_dims(name, mode, point_dim),
            v,
            {**_nan_reasons(name, kinds), **_pairs_source(name, mode)},
        )
        for name, v in results.items()
    }
    sample = [] if mode == "moment" else ["chain", "draw"]
    along = [point_dim] if local else []
    for level in ctx.levels:
        dim = f"{level.label}_level"
        coords[dim] = level.levels[np.flatnonzero(level.weights)]
        data[f"levels_{level.label}"] = ([*sample, *along, dim], levels[f"levels_{level.label}"])
    if "degenerate" in (levels or {}):
        data["degenerate"] = (
            [*sample, *along],
            levels["degenerate"],
            {"description": DEGENERATE},
        )
    if any("feature_bis" in dims for dims, *_ in data.values()):
        coords["feature_bis"] = features
    dataset = xr.Dataset(data, coords=coords, attrs=attrs)
    if ctx.predictive.table_row is None or not local:
        return dataset
    return with_row_joints(dataset, ctx)


def attach(idata, group, dataset, extend_inferencedata):
    """Add ``group`` to ``idata`` and return it, or a new DataTree with only it."""
    if not extend_inferencedata:
        return xr.DataTree.from_dict({group: dataset})
    idata[group] = xr.DataTree(dataset)
    return idata


def point_coordinates(ctx):
    """Coordinates for the result's point dim: its labels, and held per-point values.

    The values of held one-dimensional per-point containers (group indices,
    flags), for ``summary(by=)``.
    """
    dim = ctx.points.point_dim
    coords = {dim: ctx.points.point_coords}
    for var in ctx.points.per_point:
        value = ctx.points.values[var]
        if var not in ctx.inputs and np.ndim(value) == 1 and var.name != dim:
            coords[var.name] = (dim, value)
    return coords


def outcome_coordinates(ctx):
    """``{"outcome": labels}`` for a vector outcome per point, else empty."""
    labels = ctx.predictive.outcome_labels
    return {"outcome": labels} if labels else {}


def outcome_dims(ctx):
    """``["outcome"]`` for a vector outcome per point, else empty."""
    return list(outcome_coordinates(ctx))


def result_attrs(ctx):
    """Attributes every result group carries: what was explained, with which inputs and draws.

    ``inputs`` names the containers treated as continuous inputs (a rate per
    unit), ``categorical_inputs`` those compared level by level; containers in
    neither were held at their values. ``numpy_inputs``: the inputs that are
    NumPy arrays in the model, by the names pm_sens gave them;
    ``held_statistics``: statistics of the data inside the model (an input's
    mean and sd) held at their values on the model's data; ``raw_inputs``: the
    inputs that build the design columns named in ``design_columns``
    (`pm_sens.graph.model.design`); ``dependence``: whether the predictions at a
    point depend on its own inputs alone, or on a window of other rows' (a
    series: R-sens and KL are then those of the joint predictive).
    """
    return {
        "likelihood": ctx.predictive.family,
        "var_name": ctx.predictive.var_name or "",
        "inputs": [str(v.name) for v in ctx.inputs],
        "categorical_inputs": [level.label for level in ctx.levels],
        "numpy_inputs": [str(v.name) for v in ctx.inputs if v in ctx.predictive.numpy_inputs],
        "held_statistics": list(ctx.predictive.held_statistics),
        "raw_inputs": [str(v.name) for v in ctx.inputs if v in ctx.predictive.raw_inputs],
        "design_columns": ctx.predictive.design_replaced or "",
        "num_draws": ctx.draws.count,
        # what the compiled graphs computed in (float32 on the JAX backends only)
        "dtype": ctx.dtype,
        # found by the first evaluation (`pm_sens._run.compiling.dependence_of`)
        "dependence": (ctx.dependence or Dependence()).describe(),
        "pm_sens_version": __version__,
    }


def per_draw_shape(ctx, array):
    """(S, ...) → (chain, draw, ...)."""
    return array.reshape(len(ctx.draws.chain), len(ctx.draws.draw), *array.shape[1:])

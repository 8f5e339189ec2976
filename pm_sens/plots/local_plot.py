"""plot_local: local sensitivity of each feature against that feature's values."""

import numpy as np
import xarray as xr
from arviz_plots.visuals import ci_line_y, scatter_xy

from pm_sens._core.arguments import check_names_in, group_dataset
from pm_sens._core.draws import SAMPLE_DIMS
from pm_sens.plots._common import (
    add_legend,
    axis_label,
    feature_grid_size,
    feature_title,
    interval_quantiles,
    label_axes,
    posterior_bounds,
    resolve_backend,
    tidy_ticks,
    visual_kwargs,
    wrap_collection,
)

_MAX_GROUPS = 10


def _measure_name(dataset, var_name):
    """``var_name``, or by default the first method the group holds.

    ``"rsens"``; ``"kl"`` for a model without derivatives; ``"ig"`` for attributions.
    """
    if var_name is not None:
        return var_name
    methods = np.atleast_1d(dataset.attrs.get("method", [])).tolist()
    return next((m for m in methods if m in dataset), "ig")


def _local_values(dataset, var_name):
    """The local values (point, feature), with draws kept if there are any."""
    if var_name not in dataset or "feature" not in dataset[var_name].dims:
        valid = [n for n in dataset.data_vars if "feature" in dataset[n].dims]
        raise ValueError(
            f"var_name={var_name!r} is not a local measure of the group; valid: {valid}"
        )
    local = dataset[var_name]
    # a vector outcome's attributions have an outcome dim besides (point, feature)
    other_dims = [d for d in SAMPLE_DIMS + ("outcome",) if d in local.dims]
    if "feature_bis" in local.dims or local.ndim - len(other_dims) != 2:
        raise ValueError(f"var_name={var_name!r} has no (point, feature) local values")
    return local


def _groups(dataset, local, color_by):
    """Masks over points, one per colour group: levels of a coordinate or a feature."""
    point_dim = next(d for d in local.dims if d not in ("feature", "outcome"))
    if color_by is None:
        return [("all", np.ones(local.sizes[point_dim], bool))]
    if color_by in dataset.coords and dataset[color_by].dims == (point_dim,):
        values = dataset[color_by].values
    elif color_by in list(dataset["feature"].values):
        values = dataset["input_value"].sel(feature=color_by).values
    else:
        coords = sorted(str(c) for c in dataset.coords if dataset[c].dims == (point_dim,))
        features = [str(f) for f in local["feature"].values]
        raise ValueError(
            f"color_by={color_by!r} is neither a coordinate along {point_dim!r} nor a "
            f"feature; valid: {coords} or {features}"
        )
    levels = np.unique(values)
    if len(levels) > _MAX_GROUPS:  # a continuous feature: quartiles
        edges = np.quantile(values, [0.25, 0.5, 0.75])
        codes = np.searchsorted(edges, values)
        return [(f"{color_by} q{k + 1}", codes == k) for k in range(4)]
    return [(f"{color_by}={_short(level)}", values == level) for level in levels]


def _short(level):
    """A level as a legend shows it: floats to 3 significant digits."""
    return f"{level:.3g}" if isinstance(level, float | np.floating) else str(level)


def plot_local(
    dt,
    *,
    var_name=None,
    group="sensitivity",
    features=None,
    color_by=None,
    ci_prob=None,
    plot_collection=None,
    backend=None,
    visuals=None,
    **pc_kwargs,
):
    """Plot local sensitivity against the values of each feature, point by point.

    One plot per feature: every point's local value of ``var_name`` against its
    value of that feature — where in the input space a feature matters (one
    per feature and outcome for a vector outcome's attributions). In draw
    mode each point is its posterior mean with a line for its posterior
    interval.

    Parameters
    ----------
    dt : xarray.DataTree
        Holds the group written by :func:`pm_sens.sensitivity` (or by
        :func:`pm_sens.integrated_gradients`).
    var_name : str, optional
        A local measure: ``"rsens"``, ``"kl"``, ``"var"``, ``"ead"`` (or ``"ig"``);
        default the group's first method.
    group : str
        The group holding it: ``"sensitivity"`` or ``"attribution"``.
    features : list of str, optional
        Features to plot; default all.
    color_by : str, optional
        Colour the points by a coordinate along the point dimension (e.g. a group
        index) or by another feature (its quartiles when it has many values),
        with a legend.
    ci_prob : float, optional
        Probability of the posterior intervals (draw mode); default ArviZ's
        ``stats.ci_prob``.
    plot_collection, backend, visuals, **pc_kwargs
        As in :func:`pm_sens.plot_importance`; visuals ``"points"``,
        ``"interval"``, ``"title"``, ``"labels"`` and ``"legend"``.

    Returns
    -------
    arviz_plots.PlotCollection

    Examples
    --------
    With the quickstart's ``model`` (``examples/quickstart.py``) and its ``idata``:

    R-sens of ``dose`` and ``temp`` at each point against the input's value,
    coloured by the quartiles of ``humidity``:

    >>> import pm_sens
    >>> idata = pm_sens.sensitivity(idata, model, mode="draw")
    >>> pc = pm_sens.plot_local(idata, features=["dose", "temp"], color_by="humidity")
    """
    backend = resolve_backend(backend, plot_collection)
    quantiles = interval_quantiles(ci_prob)
    dataset = group_dataset(dt, group)
    var_name = _measure_name(dataset, var_name)
    local = _local_values(dataset, var_name)
    if features is not None:
        local = local.sel(
            feature=check_names_in("features", features, list(local["feature"].values))
        )
    sample_dims = [d for d in SAMPLE_DIMS if d in local.dims]
    estimate = local.mean(sample_dims)
    x = dataset["input_value"].sel(feature=local["feature"]).broadcast_like(estimate)
    points = _stacked([x, estimate], ["x", "y"], var_name)
    point_dim = next(d for d in estimate.dims if d not in ("feature", "outcome"))
    groups = _groups(dataset, estimate, color_by)
    # a vector outcome: one plot per feature and outcome
    facets = ["feature", *(["outcome"] if "outcome" in local.dims else [])]
    figsize, cols = feature_grid_size(int(np.prod([local.sizes[d] for d in facets])))
    pc = wrap_collection(
        points.sel(plot_axis="y"), plot_collection, backend, facets, pc_kwargs, figsize, cols
    )
    kwargs = visual_kwargs(visuals, "interval")
    if sample_dims and kwargs is not False:
        bounds = posterior_bounds(local, quantiles, sample_dims)
        intervals = _stacked(
            [x, bounds.isel(quantile=0, drop=True), bounds.isel(quantile=1, drop=True)],
            ["x", "y_bottom", "y_top"],
            var_name,
        )
        for i, (_, mask) in enumerate(groups):
            options = {"color": f"C{i}", "alpha": 0.4, "width": 1.0, **kwargs}
            subset = intervals.isel({point_dim: mask})
            pc.map(ci_line_y, f"interval_{i}", data=subset, **options)
    kwargs = visual_kwargs(visuals, "points")
    if kwargs is not False:
        for i, (_, mask) in enumerate(groups):
            options = {"color": f"C{i}", **kwargs}
            pc.map(scatter_xy, f"points_{i}", data=points.isel({point_dim: mask}), **options)
    kwargs = visual_kwargs(visuals, "title")
    if kwargs is not False:
        pc.map(feature_title, "title", subset_info=True, **kwargs)
    kwargs = visual_kwargs(visuals, "labels")
    if kwargs is not False:
        label_axes(pc, "input value", axis_label(var_name), **kwargs)
    if color_by is not None and visual_kwargs(visuals, "legend") is not False:
        add_legend(pc, [label for label, _ in groups], title=color_by)
    tidy_ticks(pc)
    return pc


def _stacked(arrays, axes, name):
    """Arrays stacked along ``plot_axis`` as a Dataset of one variable, without extra coords."""
    stacked = xr.concat(arrays, dim="plot_axis", coords="minimal", compat="override")
    stacked = stacked.assign_coords(plot_axis=axes)
    stacked = stacked.drop_vars([c for c in stacked.coords if c not in stacked.dims])
    return stacked.to_dataset(name=name)

"""plot_local: local sensitivity of each feature against that feature's values."""

import numpy as np
import xarray as xr
from arviz_base.labels import BaseLabeller
from arviz_plots.visuals import labelled_title, scatter_xy

from pm_sens._validate import check_names_in, group_dataset
from pm_sens.plots._common import resolve_backend, visual_kwargs, wrap_collection

_MAX_GROUPS = 10


def _local_values(dataset, var_name):
    if var_name not in dataset or "feature" not in dataset[var_name].dims:
        valid = [n for n in dataset.data_vars if "feature" in dataset[n].dims]
        raise ValueError(
            f"var_name={var_name!r} is not a local measure of the group; valid: {valid}"
        )
    local = dataset[var_name]
    if "chain" in local.dims:
        local = local.mean(("chain", "draw"))  # posterior mean of the local value
    if "feature_bis" in local.dims or local.ndim != 2:
        raise ValueError(f"var_name={var_name!r} has no (point, feature) local values")
    return local


def _groups(dataset, local, color_by):
    """Masks over points, one per colour group: levels of a coordinate or a feature."""
    point_dim = next(d for d in local.dims if d != "feature")
    if color_by is None:
        return [("all", np.ones(local.sizes[point_dim], bool))]
    if color_by in dataset.coords and dataset[color_by].dims == (point_dim,):
        values = dataset[color_by].values
    elif color_by in list(dataset["feature"].values):
        values = dataset["input_value"].sel(feature=color_by).values
    else:
        raise ValueError(
            f"color_by={color_by!r} is neither a coordinate along {point_dim!r} nor a feature"
        )
    levels = np.unique(values)
    if len(levels) > _MAX_GROUPS:  # a continuous feature: quartiles
        edges = np.quantile(values, [0.25, 0.5, 0.75])
        codes = np.searchsorted(edges, values)
        return [(f"{color_by} q{k + 1}", codes == k) for k in range(4)]
    return [(f"{color_by}={level}", values == level) for level in levels]


def plot_local(
    dt,
    *,
    var_name="rsens",
    group="sensitivity",
    features=None,
    color_by=None,
    plot_collection=None,
    backend=None,
    visuals=None,
    **pc_kwargs,
):
    """Plot local sensitivity against the values of each feature, point by point.

    One plot per feature: every point's local value of ``var_name`` (posterior
    mean in draw mode) against its value of that feature — where in the input
    space a feature matters.

    Parameters
    ----------
    dt : xarray.DataTree
        Holds the group written by :func:`pm_sens.sensitivity`.
    var_name : str
        A local measure: ``"rsens"``, ``"kl"``, ``"var"``, ``"ead"``.
    group : str
        The group holding it.
    features : list of str, optional
        Features to plot; default all.
    color_by : str, optional
        Colour the points by a coordinate along the point dimension (e.g. a group
        index) or by another feature (its quartiles when it has many values).
    plot_collection, backend, visuals, **pc_kwargs
        As in :func:`pm_sens.plot_importance`; visuals ``"points"`` and ``"title"``.

    Returns
    -------
    arviz_plots.PlotCollection
    """
    backend = resolve_backend(backend, plot_collection)
    dataset = group_dataset(dt, group)
    local = _local_values(dataset, var_name)
    if features is not None:
        local = local.sel(
            feature=check_names_in("features", features, list(local["feature"].values))
        )
    x = dataset["input_value"].sel(feature=local["feature"])
    points = xr.concat([x, local], dim="plot_axis").assign_coords(plot_axis=["x", "y"])
    points = points.drop_vars([c for c in points.coords if c not in points.dims]).to_dataset(
        name=var_name
    )
    pc = wrap_collection(
        points.sel(plot_axis="y"), plot_collection, backend, ["feature"], pc_kwargs
    )
    kwargs = visual_kwargs(visuals, "points")
    if kwargs is not False:
        point_dim = next(d for d in local.dims if d != "feature")
        for i, (label, mask) in enumerate(_groups(dataset, local, color_by)):
            subset = points.isel({point_dim: mask})
            options = {"color": f"C{i}", **kwargs}
            pc.map(scatter_xy, f"points_{i}" if color_by else "points", data=subset, **options)
            del label
    kwargs = visual_kwargs(visuals, "title")
    if kwargs is not False:
        pc.map(labelled_title, "title", subset_info=True, labeller=BaseLabeller(), **kwargs)
    return pc

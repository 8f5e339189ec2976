"""plot_interactions: the R-sens2 (or EAH) matrix as a heatmap with its values."""

import numpy as np
import xarray as xr
from arviz_plots.plot_collection import backend_from_object
from arviz_plots.visuals import set_xlim, set_xticks, set_ylim

from pm_sens._validate import group_dataset
from pm_sens.plots._common import resolve_backend, visual_kwargs, wrap_collection


def _cells(da, target, size=1500, **kwargs):
    """Square markers scaled by value, with the value written in each."""
    backend = backend_from_object(target)
    values = np.asarray(da)
    scale = np.nanmax(values) or 1.0
    rows, cols = np.indices(values.shape)
    backend.scatter(
        cols.ravel(),
        rows.ravel(),
        target,
        size=size * values.ravel() / scale,
        marker="s",
        **kwargs,
    )
    for r, c, v in zip(rows.ravel(), cols.ravel(), values.ravel(), strict=True):
        backend.text(c, r, f"{v:.2g}", target, size=8)
    return target


def _yticks(da, target, labels):
    return backend_from_object(target).yticks(list(range(len(labels))), labels, target)


def plot_interactions(
    dt,
    *,
    var_name="rsens2",
    group="sensitivity",
    plot_collection=None,
    backend=None,
    visuals=None,
    **pc_kwargs,
):
    """Plot the global pairwise interaction matrix with its values.

    Cell (d, e) is the mean over points of ``var_name`` for the pair (posterior
    mean in draw mode); the diagonal is each feature's curvature, not an
    interaction.

    Parameters
    ----------
    dt : xarray.DataTree
        Holds the group written by ``pm_sens.sensitivity(..., interactions=True)``.
    var_name : str
        ``"rsens2"``, ``"eah"`` or ``"aeh"``.
    group : str
        The group holding it.
    plot_collection, backend, visuals, **pc_kwargs
        As in :func:`pm_sens.plot_importance`; visuals ``"cells"`` and ``"ticks"``.

    Returns
    -------
    arviz_plots.PlotCollection
    """
    backend = resolve_backend(backend, plot_collection)
    dataset = group_dataset(dt, group)
    if var_name not in dataset or "feature_bis" not in dataset[var_name].dims:
        valid = [n for n in dataset.data_vars if "feature_bis" in dataset[n].dims]
        raise ValueError(f"var_name={var_name!r} is not a pairwise measure; valid: {valid}")
    da = dataset[var_name]
    average = [d for d in da.dims if d not in ("feature", "feature_bis")]
    mean = da.mean(average).transpose("feature", "feature_bis")
    # features with no pairwise values (categorical inputs, constant columns) are left out
    kept = mean.notnull().any("feature_bis").values
    mean = mean.isel(feature=kept, feature_bis=kept)
    matrix = xr.Dataset({var_name: mean})
    pc = wrap_collection(matrix, plot_collection, backend, [], pc_kwargs)
    kwargs = visual_kwargs(visuals, "cells")
    if kwargs is not False:
        kwargs.setdefault("color", "C0")
        pc.map(_cells, "cells", data=matrix, **kwargs)
    kwargs = visual_kwargs(visuals, "ticks")
    if kwargs is not False:
        labels = [str(f) for f in matrix["feature"].values]
        positions = list(range(len(labels)))
        pc.map(set_xticks, "xticks", values=positions, labels=labels, store_artist=False, **kwargs)
        pc.map(_yticks, "yticks", labels=labels, store_artist=False)
    # half a cell of margin around the matrix, so edge cells are not cut
    limits = (-0.5, matrix.sizes["feature"] - 0.5)
    pc.map(set_xlim, "xlim", limits=limits, store_artist=False)
    pc.map(set_ylim, "ylim", limits=limits, store_artist=False)
    return pc

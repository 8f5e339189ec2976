"""Shared pieces of the plots: data preparation and the PlotCollection set-up."""

import numpy as np
import xarray as xr
from arviz_base import rcParams
from arviz_plots import PlotCollection

from pm_sens._validate import check_choice
from pm_sens.summary import summary

#: arviz-plots backends.
BACKENDS = ("matplotlib", "bokeh", "plotly", "none")


def resolve_backend(backend, plot_collection):
    """The plotting backend: given, the collection's, or ArviZ's default."""
    if backend is not None:
        return check_choice("backend", backend, BACKENDS)
    return plot_collection.backend if plot_collection is not None else rcParams["plot.backend"]


def visual_kwargs(visuals, name):
    """Keyword arguments for one visual (``False`` turns it off)."""
    visuals = visuals or {}
    value = visuals.get(name, {})
    return False if value is False else dict(value)


def importance_dataset(dt, group, var_names, ci_prob, scale="input"):
    """Global importance per variable, sorted: dims ("rank", "plot_axis").

    Each variable holds, per rank position, x (the position), y (importance),
    y_bottom and y_top (interval); ``labels`` gives its feature labels, a
    categorical input's marked as a level change.
    """
    table = summary(dt, group=group, var_names=var_names, ci_prob=ci_prob, scale=scale)
    if "kind" in table:
        level = table["kind"] == "level"
        table.loc[level, "feature"] = table.loc[level, "feature"] + " (level)"
    data, labels = {}, {}
    width = table.groupby("variable", sort=False).size().max()
    for name, rows in table.groupby("variable", sort=False):
        values = np.full((width, 4), np.nan)
        values[: len(rows)] = np.column_stack(
            [np.arange(len(rows)), rows.importance, rows.ci_lower, rows.ci_upper]
        )
        data[name] = (("rank", "plot_axis"), values)
        labels[name] = list(rows.feature)
    dataset = xr.Dataset(data, coords={"plot_axis": ["x", "y", "y_bottom", "y_top"]})
    return dataset, labels


def wrap_collection(dataset, plot_collection, backend, cols, pc_kwargs):
    """A PlotCollection with one plot per ``cols`` entry, unless one is given."""
    if plot_collection is not None:
        return plot_collection
    pc_kwargs = dict(pc_kwargs)
    pc_kwargs.setdefault("cols", cols)
    return PlotCollection.wrap(dataset, backend=backend, **pc_kwargs)

"""plot_importance: global importance per feature with intervals, ranked top to bottom."""

import numpy as np
from arviz_plots.plot_collection import backend_from_object
from arviz_plots.visuals import labelled_title, labelled_x, set_ylim

from pm_sens._core.arguments import check_positive_int
from pm_sens.plots._common import (
    axis_label,
    grid_shape,
    importance_dataset,
    label_width,
    measure_name,
    resolve_backend,
    tidy_ticks,
    visual_kwargs,
    wrap_collection,
)

#: Rows shown per panel by default (the most important ones).
TOP = 20
#: Height of one row of a panel, and the fixed part of a panel, in inches.
ROW_HEIGHT, PANEL_HEIGHT = 0.26, 1.3


def _interval_x(da, target, **kwargs):
    """A horizontal line from x_left to x_right at each rank's y."""
    backend = backend_from_object(target)
    y, left, right = (da.sel(plot_axis=axis).values for axis in ("y", "x_left", "x_right"))
    return [
        backend.line([lo, hi], [at, at], target, **kwargs)
        for at, lo, hi in zip(y, left, right, strict=True)
        if np.isfinite([at, lo, hi]).all()
    ]


def _points(da, target, **kwargs):
    x, y = da.sel(plot_axis="x").values, da.sel(plot_axis="y").values
    return backend_from_object(target).scatter(x, y, target, **kwargs)


def _zero_line(da, target, **kwargs):
    return backend_from_object(target).vline(0.0, target, **kwargs)


def _yticks(da, target, labels, **kwargs):
    positions = list(-np.arange(len(labels)))
    return backend_from_object(target).yticks(positions, labels, target, **kwargs)


def _panel_title(name, shown, count):
    """The measure's name, with how many of its features or pairs are shown if not all."""
    if shown == count:
        return measure_name(name)
    return f"{measure_name(name)}: top {shown} of {count}"


def plot_importance(
    dt,
    *,
    group="sensitivity",
    var_names=None,
    ci_prob=None,
    scale="input",
    top=TOP,
    plot_collection=None,
    backend=None,
    visuals=None,
    **pc_kwargs,
):
    """Plot the global importance of each feature, ranked, with its interval.

    One panel per variable of the group (R-sens, KL, PFI, … side by side), the
    features ranked from the top, importance along the x axis in the measure's
    unit; the values and intervals are those of :func:`pm_sens.summary`
    (posterior in draw mode, Bayesian bootstrap over points in moment mode,
    spread over repeats for permutation importance).

    Parameters
    ----------
    dt : xarray.DataTree
        Holds the group written by a pm_sens function.
    group : str
        ``"sensitivity"``, ``"attribution"`` or ``"permutation_importance"``.
    var_names : str or list of str, optional
        Variables to plot; default all with a feature dimension.
    ci_prob : float, optional
        Interval probability; default ArviZ's ``stats.ci_prob``.
    scale : {"input", "sd"}
        As in :func:`pm_sens.summary`: ``"input"`` plots per-unit measures per
        unit of each input; ``"sd"`` per standard deviation of each input,
        which puts continuous inputs on the scale of categorical ones (per
        level change, marked "(level)").
    top : int
        Show the ``top`` most important features (or pairs) of each panel;
        the title says when some are left out.
    plot_collection : arviz_plots.PlotCollection, optional
        Draw into an existing collection.
    backend : str, optional
        ``"matplotlib"``, ``"bokeh"``, ``"plotly"`` or ``"none"``; default ArviZ's.
    visuals : mapping, optional
        Keyword arguments per visual: ``"point"``, ``"interval"``, ``"zero"``
        (the line at 0), ``"ticks"``, ``"labels"``, ``"title"``; ``False``
        removes one.
    **pc_kwargs
        Passed to :meth:`arviz_plots.PlotCollection.wrap` (e.g.
        ``figure_kwargs={"figsize": (8, 6)}``; the default size grows with the
        number of rows and the length of the labels).

    Returns
    -------
    arviz_plots.PlotCollection

    Examples
    --------
    With the quickstart's ``model`` (``examples/quickstart.py``) and its ``idata``:

    >>> import pm_sens
    >>> idata = pm_sens.sensitivity(idata, model, mode="draw")
    >>> pc = pm_sens.plot_importance(idata, scale="sd")
    >>> pc.savefig("importance.png")
    """
    backend = resolve_backend(backend, plot_collection)
    top = check_positive_int("top", top)
    dataset, labels, counts = importance_dataset(dt, group, var_names, ci_prob, scale, top)
    rows, cols = grid_shape(len(labels), 3)
    panel_width = 3.4 + label_width(label for names in labels.values() for label in names)
    figsize = (cols * panel_width, rows * (PANEL_HEIGHT + ROW_HEIGHT * dataset.sizes["rank"]))
    pc = wrap_collection(
        dataset.sel(plot_axis="x"),
        plot_collection,
        backend,
        ["__variable__"],
        pc_kwargs,
        figsize,
        cols,
    )
    kwargs = visual_kwargs(visuals, "zero")
    if kwargs is not False:
        kwargs = {"color": "#bbbbbb", "width": 0.8, **kwargs}
        pc.map(_zero_line, "zero", data=dataset.sel(plot_axis="x"), **kwargs)
    kwargs = visual_kwargs(visuals, "interval")
    if kwargs is not False:
        kwargs = {"color": "C0", "width": 1.5, **kwargs}
        data = dataset.sel(plot_axis=["y", "x_left", "x_right"])
        pc.map(_interval_x, "interval", data=data, store_artist=False, **kwargs)
    kwargs = visual_kwargs(visuals, "point")
    if kwargs is not False:
        kwargs.setdefault("color", "C0")
        pc.map(_points, "point", data=dataset.sel(plot_axis=["x", "y"]), **kwargs)
    ticks, title, xlabel = (visual_kwargs(visuals, v) for v in ("ticks", "title", "labels"))
    for name, names in labels.items():
        data = dataset[[name]].sel(plot_axis="x")
        if ticks is not False:
            pc.map(_yticks, "ticks", data=data, labels=names, store_artist=False, **ticks)
        if title is not False:
            text = _panel_title(name, len(names), counts[name])
            pc.map(labelled_title, "title", data=data, text=text, **title)
        if xlabel is not False:
            text = axis_label(name, scale, global_=True)
            pc.map(labelled_x, "xlabel", data=data, text=text, store_artist=False, **xlabel)
    limits = (-(dataset.sizes["rank"] - 0.5), 0.5)
    pc.map(set_ylim, "ylim", limits=limits, store_artist=False)
    tidy_ticks(pc)
    return pc

"""plot_importance: global importance per feature with intervals, sorted."""

from arviz_base.labels import BaseLabeller
from arviz_plots.visuals import ci_line_y, labelled_title, scatter_xy, set_xlim, set_xticks

from pm_sens.plots._common import (
    importance_dataset,
    resolve_backend,
    visual_kwargs,
    wrap_collection,
)


def plot_importance(
    dt,
    *,
    group="sensitivity",
    var_names=None,
    ci_prob=None,
    scale="input",
    plot_collection=None,
    backend=None,
    visuals=None,
    **pc_kwargs,
):
    """Plot the global importance of each feature, sorted, with its interval.

    One plot per variable of the group (R-sens, KL, PFI, … side by side), the
    features ordered by importance; the values and intervals are those of
    :func:`pm_sens.summary` (posterior in draw mode, Bayesian bootstrap over
    points in moment mode, spread over repeats for permutation importance).

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
        As in :func:`pm_sens.summary`: ``"sd"`` puts continuous inputs (per
        unit) on the scale of categorical ones (per level change, marked
        "(level)") by multiplying by each input's standard deviation.
    plot_collection : arviz_plots.PlotCollection, optional
        Draw into an existing collection.
    backend : str, optional
        ``"matplotlib"``, ``"bokeh"``, ``"plotly"`` or ``"none"``; default ArviZ's.
    visuals : mapping, optional
        Keyword arguments per visual: ``"point"``, ``"interval"``, ``"ticks"``,
        ``"title"``; ``False`` removes one.
    **pc_kwargs
        Passed to :meth:`arviz_plots.PlotCollection.wrap`.

    Returns
    -------
    arviz_plots.PlotCollection
    """
    backend = resolve_backend(backend, plot_collection)
    dataset, labels = importance_dataset(dt, group, var_names, ci_prob, scale)
    pc = wrap_collection(
        dataset.sel(plot_axis="y"), plot_collection, backend, ["__variable__"], pc_kwargs
    )
    kwargs = visual_kwargs(visuals, "interval")
    if kwargs is not False:
        kwargs.setdefault("color", "C0")
        interval = dataset.sel(plot_axis=["x", "y_bottom", "y_top"])
        pc.map(ci_line_y, "interval", data=interval, **kwargs)
    kwargs = visual_kwargs(visuals, "point")
    if kwargs is not False:
        kwargs.setdefault("color", "C0")
        pc.map(scatter_xy, "point", data=dataset.sel(plot_axis=["x", "y"]), **kwargs)
    kwargs = visual_kwargs(visuals, "ticks")
    if kwargs is not False:
        kwargs.setdefault("rotation", 45)
        for name, names in labels.items():
            pc.map(
                set_xticks,
                "ticks",
                data=dataset[[name]],
                values=list(range(len(names))),
                labels=names,
                store_artist=False,
                **kwargs,
            )
    width = dataset.sizes["rank"]
    pc.map(set_xlim, "xlim", limits=(-0.5, width - 0.5), store_artist=False)
    kwargs = visual_kwargs(visuals, "title")
    if kwargs is not False:
        pc.map(labelled_title, "title", subset_info=True, labeller=BaseLabeller(), **kwargs)
    return pc

"""Shared pieces of the plots: data preparation, names and units, sizes, the PlotCollection."""

import math
import warnings
from importlib import import_module

import numpy as np
import xarray as xr
from arviz_base import rcParams
from arviz_plots import PlotCollection
from arviz_plots.plot_collection import backend_from_object

from pm_sens._core.arguments import check_choice, check_probability
from pm_sens.ranking.global_values import PER_UNIT, PER_UNIT_PAIR, SIGNED
from pm_sens.ranking.summary import summary

#: arviz-plots backends.
BACKENDS = ("matplotlib", "bokeh", "plotly", "none")

#: Display name and unit (at ``scale="input"``) of each measure.
MEASURES = {
    "rsens": ("R-sens", "per unit of input"),
    "kl": ("KL method", "per unit of input"),
    "var": ("VAR", "variance of the predictive mean"),
    "ead": ("EAD", "per unit of input"),
    "aed": ("AED", "per unit of input"),
    "rsens2": ("R-sens2", "per unit of each input"),
    "rsens_row": ("R-sens of a table's row", "per unit of input"),
    "kl_row": ("KL method, a table's row", "per unit of input"),
    "rsens2_row": ("R-sens2 of a table's row", "per unit of each input"),
    "eah": ("EAH", "per unit of each input"),
    "aeh": ("AEH", "per unit of each input"),
    "ig": ("IG", "units of the statistic"),
    "entropy_pfi": ("entropy PFI", "nats per point"),
    "likelihood_pfi": ("likelihood PFI", "nats per point"),
}

#: Approximate width of one character of a 10-point label, in inches.
CHAR_WIDTH = 0.075


def resolve_backend(backend, plot_collection):
    """The plotting backend: given, the collection's, or ArviZ's default."""
    if backend is not None:
        return check_choice("backend", backend, BACKENDS)
    return plot_collection.backend if plot_collection is not None else rcParams["plot.backend"]


def interval_quantiles(ci_prob):
    """The two quantiles of an equal-tailed interval of ``ci_prob`` (default ArviZ's)."""
    prob = rcParams["stats.ci_prob"] if ci_prob is None else check_probability("ci_prob", ci_prob)
    return [(1 - prob) / 2, (1 + prob) / 2]


def posterior_bounds(da, quantiles, dims):
    """``da.quantile(quantiles, dim=dims)``; NaN where every draw is NaN, quietly.

    A padded grid value, or a point whose predictive is one value in every
    draw, has no values: its interval is not drawn.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "All-NaN slice", RuntimeWarning)
        return da.quantile(quantiles, dim=dims)


def visual_kwargs(visuals, name):
    """Keyword arguments for one visual (``False`` turns it off)."""
    visuals = visuals or {}
    value = visuals.get(name, {})
    return False if value is False else dict(value)


def measure_name(variable):
    """Display name of a result variable: ``entropy_pfi[total]`` → ``entropy PFI: total``."""
    base, _, component = variable.partition("[")
    name = MEASURES.get(base, (base, ""))[0]
    return f"{name}: {component.rstrip(']')}" if component else name


def axis_label(variable, scale="input", global_=False):
    """The measure and its unit, e.g. ``R-sens (per unit of input)`` or ``(per sd of input)``.

    ``global_``: the label of the global importance, ``mean |IG|`` for signed measures.
    """
    base = variable.partition("[")[0]
    name, unit = MEASURES.get(base, (base, ""))
    if scale == "sd" and base in PER_UNIT + PER_UNIT_PAIR:
        unit = unit.replace("unit", "sd")
    if global_ and base in SIGNED:
        name = f"mean |{name}|"
    return f"{name} ({unit})" if unit else name


def importance_dataset(dt, group, var_names, ci_prob, scale="input", top=None):
    """Global importance per variable, sorted: dims ("rank", "plot_axis").

    Each variable holds, per rank position, y (the position, 0 at the top,
    negative below), x (importance), x_left and x_right (interval); ``labels``
    gives its feature labels, a categorical input's marked as a level change,
    and ``counts`` how many features or pairs the variable has (only the
    ``top`` most important are kept).
    """
    table = summary(dt, group=group, var_names=var_names, ci_prob=ci_prob, scale=scale)
    if "kind" in table:
        level = table["kind"] == "level"
        table.loc[level, "feature"] = table.loc[level, "feature"] + " (level)"
    data, labels, counts = {}, {}, {}
    # a variable with no value for any feature (a wide table's row joints of
    # categorical inputs only) has nothing to draw
    groups = [
        (name, rows)
        for name, rows in table.groupby("variable", sort=False)
        if rows["importance"].notna().any()
    ]
    width = max(len(rows) if top is None else min(top, len(rows)) for _, rows in groups)
    for name, rows in groups:
        counts[name] = len(rows)
        rows = rows.iloc[:width]
        values = np.full((width, 4), np.nan)
        values[: len(rows)] = np.column_stack(
            [-np.arange(len(rows)), rows.importance, rows.ci_lower, rows.ci_upper]
        )
        data[name] = (("rank", "plot_axis"), values)
        labels[name] = list(rows.feature)
    dataset = xr.Dataset(data, coords={"plot_axis": ["y", "x", "x_left", "x_right"]})
    return dataset, labels, counts


def grid_shape(n_plots, max_cols):
    """Rows and columns of a grid of ``n_plots`` with rows as even as possible."""
    rows = math.ceil(n_plots / max_cols)
    return rows, math.ceil(n_plots / rows)


#: Plots per row of a grid with one plot per feature, and the size of one, in inches.
MAX_COLS, PANEL_SIZE = 4, (3.2, 2.6)


def feature_grid_size(n_features):
    """Figure size (inches) and columns of a grid with one plot per feature."""
    rows, cols = grid_shape(n_features, MAX_COLS)
    return (cols * PANEL_SIZE[0], rows * PANEL_SIZE[1]), cols


def label_width(labels):
    """Inches a column of tick labels takes at the default font size."""
    return CHAR_WIDTH * max((len(str(label)) for label in labels), default=0)


def wrap_collection(dataset, plot_collection, backend, cols, pc_kwargs, figsize, col_wrap):
    """A PlotCollection with one plot per ``cols`` entry, unless one is given.

    Default figure size ``figsize`` (inches) and, with matplotlib, constrained
    layout, so labels and titles are not clipped and do not collide.
    """
    if plot_collection is not None:
        return plot_collection
    pc_kwargs = dict(pc_kwargs)
    pc_kwargs.setdefault("cols", cols)
    pc_kwargs.setdefault("col_wrap", col_wrap)
    figure_kwargs = dict(pc_kwargs.pop("figure_kwargs", {}))
    figure_kwargs.setdefault("figsize", figsize)
    if backend == "matplotlib":
        figure_kwargs.setdefault("layout", "constrained")
    return PlotCollection.wrap(dataset, backend=backend, figure_kwargs=figure_kwargs, **pc_kwargs)


def plot_targets(pc):
    """Each plot of a collection with its column index: [(target, col_index)]."""
    viz = pc.viz
    if "plot" in viz.children:  # one plot per variable
        plots, cols = viz["plot"].to_dataset(), viz["col_index"].to_dataset()
        return [(plots[v].item(), int(cols[v].item())) for v in plots.data_vars]
    plots, cols = viz["plot"].values.ravel(), viz["col_index"].values.ravel()
    return list(zip(plots, cols.astype(int), strict=True))


def label_axes(pc, xlabel=None, ylabel=None, **kwargs):
    """Axis labels: ``xlabel`` under every plot, ``ylabel`` beside the first column."""
    for target, col in plot_targets(pc):
        backend = backend_from_object(target)
        if xlabel is not None:
            backend.xlabel(xlabel, target, **kwargs)
        if ylabel is not None and col == 0:
            backend.ylabel(ylabel, target, **kwargs)


def add_legend(pc, labels, title=None):
    """A figure legend of line colours ``C0, C1, …`` for ``labels``."""
    legend = import_module(f"arviz_plots.backend.{pc.backend}.legend").legend
    kwargs = [{"color": f"C{i}"} for i in range(len(labels))]
    return legend(pc, kwargs, list(labels), title=title)


def feature_title(da, target, sel, var_name=None, isel=None, **kwargs):
    """The plot's feature as its title (and its outcome, for a vector outcome)."""
    title = str(sel["feature"])
    if "outcome" in sel:
        title = f"{title} → {sel['outcome']}"
    return backend_from_object(target).title(title, target, **kwargs)


def tidy_ticks(pc, max_ticks=5):
    """At most ``max_ticks`` ticks on numeric axes (matplotlib), with an offset.

    A power-of-ten offset for very small or large numbers, so labels do not run
    into each other. Axes labelled by name (features) are left alone.
    """
    if pc.backend != "matplotlib":
        return
    from matplotlib.ticker import MaxNLocator, ScalarFormatter

    for target, _ in plot_targets(pc):
        for name, axis in (("x", target.xaxis), ("y", target.yaxis)):
            if isinstance(axis.get_major_formatter(), ScalarFormatter):
                axis.set_major_locator(MaxNLocator(nbins=max_ticks))
                target.ticklabel_format(axis=name, style="sci", scilimits=(-3, 4))

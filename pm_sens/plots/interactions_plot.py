"""plot_interactions: the pairs of R-sens2 (or EAH) as a lower-triangle heatmap with values."""

import numpy as np
import xarray as xr
from arviz_plots.plot_collection import backend_from_object
from arviz_plots.visuals import labelled_title, set_xlim, set_ylim

from pm_sens._core.arguments import check_choice, group_dataset
from pm_sens.plots._common import (
    axis_label,
    label_width,
    measure_name,
    resolve_backend,
    visual_kwargs,
    wrap_collection,
)
from pm_sens.ranking.global_values import SCALES, per_sd

#: Side of one cell in inches (room for a 6-character value at 7 points).
CELL = 0.5
#: Smallest side of the figure in inches (room for the title).
MIN_SIDE = 4.0
#: Title font size over the tick labels' (12 against 10 points).
TITLE_FONT = 1.2
#: The two ends of the colour scale (zero and the largest value).
LIGHT, DARK = np.array([0xF7, 0xFB, 0xFF]), np.array([0x08, 0x30, 0x6B])


def _value_text(value):
    """A value in at most 6 characters: 2 significant digits, or a power of ten."""
    if value != 0 and abs(value) < 1e-3:
        return f"{value:.0e}"
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.2g}"


def _colour(fraction):
    red, green, blue = np.round(LIGHT + (DARK - LIGHT) * fraction).astype(int)
    return f"#{red:02x}{green:02x}{blue:02x}"


def _cells(da, target, text_size=7, **kwargs):
    """Each pair (row below column) as a square shaded by its value, the value written in it."""
    backend = backend_from_object(target)
    values = np.asarray(da)
    pairs = values[np.tril_indices(len(values), k=-1)]
    largest = np.nanmax(pairs) if np.isfinite(pairs).any() else 0.0
    artists = []
    for row, col in zip(*np.tril_indices(len(values), k=-1), strict=True):
        value = values[row, col]
        if not np.isfinite(value):
            continue
        fraction = value / largest if largest > 0 else 0.0
        artists.append(
            backend.fill_between_y(
                [col - 0.5, col + 0.5],
                [row - 0.5] * 2,
                [row + 0.5] * 2,
                target,
                color=_colour(fraction),
                **kwargs,
            )
        )
        colour = "white" if fraction > 0.5 else "black"
        artists.append(
            backend.text(col, row, _value_text(value), target, size=text_size, color=colour)
        )
    return artists


def _title(var_name, scale, with_levels):
    """What the cells show, in three lines."""
    unit = axis_label(var_name, scale).removeprefix(measure_name(var_name)).strip(" ()")
    if with_levels:  # a level change has no unit
        unit = unit.replace("each input", "each continuous input")
    over = "rows" if var_name.endswith("_row") else "points"  # a wide table's rows
    return f"{measure_name(var_name)} of each pair\n{unit},\nmean over {over}"


def _ticks(da, target, labels, **kwargs):
    """Rows 1… and columns …n-2 of the lower triangle, labelled by feature."""
    backend = backend_from_object(target)
    positions = list(range(len(labels)))
    backend.xticks(positions[:-1], labels[:-1], target, rotation=90, **kwargs)
    backend.yticks(positions[1:], labels[1:], target, **kwargs)


def plot_interactions(
    dt,
    *,
    var_name="rsens2",
    group="sensitivity",
    scale="input",
    plot_collection=None,
    backend=None,
    visuals=None,
    **pc_kwargs,
):
    """Plot the global importance of every pair of features as a heatmap with its values.

    Cell (d, e), below the diagonal, is the mean over points of ``var_name``
    for the pair (posterior mean in draw mode), shaded from white (0) to dark
    (the largest pair). The diagonal — each feature's curvature, how fast its
    own effect bends, not an interaction — is left out; it stays in the
    result (``idata["sensitivity"]["rsens2"]`` with ``feature == feature_bis``).
    A categorical input, marked "(level)", has R-sens2 pairs: with a
    continuous input, how differently that input moves the predictive at the
    other levels (per unit of that input); with another categorical input,
    the interaction contrast of their level changes (no unit). See the user
    guide, "Interactions with a categorical input".

    Parameters
    ----------
    dt : xarray.DataTree
        Holds the group written by ``pm_sens.sensitivity(..., interactions=True)``.
    var_name : str
        ``"rsens2"``, ``"eah"`` or ``"aeh"``.
    group : str
        The group holding it.
    scale : {"input", "sd"}
        As in :func:`pm_sens.summary`: per unit of each input of the pair, or
        per standard deviation of each (the value times both sds).
    plot_collection, backend, visuals, **pc_kwargs
        As in :func:`pm_sens.plot_importance`; visuals ``"cells"`` (keyword
        ``text_size``), ``"ticks"`` and ``"title"``.

    Returns
    -------
    arviz_plots.PlotCollection

    Examples
    --------
    With the quickstart's ``model`` (``examples/quickstart.py``) and its ``idata``:

    >>> import pm_sens
    >>> idata = pm_sens.sensitivity(idata, model, interactions=True)
    >>> pc = pm_sens.plot_interactions(idata)
    """
    backend = resolve_backend(backend, plot_collection)
    check_choice("scale", scale, SCALES)
    dataset = group_dataset(dt, group)
    if var_name not in dataset or "feature_bis" not in dataset[var_name].dims:
        valid = [n for n in dataset.data_vars if "feature_bis" in dataset[n].dims]
        raise ValueError(f"var_name={var_name!r} is not a pairwise measure; valid: {valid}")
    da = per_sd(var_name, dataset[var_name]) if scale == "sd" else dataset[var_name]
    average = [d for d in da.dims if d not in ("feature", "feature_bis")]
    mean = da.mean(average).transpose("feature", "feature_bis")
    # features with no pairwise values (categorical inputs, constant columns) are left out
    kept = mean.notnull().any("feature_bis").values
    if kept.sum() < 2:
        raise ValueError(
            f"plot_interactions draws the pairs of two or more inputs; {var_name} has "
            f"values for {list(mean['feature'].values[kept])} only (of "
            f"{list(mean['feature'].values)}): there is no pair to draw. "
            "plot_importance shows each input's own sensitivity"
        )
    mean = mean.isel(feature=kept, feature_bis=kept)
    matrix = xr.Dataset({var_name: mean})
    features = matrix["feature"].values
    kinds = mean["feature_kind"].values if "feature_kind" in mean.coords else [""] * len(features)
    labels = [
        f"{f} (level)" if kind == "level" else str(f)
        for f, kind in zip(features, kinds, strict=True)
    ]
    title = _title(var_name, scale, "level" in kinds)
    # the title is centred over the cells: the cells are at least as wide
    cells = max(CELL * max(len(labels) - 1, 1), TITLE_FONT * label_width(title.split("\n")))
    side = max(cells + label_width(labels) + 1.0, MIN_SIDE)
    pc = wrap_collection(matrix, plot_collection, backend, [], pc_kwargs, (side, side), 1)
    kwargs = visual_kwargs(visuals, "cells")
    if kwargs is not False:
        kwargs = {"alpha": 1.0, **kwargs}
        pc.map(_cells, "cells", data=matrix, store_artist=False, **kwargs)
    kwargs = visual_kwargs(visuals, "ticks")
    if kwargs is not False:
        pc.map(_ticks, "ticks", data=matrix, labels=labels, store_artist=False, **kwargs)
    kwargs = visual_kwargs(visuals, "title")
    if kwargs is not False:
        pc.map(labelled_title, "title", data=matrix, text=title, **kwargs)
    # the lower triangle, half a cell of margin around it; first row at the top
    n = matrix.sizes["feature"]
    pc.map(set_xlim, "xlim", limits=(-0.5, n - 1.5), store_artist=False)
    pc.map(set_ylim, "ylim", limits=(n - 0.5, 0.5), store_artist=False)
    return pc

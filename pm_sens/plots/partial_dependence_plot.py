"""plot_partial_dependence: PDP with posterior band and ICE curves."""

import numpy as np
import xarray as xr
from arviz_plots.plot_collection import backend_from_object
from arviz_plots.visuals import line_xy, multiple_lines

from pm_sens._core.arguments import check_choice, check_names_in, group_dataset
from pm_sens._core.draws import SAMPLE_DIMS
from pm_sens.plots._common import (
    add_legend,
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

KINDS = ("mean", "entropy", "log_likelihood")
#: The y axis of each kind.
Y_LABELS = {
    "mean": "predictive mean",
    "entropy": "predictive entropy (nats)",
    "log_likelihood": "log density of observed y",
}
#: Drawing order: ICE curves behind the band, the PDP in front.
ICE_Z, BAND_Z, PDP_Z = 1, 2, 3


def _band(da, target, **kwargs):
    """Fill between the lower and upper curves (plot_axis x, y_bottom, y_top)."""
    return backend_from_object(target).fill_between_y(
        da.sel(plot_axis="x").values,
        da.sel(plot_axis="y_bottom").values,
        da.sel(plot_axis="y_top").values,
        target,
        **kwargs,
    )


def _ice(da, target, xvalues, **kwargs):
    """The ICE curves of one plot, the grid values read once as an array.

    arviz-plots' `multiple_lines` pairs the x values with each curve in turn: a
    DataArray would be converted once per curve (0.8 s for 30 plots of 569).
    """
    return multiple_lines(da, target, "grid", xvalues=np.asarray(xvalues), **kwargs)


def _with_x(curve, grid_value):
    """Stack x (the grid values) and the curve(s) along ``plot_axis``."""
    x = grid_value.broadcast_like(curve)
    return xr.concat([x, curve], dim="plot_axis").assign_coords(plot_axis=["x", "y"])


def plot_partial_dependence(
    dt,
    *,
    kind="mean",
    features=None,
    ice=True,
    ci_prob=None,
    plot_collection=None,
    backend=None,
    visuals=None,
    **pc_kwargs,
):
    """Plot partial dependence curves, one plot per feature.

    A vector outcome per point (MvNormal, Multinomial) has one plot of its
    mean per feature and outcome.

    ``kind="mean"``: the PDP of the predictive mean (posterior mean) with its
    posterior band and, behind it, the ICE curves of every point.
    ``kind="entropy"``: the PDP of the total, aleatoric and epistemic entropy
    (one line each) with the ICE curves of the total. ``kind="log_likelihood"``:
    the PDP and ICE of the mixture log density of the observed y.

    Parameters
    ----------
    dt : xarray.DataTree
        Holds the group written by :func:`pm_sens.partial_dependence`.
    kind : {"mean", "entropy", "log_likelihood"}
        Which curves.
    features : list of str, optional
        Features to plot; default all.
    ice : bool
        Draw the ICE curves (when they were computed).
    ci_prob : float, optional
        Probability of the posterior band (mean PDP); default ArviZ's.
    plot_collection, backend, visuals, **pc_kwargs
        As in :func:`pm_sens.plot_importance`; visuals ``"band"``, ``"pdp"``,
        ``"ice"``, ``"title"``, ``"labels"`` and ``"legend"``.

    Returns
    -------
    arviz_plots.PlotCollection

    Examples
    --------
    With the quickstart's ``model`` (``examples/quickstart.py``) and its ``idata``:

    >>> import pm_sens
    >>> idata = pm_sens.partial_dependence(idata, model, features=["dose", "noise_driver"])
    >>> pc = pm_sens.plot_partial_dependence(idata)  # the mean, with its posterior band
    >>> pc = pm_sens.plot_partial_dependence(idata, kind="entropy")
    """
    check_choice("kind", kind, KINDS)
    backend = resolve_backend(backend, plot_collection)
    quantiles = interval_quantiles(ci_prob)
    dataset = group_dataset(dt, "partial_dependence")
    if f"{kind}_pdp" not in dataset:
        raise ValueError(f"kind={kind!r} was not computed; run partial_dependence(kind=...)")
    if features is not None:
        features = check_names_in("features", features, list(dataset["feature"].values))
        dataset = dataset.sel(feature=features)
    grid_value = dataset["grid_value"]
    pdp = dataset[f"{kind}_pdp"]
    base = xr.Dataset({kind: pdp.mean([d for d in SAMPLE_DIMS if d in pdp.dims])})
    if "component" in base.dims:
        base = base.sel(component="total", drop=True)
    # a vector outcome's mean: one plot per feature and outcome
    facets = ["feature", *(["outcome"] if "outcome" in base.dims else [])]
    figsize, cols = feature_grid_size(int(np.prod([base.sizes[d] for d in facets])))
    pc = wrap_collection(base, plot_collection, backend, facets, pc_kwargs, figsize, cols)

    kwargs = visual_kwargs(visuals, "ice")
    if ice and f"{kind}_ice" in dataset and kwargs is not False:
        curves = dataset[f"{kind}_ice"]
        if "component" in curves.dims:
            curves = curves.sel(component="total", drop=True)
        point_dim = next(d for d in curves.dims if d not in (*facets, "grid"))
        kwargs = {"color": "B2", "alpha": 0.3, "zorder": ICE_Z, **kwargs}
        pc.map(
            _ice,
            "ice",
            data=xr.Dataset({kind: curves.transpose(*facets, "grid", point_dim)}),
            xvalues=grid_value,
            **kwargs,
        )
    kwargs = visual_kwargs(visuals, "band")
    if "chain" in pdp.dims and kwargs is not False:
        bounds = posterior_bounds(pdp, quantiles, SAMPLE_DIMS)
        band = xr.concat(
            [grid_value, bounds.isel(quantile=0, drop=True), bounds.isel(quantile=1, drop=True)],
            dim="plot_axis",
        ).assign_coords(plot_axis=["x", "y_bottom", "y_top"])
        pc.map(
            _band,
            "band",
            data=xr.Dataset({kind: band}),
            **{"alpha": 0.4, "color": "C0", "zorder": BAND_Z, **kwargs},
        )
    kwargs = visual_kwargs(visuals, "pdp")
    if kwargs is not False:
        kwargs = {"width": 2.0, "zorder": PDP_Z, **kwargs}
        curve = pdp.mean([d for d in SAMPLE_DIMS if d in pdp.dims])
        if "component" in curve.dims:
            for i, component in enumerate(curve["component"].values):
                line = _with_x(curve.sel(component=component, drop=True), grid_value)
                options = {"color": f"C{i}", **kwargs}
                pc.map(line_xy, f"pdp_{component}", data=xr.Dataset({kind: line}), **options)
        else:
            line = _with_x(curve, grid_value)
            pc.map(line_xy, "pdp", data=xr.Dataset({kind: line}), **{"color": "C0", **kwargs})
    kwargs = visual_kwargs(visuals, "title")
    if kwargs is not False:
        pc.map(feature_title, "title", subset_info=True, **kwargs)
    kwargs = visual_kwargs(visuals, "labels")
    if kwargs is not False:
        label_axes(pc, "input value", Y_LABELS[kind], **kwargs)
    if "component" in pdp.dims and visual_kwargs(visuals, "legend") is not False:
        add_legend(pc, list(pdp["component"].values), title="entropy")
    tidy_ticks(pc)
    return pc

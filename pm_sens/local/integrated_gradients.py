"""`integrated_gradients`: per-draw Integrated Gradients of a predictive statistic."""

from functools import partial

import numpy as np
import xarray as xr

from pm_sens._core.arguments import check_finite_array, check_optional_positive_int
from pm_sens._core.context import make_context
from pm_sens._core.points import feature_matrix
from pm_sens._core.request import DEFAULT_MEMORY_LIMIT, Request
from pm_sens._core.results import (
    attach,
    outcome_coordinates,
    outcome_dims,
    point_coordinates,
    result_attrs,
)
from pm_sens._run.blocks import run_local
from pm_sens._run.compiling import dependence_of
from pm_sens.graph.likelihoods.closed_forms import check_statistic
from pm_sens.local.derivative_passes import ig_measures
from pm_sens.local.methods import check_differentiable, stepped_inputs
from pm_sens.measures.integrated_gradients import completeness_gap


def _baseline_matrix(baseline, ctx, x):
    """The baseline as (N, D), by default the points' mean.

    A dict or Dataset may give, per container, one point (the container's row
    shape) or one row per point.
    """
    if baseline is None:
        return np.broadcast_to(x.mean(0), x.shape)
    if isinstance(baseline, int | float) and not isinstance(baseline, bool):
        baseline = {v.name: baseline for v in ctx.inputs}
    if isinstance(baseline, xr.Dataset):
        baseline = {k: baseline[k].values for k in baseline.data_vars}
    if not isinstance(baseline, dict):
        raise TypeError(
            f"baseline={type(baseline).__name__} is not valid; give None, a number, a "
            "dict {container_name: array} or an xarray.Dataset"
        )
    names = [v.name for v in ctx.inputs]
    unknown = sorted(set(baseline) - set(names))
    if unknown:
        raise ValueError(f"baseline has unknown name(s) {unknown}; valid: the inputs {names}")
    columns = []
    for var in ctx.inputs:
        value = ctx.points.values[var]
        block = np.reshape(value, (len(value), -1))
        if var.name not in baseline:
            columns.append(np.broadcast_to(block.mean(0), block.shape))
            continue
        given = check_finite_array(f"baseline[{var.name!r}]", baseline[var.name]).astype(float)
        if given.shape in (value.shape[1:], ()):
            columns.append(np.broadcast_to(given.reshape(-1), block.shape))
        elif given.shape == value.shape:
            columns.append(given.reshape(block.shape))
        else:
            raise ValueError(
                f"baseline[{var.name!r}] has shape {given.shape}; expected {value.shape[1:]} "
                f"(one point) or {value.shape} (one per point)"
            )
    return np.concatenate(columns, 1)


def integrated_gradients(
    idata,
    model,
    *,
    var_name=None,
    inputs=None,
    points=None,
    baseline=None,
    statistic="mean",
    n_steps=50,
    predictive=None,
    num_draws=None,
    random_seed=None,
    progressbar=True,
    extend_inferencedata=True,
    memory_limit=DEFAULT_MEMORY_LIMIT,
    cores=None,
    backend=None,
    dtype=None,
):
    """Integrated Gradients of a predictive statistic, per posterior draw.

    For each draw, ``IG_d(x) = (x_d − b_d) ∫₀¹ ∂F(b + t(x − b))/∂x_d dt``
    attributes ``F(x) − F(b)`` to the inputs along the straight path from the
    baseline b (Gauss–Legendre in t). Keeping the draws gives every
    attribution a posterior distribution.

    Parameters
    ----------
    idata : xarray.DataTree
        Holds the ``posterior`` group of ``model``.
    model : pymc.Model or bambi.Model
        The fitted model (a built bambi model is rebuilt on its data columns;
        see :doc:`/how_to/bambi`). It is not modified.
    var_name : str, optional
        Observed variable to explain; default: the only one.
    inputs : str or list of str, optional
        Containers to attribute to; default as in :func:`pm_sens.sensitivity`.
    points : dict or xarray.Dataset, optional
        Points to explain; default the observed rows. Dask-backed points give
        dask-backed results, computed block by block.
    baseline : float, dict or xarray.Dataset, optional
        Per input container, one point (the container's row shape) or one row per
        point; inputs not given start from their mean over the points (the default
        for all). A number: every input starts there (``0.0``: no spend, no
        dose). Containers that are not inputs stay at each point's own value.
    statistic : str
        The attributed statistic F of each draw's predictive: ``"mean"`` (E[y]),
        ``"variance"``, a likelihood parameter by PyMC name (e.g. ``"sigma"``,
        ``"p"``), or ``"p[k]"`` for class k of a categorical likelihood. A
        vector outcome per point (MvNormal, Multinomial) takes ``"mean"``: each
        outcome's mean, attributed separately (an ``outcome`` dim).
    n_steps : int
        Gauss–Legendre nodes along the path. Not used with one feature in a
        model whose rows do not depend on other rows' inputs: IG is then
        ``F(x) − F(b)`` exactly (completeness), without a path.
    predictive : pm_sens.Predictive, optional
        The per-draw predictive; default from the observed variable.
    num_draws, random_seed : optional
        Thin the posterior as in :func:`pm_sens.sensitivity`.
    progressbar : bool
        Show a progress bar.
    extend_inferencedata : bool
        Add the group ``attribution`` to ``idata`` (True) or return a new DataTree.
    memory_limit : float
        Bytes of working memory for the chunks of draws in memory at once.
    cores : int, optional
        CPU cores to use; None (default): :func:`set_options`'s, every core
        unless set there. The results are the same for any number.
    backend : {"cpu", "jax", "gpu"}, optional
        Where the compiled graphs run; None (default): :func:`set_options`'s,
        ``"cpu"`` unless set there. The results are the same to rounding.
    dtype : {"float64", "float32"}, optional
        What the compiled graphs compute in; None (default):
        :func:`set_options`'s, ``"float64"`` unless set there. ``"float32"``
        on the JAX backends only (see :func:`set_options`).

    Returns
    -------
    xarray.DataTree
        Group ``attribution`` with ``ig`` (``("chain", "draw", point_dim,
        "feature")``), ``completeness_gap`` (``("chain", "draw", point_dim)``:
        ``Σ_d IG_d − (F(x) − F(b))``, zero up to quadrature error; for a
        series whose rows depend on other rows' inputs, ``("chain", "draw")``:
        the attribution is that of the sum of F over the points, the whole
        series moving along the path, and complete over all points), and
        ``value`` / ``baseline_value`` (F at the points and at their baselines,
        same dims as the gap); coordinate ``input_value`` ``(point_dim,
        "feature")`` holds the inputs at the points; dask arrays when the
        points or the posterior are dask-backed. Attrs record the statistic,
        n_steps and the containers treated as inputs. A vector outcome adds
        an ``outcome`` dim after ``point_dim`` to every variable.

    Examples
    --------
    With the quickstart's ``model`` (``examples/quickstart.py``) and its ``idata``:

    Attribute each point's predictive mean, from every input at 0:

    >>> import pm_sens
    >>> idata = pm_sens.integrated_gradients(idata, model, baseline=0.0)
    >>> idata["attribution"]["ig"].dims
    ('chain', 'draw', 'obs_id', 'feature')
    >>> gap = abs(idata["attribution"]["completeness_gap"]).max()
    >>> table = pm_sens.summary(idata, group="attribution")  # ranked by mean |IG|
    """
    n_steps = check_optional_positive_int("n_steps", n_steps) or 50
    request = Request.of(locals())
    ctx = make_context(request)
    check_statistic(ctx.predictive.likelihood, list(ctx.predictive.parameters), statistic)
    check_differentiable("integrated_gradients", stepped_inputs(ctx))
    x = feature_matrix(ctx.points.values, ctx.inputs)
    baseline = _baseline_matrix(baseline, ctx, x)
    outcome = outcome_dims(ctx)  # a vector outcome: each outcome's statistic
    outputs = {
        "ig": ("chain", "draw", "point", *outcome, "feature"),
        "value": ("chain", "draw", "point", *outcome),
        "baseline_value": ("chain", "draw", "point", *outcome),
    }
    measure = partial(ig_measures, statistic=statistic, n_steps=n_steps)
    out = run_local(ctx, measure, outputs, True, per_point={"baseline": baseline})
    point_dims = ["chain", "draw", ctx.points.point_dim, *outcome]
    gap = completeness_gap(out["ig"], out["value"], out["baseline_value"]), point_dims
    if not dependence_of(ctx).local:  # the joint mean's sum: complete over all points
        totals = [out[k].sum(axis=2) for k in ("ig", "value", "baseline_value")]
        gap = completeness_gap(*totals), ["chain", "draw", *outcome]
    dataset = xr.Dataset(
        {
            "ig": ([*point_dims, "feature"], out["ig"]),
            "completeness_gap": (gap[1], gap[0]),
            "value": (point_dims, out["value"]),
            "baseline_value": (point_dims, out["baseline_value"]),
        },
        coords={
            "chain": ctx.draws.chain,
            "draw": ctx.draws.draw,
            **point_coordinates(ctx),
            **outcome_coordinates(ctx),
            "feature": ctx.points.features,
            # the inputs at the points, for plotting attributions against them
            "input_value": ((ctx.points.point_dim, "feature"), np.asarray(x)),
        },
        attrs={
            "method": "integrated_gradients",
            "statistic": statistic,
            "n_steps": n_steps,
            **result_attrs(ctx),
        },
    )
    return attach(request.idata, "attribution", dataset, request.extend_inferencedata)

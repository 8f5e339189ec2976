"""`sensitivity`: local sensitivity measures of a fitted PyMC model, into its DataTree."""

from dataclasses import replace
from functools import partial

import numpy as np
import xarray as xr

from pm_sens import families
from pm_sens._blocks import run_local
from pm_sens._points import (
    constant_columns,
    feature_columns,
    feature_matrix,
    level_values,
    values_at,
)
from pm_sens._runner import (
    check_outputs,
    compiled_for,
    data_for_chunk,
    draw_pass,
    make_context,
    moment_pass,
    per_draw_shape,
    point_coordinates,
    result_attrs,
)
from pm_sens._validate import (
    as_name_list,
    check_bool,
    check_choice,
    check_optional_positive_int,
    check_positive,
    warn,
)
from pm_sens.graph.likelihoods import default_moment_family
from pm_sens.measures.kl import SCHEMES, kl_sensitivity, shift_offsets
from pm_sens.measures.levels import level_divergence, level_sensitivity
from pm_sens.measures.mean_derivatives import absolute_derivative, absolute_expected_derivative
from pm_sens.measures.rsens import rsens2_local, rsens_local
from pm_sens.measures.var import conditional_points, input_gaussian, var_sensitivity

METHODS = ("rsens", "kl", "var", "ead", "aed", "eah", "aeh")
MODES = ("moment", "draw")
#: Working memory per chunk of draws, in bytes, unless ``memory_limit`` says otherwise.
DEFAULT_MEMORY_LIMIT = 1e9


def _matched_family(predictive, mode, family):
    likelihood = predictive.likelihood
    if mode == "draw":
        if family is not None:
            raise ValueError(
                f"family={family!r} is not valid with mode='draw': the per-draw family is "
                f"the likelihood's ({likelihood.name}); family= overrides the moment-matched one"
            )
        return likelihood.draw_family
    if family is None:
        return default_moment_family(likelihood)
    matched = families.get_moment_family(family)
    fits = {
        n: f.support == likelihood.support
        and (f.second_moment != "scale2" or likelihood.heavy_tails is not None)
        for n, f in families.MOMENT_FAMILIES.items()
    }
    if not fits[family]:
        raise ValueError(
            f"family={family!r} does not fit the {likelihood.name} likelihood, whose values "
            f"are {likelihood.support}; valid: {sorted(n for n, ok in fits.items() if ok)}"
        )
    return matched


def _second_moment(family, mode):
    """What the moment-mode graph computes besides the mean (`Family.second_moment`)."""
    return family.second_moment if mode == "moment" else None


def _check_methods(method, interactions):
    methods = as_name_list("method", method)
    for m in methods:
        check_choice("method", m, METHODS)
    second = [m for m in methods if m in ("eah", "aeh")]
    if second and not interactions:
        raise ValueError(f"method={second} needs interactions=True (they are second-order)")
    if interactions:
        implied = {"rsens": "rsens2", "ead": "eah", "aed": "aeh"}
        methods += [implied[m] for m in methods if m in implied]
    return list(dict.fromkeys(methods))


def _check_matched(phi, family):
    """The moment-matched family needs a finite mean and a finite, positive variance.

    The message says which failed, where, and what usually causes it.
    """
    mean = phi[..., 0]
    variance = phi[..., 1] if family.second_moment else np.ones_like(mean)
    checks = [
        (
            ~np.isfinite(mean),
            "mean is not finite",
            "the likelihood's parameters overflow at these inputs (e.g. exp of a large "
            "linear predictor)",
        ),
        (
            np.isinf(variance),
            "variance is infinite",
            "a likelihood without a finite variance (Student-t with nu <= 2, whose default "
            "family='studentt' needs none; Cauchy) or a scale parameter that overflows; "
            "use mode='draw'",
        ),
        (
            ~(np.isfinite(variance) & (variance > 0)),
            "variance is not finite and positive",
            "a scale that underflows to 0 (or is nan) at these inputs; use mode='draw'",
        ),
    ]
    for bad, what, cause in checks:
        if np.any(bad):
            n_points = phi.shape[-2]
            first = int(np.flatnonzero(bad)[0] % n_points)
            raise ValueError(
                f"the predictive {what} at {int(bad.sum())} evaluation(s) (first at point "
                f"{first}), so the moment-matched {family.name} family is undefined: {cause}"
            )
    if family.support in ("binary", "binomial"):
        _warn_saturated(phi, family)


#: below this 1 − p has lost more than ~1e-7 of its digits to rounding
_SATURATED = 1e-9


def _warn_saturated(phi, family):
    """Warn where float64 cannot hold the mixture's p (nor 1 − p).

    Moment mode keeps p, and 1 − p as its own column for Bernoulli and Binomial
    likelihoods (exact near 1 with a logit link); there values are 0 or inaccurate.
    """
    p = phi[..., 0]
    tiny = np.finfo(float).tiny
    if phi.shape[-1] > 1:
        lost = np.minimum(p, phi[..., 1]) < tiny
    else:  # 1 − p computed: its digits go long before it reaches 0
        lost = (p < tiny) | (1 - p < _SATURATED)
    if np.any(lost):
        first = int(np.flatnonzero(lost)[0] % phi.shape[-2])
        warn(
            f"the mixture probability is too close to 0 or 1 for float64 at {int(lost.sum())} "
            f"evaluation(s) (first at point {first}), so the moment-matched {family.name} "
            "family's values there are inaccurate (0 where p rounds to 0 or 1). mode='draw' "
            "works on the logit and stays exact."
        )


def _rsens(ctx, *, mode, family, alpha, order):
    """R-sens (and R-sens2), local values (..., N, D[, D])."""
    second_moment = _second_moment(family, mode)
    # draw-mode R-sens alone is computed inside the graph (`WhitenedNorm`)
    whitened = mode == "draw" and order == 1
    compiled = compiled_for(ctx, mode, order, second_moment, whitened=whitened)
    if mode == "moment":
        moments, fixed = moment_pass(ctx, compiled, ctx.points.values, second_moment, "R-sens")
        _check_matched(moments.phi, family)
        jac = list(moments.jac)
        out = {"rsens": rsens_local(jac, partial(family.whitened, moments.phi, **fixed), alpha)}
        if order == 2:
            whiten = partial(family.whitened_second_order, moments.phi, jac, **fixed)
            out["rsens2"] = rsens2_local(list(moments.hess), whiten, alpha)
        return out

    draw_family = ctx.predictive.likelihood.draw_family
    n, d = ctx.points.n_points, len(ctx.points.features)
    out = {"rsens": np.empty((ctx.draws.count, n, d))}
    if order == 2:
        out["rsens2"] = np.empty((ctx.draws.count, n, d, d))
    varying = compiled.varying

    def all_components(derivatives, n_parameters):
        # the graph returns derivatives only for the parameters that vary
        return [
            derivatives[varying.index(m)] if m in varying else None for m in range(n_parameters)
        ]

    def derivatives(draws):
        """The chunk's derivatives, for the quadratic forms in NumPy."""
        exact = compiled_for(ctx, "draw", 1)
        chunk_draws = ctx.draws.chunk(draws.start, draws.stop)
        chunk = exact(data_for_chunk(exact, ctx.points.values), chunk_draws)
        check_outputs(ctx, exact, draws, chunk)
        return chunk

    def consume(draws, chunk):
        if whitened:
            norm = chunk.norm
            if norm is not None and compiled.norm_is_exact(norm):
                if not np.may_share_memory(norm, out["rsens"][draws]):  # not computed in place
                    out["rsens"][draws] = norm
                if alpha != 1:
                    out["rsens"][draws] *= np.sqrt(alpha)
                return
            # squares that over- or underflowed, or a non-diagonal information
            chunk = derivatives(draws)
        phi, fixed = chunk.per_draw_parameters(draws.stop - draws.start)
        jac = all_components(chunk.jac, phi.shape[-1])
        whiten = partial(draw_family.whitened, phi, **fixed)
        rsens_local(jac, whiten, alpha, out=out["rsens"][draws])
        if order == 2:
            hess = all_components(chunk.hess, phi.shape[-1])
            whiten = partial(draw_family.whitened_second_order, phi, jac, **fixed)
            rsens2_local(hess, whiten, alpha, out=out["rsens2"][draws])

    target = out["rsens"] if whitened else None
    draw_pass(ctx, compiled, ctx.points.values, "R-sens", consume, out=target)
    return {k: per_draw_shape(ctx, v) for k, v in out.items()}


def _feature_steps(x, delta):
    """Δ_d = delta × the feature's sd over all the points (1 where it is constant)."""
    sd = np.asarray(x.std(0))
    return delta * np.where(sd > 0, sd, 1.0)


def _stacked_measure(ctx, compiled, values, blocks, family, measure, width, description):
    """``measure(phi, phi_copies, **fixed)`` on points evaluated with stacked copies.

    ``values`` hold ``blocks`` copies of the points, the points as they are first.
    Returns the measure's (N, width) array in moment mode (the moment-matched
    family), (chain, draw, N, width) in draw mode.
    """
    n = ctx.points.n_points
    if compiled.mode == "moment":
        second_moment = compiled.settings["second_moment"]
        moments, fixed = moment_pass(ctx, compiled, values, second_moment, description)
        phi = moments.phi.reshape(blocks, n, -1)
        _check_matched(phi, family)
        return measure(phi[0], phi[1:], **{k: v[:n] for k, v in fixed.items()})
    out = np.empty((ctx.draws.count, n, width))

    def consume(draws, chunk):
        phi = np.moveaxis(chunk.phi.reshape(-1, blocks, n, chunk.phi.shape[-1]), 1, 0)
        fixed = {
            k: np.broadcast_to(v, chunk.phi.shape[:-1])[..., :n] for k, v in chunk.fixed.items()
        }
        out[draws] = measure(phi[0], phi[1:], **fixed)

    draw_pass(ctx, compiled, values, description, consume)
    return per_draw_shape(ctx, out)


def _kl(ctx, *, mode, family, steps, scheme):
    """Finite-difference KL sensitivity, local values (..., N, D)."""
    x = feature_matrix(ctx.points.values, ctx.inputs)
    offsets = shift_offsets(steps, scheme)
    rows = np.concatenate([x, *(x + offset for offset in offsets)])
    second_moment = _second_moment(family, mode)
    compiled = compiled_for(ctx, mode, 0, second_moment, rows=len(rows))
    values = values_at(ctx.points, ctx.inputs, rows)
    measure = partial(kl_sensitivity, family.kl_divergence, steps=steps, scheme=scheme)
    kl = _stacked_measure(
        ctx, compiled, values, len(offsets) + 1, family, measure, len(steps), "KL"
    )
    return {"kl": kl}


def _mean_gradient(ctx, *, mode, order):
    """First (and second) derivatives of the predictive mean, (..., N, D[, D])."""
    compiled = compiled_for(ctx, mode, order, statistic="mean")
    if mode == "moment":
        moments, _ = moment_pass(ctx, compiled, ctx.points.values, False, "mean derivatives")
        out = {"mean_jac": moments.jac[0]}
        if order == 2:
            out["mean_hess"] = moments.hess[0]
        return out
    n, d = ctx.points.n_points, len(ctx.points.features)
    out = {"mean_jac": np.empty((ctx.draws.count, n, d))}
    if order == 2:
        out["mean_hess"] = np.empty((ctx.draws.count, n, d, d))

    def consume(draws, chunk):
        out["mean_jac"][draws] = chunk.jac[0]
        if order == 2:
            out["mean_hess"][draws] = chunk.hess[0]

    draw_pass(ctx, compiled, ctx.points.values, "mean derivatives", consume)
    return {k: per_draw_shape(ctx, v) for k, v in out.items()}


def _mean_measures(gradient, methods, point_axis):
    """EAD/AED (and EAH/AEH) from the derivatives of the predictive mean."""
    jac, hess = gradient["mean_jac"], gradient.get("mean_hess")
    results = {
        "ead": lambda: absolute_derivative(jac),
        "aed": lambda: absolute_expected_derivative(jac, point_axis),
        "eah": lambda: absolute_derivative(hess),
        "aeh": lambda: absolute_expected_derivative(hess, point_axis),
    }
    return {m: results[m]() for m in methods if m in results}


def _var(ctx, *, mode, n_nodes, gaussian):
    """VAR: variance of the predictive mean along each feature's conditional."""
    x = feature_matrix(ctx.points.values, ctx.inputs)
    grid = conditional_points(x, n_nodes, gaussian)  # (Q, D, N, D)
    values = values_at(ctx.points, ctx.inputs, grid.reshape(-1, x.shape[1]))
    compiled = compiled_for(ctx, mode, 0, statistic="mean", rows=grid[..., 0].size)
    if mode == "moment":
        moments, _ = moment_pass(ctx, compiled, values, False, "VAR")
        return {"var": var_sensitivity(moments.phi[:, 0].reshape(grid.shape[:3]), n_nodes)}
    out = np.empty((ctx.draws.count, *x.shape))

    def consume(draws, chunk):
        mean = chunk.phi[..., 0].reshape(-1, *grid.shape[:3])
        out[draws] = var_sensitivity(mean, n_nodes)

    draw_pass(ctx, compiled, values, "VAR", consume)
    return {"var": per_draw_shape(ctx, out)}


def _levels(ctx, *, mode, family, alpha):
    """Level divergences of each categorical input, and their per-point summary.

    For input ``g``: ``levels_g`` (..., N, L), the divergence ``sqrt(2 D_α)``
    from each point's own level to every level present among the points
    (``D_1`` the KL), and ``level_g`` (..., N), its mean over the other levels
    weighted by their frequency.
    """
    compiled = compiled_for(ctx, mode, 0, _second_moment(family, mode))
    n = ctx.points.n_points
    divergence = (
        family.kl_divergence if alpha == 1 else partial(family.renyi_divergence, alpha=alpha)
    )
    measure = partial(level_divergence, divergence)
    out = {}
    for level in ctx.levels:
        chosen = np.flatnonzero(level.weights)
        values = level_values(ctx.points, ctx.predictive, level, chosen)
        divergence = _stacked_measure(
            ctx,
            compiled,
            values,
            len(chosen) + 1,
            family,
            measure,
            len(chosen),
            f"levels of {level.label}",
        )
        own = np.searchsorted(chosen, level.own)
        divergence[..., np.arange(n), own] = 0.0  # the own level, exactly
        out[f"levels_{level.label}"] = divergence
        out[f"level_{level.label}"] = level_sensitivity(divergence, own, level.weights[chosen])
    return out


#: the families with a closed-form Rényi divergence of any order, for messages
_RENYI_FAMILIES = sorted(
    {f.name for f in families.MOMENT_FAMILIES.values() if f.renyi_divergence and f.renyi_above_one}
)


def _levels_for_alpha(ctx, alpha, chosen, family):
    """The context without its categorical inputs if the family lacks a Rényi divergence.

    At ``alpha != 1`` level sensitivity needs the family's Rényi divergence of
    that order (above 1 only closed forms: `pm_sens.families._renyi`); without
    it they are left out with a warning, or, chosen by the user (``inputs=``,
    ``categorical=``) they are an error then.
    """
    if not ctx.levels or alpha == 1:
        return ctx
    if family.renyi_divergence is not None and (alpha < 1 or family.renyi_above_one):
        return ctx
    labels = [level.label for level in ctx.levels]
    why = (
        f"their level sensitivity at alpha={alpha!r} is a Rényi divergence, which pm_sens "
        f"has for every alpha > 0 for the {_RENYI_FAMILIES} families (closed forms), and "
        f"for 0 < alpha < 1 for the others, not for the {family.name!r} one at this alpha"
        " (above 1 its integral can lie outside both laws, where no rule built from them "
        "reaches; its KL, at alpha=1, it has)"
    )
    if chosen or not ctx.inputs:
        raise ValueError(
            f"alpha={alpha!r} is not valid with the categorical inputs {labels}: {why}; "
            "pass alpha=1" + (", or inputs= without them" if ctx.inputs else "")
        )
    warn(f"the categorical inputs {labels} are left out: {why}; pass alpha=1 to rank them")
    return replace(ctx, levels=[])


def _dims(name, mode, point_dim):
    sample = [] if mode == "moment" else ["chain", "draw"]
    points = [] if name in ("aed", "aeh") else [point_dim]
    pairs = ["feature_bis"] if name in ("rsens2", "eah", "aeh", "mean_hess") else []
    return [*sample, *points, "feature", *pairs]


#: Methods whose value for a categorical input is its level sensitivity; the
#: others (derivatives of the mean, VAR, second order) have none for a level change.
LEVEL_METHODS = ("rsens", "kl")


def _shown(ctx):
    """Which derivative columns are features of the result.

    One-hot columns declared as a categorical input are not: the input is.
    """
    grouped = {
        label
        for level in ctx.levels
        if level.columns is not None
        for label in _column_labels(ctx, level)
    }
    return np.array([f not in grouped for f in ctx.points.features], dtype=bool)


def _column_labels(ctx, level):
    """Feature labels of a one-hot group's columns."""
    owners = feature_columns(ctx.points, ctx.inputs)
    return [ctx.points.features[owners.index(column)] for column in level.columns]


def _feature_kinds(ctx):
    """What each feature's values are: ``"rate"``, ``"constant"`` or ``"level"``.

    ``"rate"``: per unit of a continuous input; ``"constant"``: a column that is
    the same in every row of the data and of the points; ``"level"``: a
    categorical input.
    """
    constant = constant_columns(ctx.predictive, ctx.inputs, ctx.points)[_shown(ctx)]
    return [*np.where(constant, "constant", "rate"), *(["level"] * len(ctx.levels))]


def _empty_local(name, mode, ctx):
    """A local result with no feature columns (every input is categorical)."""
    sizes = {"chain": len(ctx.draws.chain), "draw": len(ctx.draws.draw)}
    sizes.update(point=ctx.points.n_points, feature=0, feature_bis=0)
    return np.empty([sizes[d] for d in _dims(name, mode, "point")])


def _with_levels(results, levels, ctx, mode, kinds):
    """Results with one column per categorical input appended, constant columns NaN.

    A categorical input's column holds its level sensitivity for the methods
    that have one (`LEVEL_METHODS`), NaN for the others.
    """
    shown = _shown(ctx)
    constant = np.asarray(kinds[: shown.sum()]) == "constant"
    out = {}
    for name, value in results.items():
        dims = _dims(name, mode, "point")
        axes = [dims.index(d) for d in ("feature", "feature_bis") if d in dims]
        if not shown.all():
            for axis in axes:
                value = np.compress(shown, value, axis=axis)
        if constant.any():  # the arrays are the measure's own: no copy needed
            value = np.asarray(value, dtype=float)
            np.putmask(
                value, np.broadcast_to(_along(constant, axes, value.ndim), value.shape), np.nan
            )
        for level in ctx.levels:
            column = levels[f"level_{level.label}"] if name in LEVEL_METHODS else None
            value = _append_column(value, column, axes)
        out[name] = value
    return out


def _along(flags, axes, ndim):
    """``flags`` (D,) broadcast along each of ``axes`` of an ndim array, or-ed."""
    mask = np.zeros((1,) * ndim, dtype=bool)
    for axis in axes:
        shape = [1] * ndim
        shape[axis] = len(flags)
        mask = mask | np.reshape(flags, shape)
    return mask


def _append_column(value, column, axes):
    """One more feature (and feature_bis) column: ``column`` on the feature axis, else NaN."""
    first = axes[0]
    shape = list(value.shape)
    shape[first] = 1
    new = np.full(shape, np.nan) if column is None else np.expand_dims(column, first)
    value = np.concatenate([value, new], axis=first)
    if len(axes) == 2:
        shape = list(value.shape)
        shape[axes[1]] = 1
        value = np.concatenate([value, np.full(shape, np.nan)], axis=axes[1])
    return value


def _nan_reasons(name, kinds):
    """The variable's attrs: why some of its feature columns are NaN, if any are."""
    reasons = []
    if "constant" in kinds:
        reasons.append("features of kind 'constant' take one value at every point")
    pairs = name in ("rsens2", "eah", "aeh")
    if "level" in kinds and (pairs or name not in LEVEL_METHODS):
        reasons.append(
            f"categorical inputs (feature_kind 'level') have no {name}"
            + (" pairs yet" if pairs else "")
            + "; their level sensitivity is in levels_<input>"
        )
    return {"nan": "; ".join(reasons)} if reasons else {}


def result_dataset(results, ctx, mode, attrs, kinds, levels=None):
    """Local measures as an xarray Dataset with the documented dims and coords."""
    points = ctx.points
    n = points.n_points
    shown = _shown(ctx)
    features = [
        *np.asarray(points.features, dtype=object)[shown],
        *(level.label for level in ctx.levels),
    ]
    inputs = feature_matrix(points.values, ctx.inputs, n)[:, shown]
    own_levels = [level.own_values[:, None] for level in ctx.levels]
    coords = {
        **point_coordinates(ctx),
        "feature": features,
        "feature_kind": ("feature", kinds),
        # the inputs at the points, for plotting local values against them
        "input_value": ((points.point_dim, "feature"), np.concatenate([inputs, *own_levels], 1)),
    }
    if mode == "draw":
        coords.update(chain=ctx.draws.chain, draw=ctx.draws.draw)
    data = {
        name: (_dims(name, mode, points.point_dim), v, _nan_reasons(name, kinds))
        for name, v in results.items()
    }
    sample = [] if mode == "moment" else ["chain", "draw"]
    for level in ctx.levels:
        dim = f"{level.label}_level"
        coords[dim] = level.levels[np.flatnonzero(level.weights)]
        data[f"levels_{level.label}"] = (
            [*sample, points.point_dim, dim],
            levels[f"levels_{level.label}"],
        )
    if any("feature_bis" in dims for dims, *_ in data.values()):
        coords["feature_bis"] = features
    return xr.Dataset(data, coords=coords, attrs=attrs)


def attach(idata, group, dataset, extend_inferencedata):
    """Add ``group`` to ``idata`` and return it, or a new DataTree with only it."""
    if not extend_inferencedata:
        return xr.DataTree.from_dict({group: dataset})
    idata[group] = xr.DataTree(dataset)
    return idata


def sensitivity(
    idata,
    model,
    *,
    var_name=None,
    inputs=None,
    categorical=None,
    points=None,
    predictive=None,
    method="rsens",
    mode="moment",
    alpha=1.0,
    interactions=False,
    family=None,
    delta=1e-4,
    kl_scheme="forward",
    var_nodes=11,
    num_draws=None,
    random_seed=None,
    progressbar=True,
    extend_inferencedata=True,
    memory_limit=DEFAULT_MEMORY_LIMIT,
):
    """Local sensitivity of the posterior predictive to each input.

    R-sens measures how fast the predictive distribution at a point changes
    (in Rényi divergence of order ``alpha``) as one input moves:
    ``sqrt(alpha · Jᵀ I J)`` with ``J`` the derivative of the family's
    mean–variance parameters and ``I`` their Fisher information. Global
    importance is its mean over points (see :func:`pm_sens.summary`). The other
    methods cross-check it (``"kl"``) or leave the uncertainty out (``"var"``,
    ``"ead"``, ``"aed"``).

    Parameters
    ----------
    idata : xarray.DataTree
        Holds the ``posterior`` group of ``model``, as returned by ``pm.sample``.
    model : pymc.Model or bambi.Model
        The fitted model (a built bambi model is rebuilt on its data columns;
        see the user guide). It is not modified.
    var_name : str, optional
        Observed variable to explain; default: the model's only observed variable.
    inputs : str or list of str, optional
        ``pm.Data`` containers to explain; default: every container with one
        row per observation that the observed variable depends on. Float
        containers are differentiated (a rate per unit of the input). Integer
        containers (group indices, treatment arms, flags) are categorical: each
        point's predictive at its own level is compared with the predictive at
        every other level (``sqrt(2 KL)``; see Returns). Their valid levels are
        ``0 .. n − 1`` for an index into a variable of length n, else the values
        the container holds.
    categorical : dict, optional
        Feature columns that together are one categorical input, as
        ``{name: [feature labels]}``, e.g. the one-hot columns of a design
        matrix, ``{"species": ["X[b]", "X[c]"]}``. Its levels are the distinct
        rows those columns take in the model's data; it gets level sensitivity
        under ``name`` in place of a rate per column.
    points : dict or xarray.Dataset, optional
        Where to evaluate, as ``{container_name: array}`` (rows = points);
        containers not given keep their current values. Default: the observed rows.
        Dask-backed points (e.g. ``ds.chunk({"obs": 10_000})``) give dask-backed
        local results, computed block by block (see the user guide).
    predictive : pm_sens.Predictive, optional
        Describes the per-draw predictive; default
        ``Predictive.from_observed(model, var_name)``.
    method : str or list of str
        Any of ``"rsens"`` (R-sens), ``"kl"`` (finite-difference KL, 2019 eq. 2),
        ``"var"`` (variance of the predictive mean along each input's Gaussian
        conditional, 2019 eq. 3–5), ``"ead"`` / ``"aed"`` (expected absolute /
        absolute expected derivative of the predictive mean) and, with
        ``interactions=True``, ``"eah"`` / ``"aeh"`` (their cross-derivative
        versions). A list computes several in one call.
    mode : {"moment", "draw"}
        ``"moment"``: the posterior predictive mixture, matched by moments to one
        family (user guide, "Moment mode and draw mode"); the mean-based methods
        use the mixture mean.
        ``"draw"``: the likelihood of each posterior draw, giving the posterior
        distribution of each measure.
    alpha : float
        Rényi order, > 0; R-sens scales as ``sqrt(alpha)`` (1: KL).
    interactions : bool
        Also compute the second-order measures: R-sens2 with ``"rsens"``, EAH
        with ``"ead"``, AEH with ``"aed"``. (The interaction paper's KL-diff²
        is √2 × R-sens2 with ``alpha=1``: its definition keeps a factor 2 in
        the square root.)
    family : str, optional
        Override the moment-matched family (e.g. ``"poisson"`` for a Poisson
        likelihood instead of the negative binomial); must fit the likelihood's support.
    delta : float
        ``"kl"`` step, relative to each input's standard deviation over the points,
        in (0, 1].
        Agreement with R-sens is best for 1e-6 ≲ delta ≲ 1e-3; the forward
        scheme's error depends on the model's curvature (up to ~3e-3 on a GP
        at the default), so prefer ``kl_scheme="central"`` for cross-checks
        (see the user guide).
    kl_scheme : {"forward", "central"}
        ``"kl"`` differences: forward (the paper's, error O(delta)) or central
        (error O(delta²), twice the evaluations).
    var_nodes : int
        Gauss–Hermite nodes for ``"var"``.
    num_draws : int, optional
        Use about this many posterior draws (``num_draws // n_chains`` per chain,
        the same draw positions in every chain), chosen with ``random_seed``.
    random_seed : int or numpy.random.Generator, optional
        Seed for thinning.
    progressbar : bool
        Show progress bars over the draws; nothing is printed when False.
    extend_inferencedata : bool
        True: add the group ``sensitivity`` to ``idata`` (replacing an existing
        one) and return ``idata``. False: return a new DataTree holding only it.
    memory_limit : float
        Bytes of working memory per chunk of draws (default 1e9).

    Returns
    -------
    xarray.DataTree
        Group ``sensitivity``; with ``S = ("chain", "draw")`` in draw mode and
        nothing in moment mode, and ``point_dim`` the inputs' row dimension
        (``"point"`` if unnamed):

        - ``rsens``, ``kl``, ``var``, ``ead``: ``(*S, point_dim, "feature")``;
        - ``rsens2``, ``eah``: ``(*S, point_dim, "feature", "feature_bis")``,
          symmetric, the diagonal being each input's curvature;
        - ``aed``: ``(*S, "feature")`` and ``aeh``: ``(*S, "feature",
          "feature_bis")`` — they average the derivative over the points
          before taking its absolute value, so they have no point dimension;
        - for each categorical input ``g``: ``levels_g``: ``(*S, point_dim,
          "g_level")``, the divergence ``sqrt(2 KL(p(·|x) ‖ p(·|x, g = l)))``
          from each point's predictive to the same point at level ``l`` (0 at
          its own level), for the levels present among the points.

        The coordinate ``feature_kind`` says what each feature's values are:
        ``"rate"`` (per unit of a continuous input), ``"level"`` (a categorical
        input: its ``rsens`` and ``kl`` values are the mean of ``levels_g`` over
        the other levels, weighted by the levels' frequency among the points, so
        common levels count more; methods with no level version give NaN) or
        ``"constant"`` (a column that is the same in every row of the data and the points, such
        as a design matrix's intercept column: NaN, as no variation between
        points can come from it).

        Local values are dask arrays when the points, or in draw mode the
        posterior, are dask-backed. Attrs record the methods, mode, alpha,
        family, likelihood, var_name,
        fisher (``"closed form"``, or the summation or quadrature route of a
        likelihood without one, with ``rule_mass_error``: the largest
        ``|Σ weights − 1|`` of its rules, i.e. how well they integrate the
        likelihood's density), delta, kl_scheme,
        var_nodes and ``pm_sens_version``.

    Examples
    --------
    >>> import pm_sens
    >>> idata = pm_sens.sensitivity(idata, model)  # doctest: +SKIP
    >>> pm_sens.summary(idata)  # doctest: +SKIP
    """
    order = 2 if check_bool("interactions", interactions) else 1
    methods = _check_methods(method, order == 2)
    check_choice("mode", mode, MODES)
    alpha = check_positive("alpha", alpha)
    delta = check_positive("delta", delta)
    if delta > 1:
        raise ValueError(
            f"delta={delta!r} is not valid; it must be in (0, 1]: it is the finite-difference "
            "step in standard deviations of each input (best 1e-6 to 1e-3)"
        )
    check_choice("kl_scheme", kl_scheme, SCHEMES)
    var_nodes = check_optional_positive_int("var_nodes", var_nodes) or 11
    ctx = make_context(
        idata,
        model,
        var_name=var_name,
        inputs=inputs,
        points=points,
        predictive=predictive,
        num_draws=num_draws,
        random_seed=random_seed,
        memory_limit=memory_limit,
        progressbar=progressbar,
        extend_inferencedata=extend_inferencedata,
        levels=True,
        categorical=categorical,
    )
    matched = _matched_family(ctx.predictive, mode, family)
    chosen = inputs is not None or categorical is not None
    ctx = _levels_for_alpha(ctx, alpha, chosen, matched)

    generic = ctx.predictive.likelihood.generic
    if generic is not None:
        generic.mass_error = 0.0  # reported in attrs: how well its rules integrate

    def local(measure, names, **settings):
        # in memory, or dask arrays built block by block for lazy points / draws
        dims = {name: _dims(name, mode, "point") for name in names}
        return run_local(ctx, partial(measure, mode=mode, **settings), dims, mode == "draw")

    x = feature_matrix(ctx.points.values, ctx.inputs, ctx.points.n_points)  # lazy for lazy points
    if not ctx.inputs:
        results = {m: _empty_local(m, mode, ctx) for m in methods}
    else:
        results = {}
        if "rsens" in methods:
            names = ["rsens", "rsens2"][:order]
            results.update(local(_rsens, names, family=matched, alpha=alpha, order=order))
        if "kl" in methods:
            steps = _feature_steps(x, delta)
            results.update(local(_kl, ["kl"], family=matched, steps=steps, scheme=kl_scheme))
        if {"ead", "aed", "eah", "aeh"} & set(methods):
            names = ["mean_jac", "mean_hess"][:order]
            gradient = local(_mean_gradient, names, order=order)
            results.update(_mean_measures(gradient, methods, 0 if mode == "moment" else 2))
        if "var" in methods:
            gaussian = input_gaussian(x)
            results.update(local(_var, ["var"], n_nodes=var_nodes, gaussian=gaussian))
    results = {m: results[m] for m in methods}
    levels = {}
    if ctx.levels:
        dims = {f"level_{level.label}": ["point"] for level in ctx.levels}
        dims.update(
            {f"levels_{level.label}": ["point", f"{level.label}_level"] for level in ctx.levels}
        )
        if mode == "draw":
            dims = {name: ["chain", "draw", *d] for name, d in dims.items()}
        levels = run_local(
            ctx, partial(_levels, mode=mode, family=matched, alpha=alpha), dims, mode == "draw"
        )
    # one look at the points (a pass over them when they are dask-backed)
    kinds = _feature_kinds(ctx)
    results = _with_levels(results, levels, ctx, mode, kinds)
    # the moment-matched families all have closed forms
    fisher_note = "closed form" if mode == "moment" else ctx.predictive.likelihood.route

    attrs = {
        "method": methods,
        "mode": mode,
        "alpha": alpha,
        "family": matched.name,
        "parametrization": "mean-variance",
        "fisher": fisher_note,
        "delta": delta,
        "kl_scheme": kl_scheme,
        "var_nodes": var_nodes,
        **result_attrs(ctx),
    }
    if generic is not None:
        attrs["rule_mass_error"] = generic.mass_error
        if generic.mass_error > 1e-6:
            warn(
                f"the quadrature of the {generic.name!r} likelihood integrates its density to "
                f"1 only within {generic.mass_error:.2g}, so its results may be as inaccurate "
                "(a density that jumps inside its support, e.g. a pm.CustomDist on a bounded "
                "support with no default transform)",
            )
    return attach(
        idata,
        "sensitivity",
        result_dataset(results, ctx, mode, attrs, kinds, levels),
        extend_inferencedata,
    )

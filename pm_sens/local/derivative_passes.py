"""The passes over draws behind `sensitivity`'s measures, one function per measure.

Each takes the call's context and returns ``{name: local array}``; the math
per chunk is `pm_sens.measures`'. Also the checks on the moment-matched family.
"""

from functools import partial

import numpy as np

from pm_sens._core.arguments import warn
from pm_sens._core.points import feature_matrix, values_at
from pm_sens._core.results import per_draw_shape
from pm_sens._run.chunks import collect_draws, draw_pass, moment_pass
from pm_sens._run.compiling import colors_for, compiled_for, dependence_of
from pm_sens._run.output_checks import check_outputs
from pm_sens.families._base import varying_parameters, whitened_by
from pm_sens.graph.compile.compiled import data_for_chunk
from pm_sens.measures.integrated_gradients import (
    integrated_gradients_at_rows,
    one_feature_attribution,
    path_points,
)
from pm_sens.measures.mean_derivatives import absolute_derivative, absolute_expected_derivative
from pm_sens.measures.rsens import joint_over_colors, rsens2_local, rsens_local
from pm_sens.measures.var import conditional_points, var_sensitivity


def second_moment_of(family, mode):
    """What the moment-mode graph computes besides the mean (`Family.second_moment`)."""
    return family.second_moment if mode == "moment" else None


def check_matched(phi, family):
    """The moment-matched family needs a finite mean and a finite, positive variance.

    The message says which failed, where, and what usually causes it. A point
    mass (a count law of mean 0: `Family.point_mass`) is not checked: it is
    reported as a degenerate point (`pm_sens.local.stacked_passes.degenerate_points`).
    """
    mean = phi[..., 0]
    variance = phi[..., 1] if family.second_moment else np.ones_like(mean)
    variance = np.where(family.point_mass(phi), 1.0, variance)
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
            "a scale that underflows to 0 (or is nan) at these inputs, or a predictive "
            "that is one value there (a row with 0 trials); use mode='draw'",
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


def rsens_measures(ctx, *, mode, family, alpha, order):
    """R-sens (and R-sens2), local values (..., N, D[, D])."""
    second_moment = second_moment_of(family, mode)
    if not dependence_of(ctx).local:
        return _joint_rsens(ctx, mode=mode, family=family, alpha=alpha, order=order)
    # draw-mode R-sens alone is computed inside the graph (`WhitenedNorm`)
    whitened = mode == "draw" and order == 1
    compiled = compiled_for(ctx, mode, order, second_moment, whitened=whitened)
    if mode == "moment":
        moments, fixed = moment_pass(ctx, compiled, ctx.points.values, second_moment, "R-sens")
        return _moment_rsens(moments, fixed, family, alpha, order)
    draw_family = ctx.predictive.likelihood.draw_family
    out = _draw_arrays(ctx, order)

    def into_draws(draws, chunk):  # the chunk's own draws only: run in its thread
        if whitened:
            norm = chunk.norm
            if norm is not None and compiled.norm_is_exact(chunk.norm_range):
                if not np.may_share_memory(norm, out["rsens"][draws]):  # not computed in place
                    out["rsens"][draws] = norm
                if alpha != 1:
                    out["rsens"][draws] *= np.sqrt(alpha)
                return
            # squares that over- or underflowed, or a non-diagonal information
            whitening, chunk = chunk.whitening, _chunk_derivatives(ctx, draws)
            chunk.whitening = whitening
        into = [out[k][draws] if k in out else None for k in ("rsens", "rsens2")]
        _draw_rsens(compiled, chunk, draws, draw_family, alpha, order, into)

    target = out["rsens"] if whitened else None
    draw_pass(ctx, compiled, ctx.points.values, "R-sens", prepare=into_draws, out=target)
    return {k: per_draw_shape(ctx, v) for k, v in out.items()}


def _moment_rsens(moments, fixed, family, alpha, order):
    """Moment-mode R-sens (and R-sens2) from the mixture's moments and derivatives."""
    check_matched(moments.phi, family)
    # a matched family held as raw moments (the multivariate Normal's) maps them first
    jac = list(moments.jac)
    matched, phi, mapped = family.in_mean_variance(moments.phi, jac, trailing=1)
    out = {"rsens": rsens_local(mapped, partial(matched.whitened, phi, **fixed), alpha)}
    if order == 2:
        whiten = partial(family.whitened_second_order, moments.phi, jac, **fixed)
        out["rsens2"] = rsens2_local(list(moments.hess), whiten, alpha)
    return out


def _draw_arrays(ctx, order):
    """Draw-mode R-sens (and R-sens2) arrays to fill, (S, N, D[, D])."""
    n, d = ctx.points.n_points, len(ctx.points.features)
    out = {"rsens": np.empty((ctx.draws.count, n, d))}
    if order == 2:
        out["rsens2"] = np.empty((ctx.draws.count, n, d, d))
    return out


def _draw_rsens(compiled, chunk, draws, family, alpha, order, into=(None, None)):
    """A chunk's per-draw R-sens and R-sens2 (None at order 1), written ``into`` if given.

    The varying parameters' whitening is computed once, for both orders (the
    chunk's own where it holds one: `ChunkOutputs.whitening`).
    """
    phi, fixed = chunk.per_draw_parameters(draws.stop - draws.start)
    jac = all_components(compiled, chunk.jac, phi.shape[-1])
    whitening = chunk.whitening
    if whitening is None:
        whitening = family.whitening(phi, varying_parameters(jac), **fixed)
    rsens = rsens_local(jac, partial(whitened_by, *whitening), alpha, out=into[0])
    if order == 1:
        return rsens, None
    hess = all_components(compiled, chunk.hess, phi.shape[-1])
    whiten = partial(family.whitened_second_order, phi, jac, whitening=whitening, **fixed)
    return rsens, rsens2_local(hess, whiten, alpha, out=into[1])


def _joint_rsens(ctx, *, mode, family, alpha, order):
    """R-sens (and R-sens2) of the joint predictive of a series whose rows depend on each other.

    Colored derivatives (`pm_sens.graph.model.dependence`) give each input row's
    derivatives of every row it moves, with that row's parameters; their
    values are combined over the colours (`joint_over_colors`).
    (..., N, D[, D]).
    """
    colors = colors_for(ctx)
    second_moment = second_moment_of(family, mode)
    compiled = compiled_for(ctx, mode, order, second_moment, colored=True)
    point_axis = {"rsens": -2, "rsens2": -3}
    if mode == "moment":
        moments, fixed = moment_pass(ctx, compiled, ctx.points.values, second_moment, "R-sens")
        out = _moment_rsens(moments, fixed, family, alpha, order)
        return {k: joint_over_colors(v, colors, point_axis[k]) for k, v in out.items()}
    draw_family = ctx.predictive.likelihood.draw_family
    out = _draw_arrays(ctx, order)

    def into_draws(draws, chunk):  # the chunk's own draws only: run in its thread
        values = _draw_rsens(compiled, chunk, draws, draw_family, alpha, order)
        for name, value in zip(("rsens", "rsens2"), values, strict=True):
            if value is not None:
                joint_over_colors(value, colors, point_axis[name], out=out[name][draws])

    draw_pass(
        ctx, compiled, ctx.points.values, "R-sens of the joint predictive", prepare=into_draws
    )
    return {k: per_draw_shape(ctx, v) for k, v in out.items()}


def _chunk_derivatives(ctx, draws):
    """The derivatives of the draws ``draws`` (a slice), for the quadratic forms in NumPy."""
    exact = compiled_for(ctx, "draw", 1)
    chunk = exact(
        data_for_chunk(exact, ctx.points.values), ctx.draws.chunk(draws.start, draws.stop)
    )
    check_outputs(ctx, exact, draws, chunk)
    return chunk


def rsens_point_means(ctx, *, alpha):
    """Draw-mode R-sens, each draw's mean over the points (chain, draw, D).

    The points are averaged inside the graph (`WhitenedNorm` with point
    means), so the local values never leave it; a chunk whose squares over- or
    underflowed, whose parameters are not finite, or whose information is not
    diagonal, is computed from its derivatives in NumPy, then averaged.
    """
    compiled = compiled_for(ctx, "draw", 1, whitened="means")
    family = ctx.predictive.likelihood.draw_family
    means = np.empty((ctx.draws.count, len(ctx.points.features)))

    def into_draws(draws, chunk):  # the chunk's own draws only: run in its thread
        if chunk.norm is not None and compiled.norm_is_exact(chunk.norm_range):
            means[draws] = chunk.norm
            return
        whitening, chunk = chunk.whitening, _chunk_derivatives(ctx, draws)
        chunk.whitening = whitening
        means[draws] = _draw_rsens(compiled, chunk, draws, family, 1.0, 1)[0].mean(1)

    draw_pass(ctx, compiled, ctx.points.values, "R-sens, mean over points", prepare=into_draws)
    return per_draw_shape(ctx, means * np.sqrt(alpha))


def all_components(compiled, derivatives, n_parameters):
    """Draw mode: derivatives of every parameter, None for those that do not vary.

    The graph returns them only for ``compiled.varying``.
    """
    varying = compiled.varying
    return [derivatives[varying.index(m)] if m in varying else None for m in range(n_parameters)]


def mean_gradient(ctx, *, mode, order):
    """First (and second) derivatives of the predictive mean, (..., N, D[, D])."""
    compiled = compiled_for(ctx, mode, order, statistic="mean")
    if mode == "moment":
        moments, _ = moment_pass(ctx, compiled, ctx.points.values, False, "mean derivatives")
        out = {"mean_jac": moments.jac[0]}
        if order == 2:
            out["mean_hess"] = moments.hess[0]
        return out
    n, d = ctx.points.n_points, len(ctx.points.features)
    shapes = {"mean_jac": (n, d), "mean_hess": (n, d, d)}
    shapes = dict(list(shapes.items())[:order])
    return collect_draws(
        ctx, compiled, ctx.points.values, "mean derivatives", _mean_derivatives, shapes
    )


def _mean_derivatives(chunk, size):
    """The chunk's derivatives of the per-draw mean, (size, N, D[, D])."""
    out = {"mean_jac": chunk.jac[0]}
    if chunk.hess:
        out["mean_hess"] = chunk.hess[0]
    return out


def ig_measures(ctx, baseline, *, statistic, n_steps):
    """Integrated Gradients per draw and point, with the statistic at the points and baselines.

    One evaluation of the statistic and its gradient at every path point, point
    and baseline (`integrated_gradients_at_rows`). With one feature in a local
    model, IG is ``F(x) − F(b)`` (`one_feature_attribution`): the statistic
    alone at the points and baselines, no path. A vector outcome's statistic
    has one value per outcome: an outcome axis after the point axis.
    """
    x = feature_matrix(ctx.points.values, ctx.inputs)
    n, d = x.shape
    steps = 0 if d == 1 and dependence_of(ctx).local else n_steps
    path = path_points(x, baseline, steps).reshape(-1, d) if steps else x[:0]
    rows = np.concatenate([path, x, baseline])
    values = values_at(ctx.points, ctx.inputs, rows)
    compiled = compiled_for(ctx, "draw", int(steps > 0), statistic=statistic, rows=len(rows))
    outcomes = ctx.predictive.outcome_shape
    per_chunk = partial(
        _ig_of_chunk,
        x=x,
        baseline=baseline,
        n_steps=steps,
        varying=compiled.varying,
        vector=bool(outcomes),
    )
    shapes = {"ig": (n, *outcomes, d), "value": (n, *outcomes), "baseline_value": (n, *outcomes)}
    return collect_draws(ctx, compiled, values, "Integrated Gradients", per_chunk, shapes)


def _ig_of_chunk(chunk, size, *, x, baseline, n_steps, varying, vector):
    """IG of each of the statistic's components (one per outcome); zero where one is constant."""
    rows = chunk.phi.shape[-2]
    gradients = dict(zip(varying, chunk.jac, strict=True)) if n_steps else {}

    def attribution(k):
        values = np.broadcast_to(chunk.phi[..., k], (size, rows))
        if not n_steps:
            return one_feature_attribution(values, len(x))
        gradient = gradients.get(k)
        if gradient is None:  # a constant component
            gradient = np.zeros((size, rows, x.shape[1]))
        return integrated_gradients_at_rows(values, gradient, x, baseline, n_steps)

    parts = [attribution(k) for k in range(chunk.phi.shape[-1])]
    if not vector:
        return parts[0]
    return {name: np.stack([part[name] for part in parts], 2) for name in parts[0]}


def mean_measures(gradient, methods, point_axis):
    """EAD/AED (and EAH/AEH) from the derivatives of the predictive mean."""
    jac, hess = gradient["mean_jac"], gradient.get("mean_hess")
    results = {
        "ead": lambda: absolute_derivative(jac),
        "aed": lambda: absolute_expected_derivative(jac, point_axis),
        "eah": lambda: absolute_derivative(hess),
        "aeh": lambda: absolute_expected_derivative(hess, point_axis),
    }
    return {m: results[m]() for m in methods if m in results}


def var_measures(ctx, *, mode, n_nodes, gaussian):
    """VAR: variance of the predictive mean along each feature's conditional."""
    x = feature_matrix(ctx.points.values, ctx.inputs)
    grid = conditional_points(x, n_nodes, gaussian)  # (Q, D, N, D)
    values = values_at(ctx.points, ctx.inputs, grid.reshape(-1, x.shape[1]))
    compiled = compiled_for(ctx, mode, 0, statistic="mean", rows=grid[..., 0].size)
    if mode == "moment":
        moments, _ = moment_pass(ctx, compiled, values, False, "VAR")
        return {"var": var_sensitivity(moments.phi[:, 0].reshape(grid.shape[:3]), n_nodes)}
    per_chunk = partial(_var_of_chunk, grid_shape=grid.shape[:3], n_nodes=n_nodes)
    return collect_draws(ctx, compiled, values, "VAR", per_chunk, {"var": x.shape})


def _var_of_chunk(chunk, size, *, grid_shape, n_nodes):
    """VAR from the chunk's per-draw mean on the conditional grid, (size, N, D)."""
    return {"var": var_sensitivity(chunk.phi[..., 0].reshape(-1, *grid_shape), n_nodes)}

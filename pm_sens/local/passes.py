"""The passes behind `sensitivity`: each measure's local values, or their means.

Every requested measure's local values, or, without the local arrays, each
draw's mean over the points.

The local values are one array per measure, (chain, draw, point, feature) in
draw mode: 320 MB at S=4000, N=1000, D=10. Most users read only their mean
over the points with its posterior interval (S × D numbers), so
`point_means` computes the measures block of points by block of points and
keeps each draw's sum over the points; the peak memory is one block's local
values, whatever N (docs: how_to/large_data.md).
"""

from contextlib import nullcontext
from dataclasses import replace
from functools import partial

import numpy as np

from pm_sens._core.points import feature_matrix
from pm_sens._core.results import empty_local, result_dims, with_level_columns
from pm_sens._run.blocks import block_context, run_local
from pm_sens._run.compiling import dependence_of
from pm_sens._run.progress import progress_bar
from pm_sens.local.derivative_passes import (
    mean_gradient,
    mean_measures,
    rsens_measures,
    rsens_point_means,
    var_measures,
)
from pm_sens.local.level_pair_passes import level_pair_measures, pair_outputs
from pm_sens.local.stacked_passes import (
    degenerate_points,
    feature_steps,
    kl_measures,
    level_measures,
)
from pm_sens.measures.var import input_gaussian


def _run_measure(ctx, mode, measure, names, **settings):
    """``measure``'s local arrays: in memory, or dask arrays built block by block."""
    dims = {name: result_dims(name, mode, "point") for name in names}
    return run_local(ctx, partial(measure, mode=mode, **settings), dims, mode == "draw")


def over_the_points(ctx, methods, delta):
    """What the measures take from all the points: KL's steps, VAR's Gaussian conditional.

    Computed once, so that blocks of points (`point_means`) use the same.
    """
    if not ctx.inputs or not {"kl", "var"} & set(methods):
        return {}
    x = feature_matrix(ctx.points.values, ctx.inputs, ctx.points.n_points)  # lazy for lazy points
    out = {}
    if "kl" in methods:
        out["steps"] = feature_steps(x, delta)
    if "var" in methods:
        out["gaussian"] = input_gaussian(x)
    return out


def local_measures(ctx, methods, points, *, mode, family, alpha, order, kl_scheme, var_nodes):
    """``{method: local values}`` of the continuous inputs, in ``methods``' order.

    ``points``: `over_the_points`.
    """
    if not ctx.inputs:
        return {m: empty_local(m, mode, ctx) for m in methods}
    run = partial(_run_measure, ctx, mode)
    results = {}
    if "rsens" in methods:
        names = ["rsens", "rsens2"][:order]
        results.update(run(rsens_measures, names, family=family, alpha=alpha, order=order))
    if "kl" in methods:
        steps = points["steps"]
        results.update(run(kl_measures, ["kl"], family=family, steps=steps, scheme=kl_scheme))
    if {"ead", "aed", "eah", "aeh"} & set(methods):
        names = ["mean_jac", "mean_hess"][:order]
        gradient = run(mean_gradient, names, order=order)
        results.update(mean_measures(gradient, methods, 0 if mode == "moment" else 2))
    if "var" in methods:
        gaussian = points["gaussian"]
        results.update(run(var_measures, ["var"], n_nodes=var_nodes, gaussian=gaussian))
    return {m: results[m] for m in methods}


def level_results(ctx, mode, family, alpha, pairs):
    """The categorical inputs' ``level_<g>`` and ``levels_<g>`` (`level_measures`).

    With ``pairs``, also their R-sens2 pairs (`level_pair_measures`).
    """
    if not ctx.levels:
        return {}
    dims = {f"level_{level.label}": ["point"] for level in ctx.levels}
    dims.update(
        {f"levels_{level.label}": ["point", f"{level.label}_level"] for level in ctx.levels}
    )
    measures = [(level_measures, dims)]
    if pairs:
        measures.append((level_pair_measures, pair_outputs(ctx)))
    out = {}
    for measure, outputs in measures:
        if mode == "draw":
            outputs = {name: ["chain", "draw", *d] for name, d in outputs.items()}
        measure = partial(measure, mode=mode, family=family, alpha=alpha)
        out.update(run_local(ctx, measure, outputs, mode == "draw"))
    return out


def local_results(ctx, methods, kinds, points=None, *, delta, **settings):
    """Every requested measure's local values, the categorical inputs' columns appended.

    Returns ``(results, levels)``: ``{method: local values}`` with a column per
    categorical input (`with_level_columns`), and the levels' own arrays
    (``levels_<g>``, ``level_<g>`` and R-sens2's pairs with them). ``points``:
    `over_the_points` (default: of ``ctx``'s points).
    """
    mode, family = settings["mode"], settings["family"]
    points = over_the_points(ctx, methods, delta) if points is None else points
    degenerate = _degenerate_points(ctx, mode, family)
    # the families' formulas divide by the mean: at a point mass they give inf or nan,
    # replaced by NaN below
    quiet = np.any(degenerate) if degenerate is not None else False
    with np.errstate(divide="ignore", invalid="ignore") if quiet else nullcontext():
        results = local_measures(ctx, methods, points, **settings)
        pairs = "rsens2" in methods
        levels = level_results(ctx, mode, family, settings["alpha"], pairs=pairs)
    results = with_level_columns(results, levels, ctx, mode, kinds)
    if not quiet:
        return results, levels
    return _left_out(results, levels, degenerate)


def _degenerate_points(ctx, mode, family):
    """`degenerate_points` as bool, or None for a family that has no point masses."""
    if not family.has_point_masses:
        return None
    dims = {"degenerate": ["chain", "draw", "point"] if mode == "draw" else ["point"]}
    measure = partial(degenerate_points, mode=mode, family=family)
    return run_local(ctx, measure, dims, mode == "draw")["degenerate"] > 0.5


def _left_out(results, levels, degenerate):
    """The local values with NaN where the predictive is one value (``degenerate``).

    ``degenerate`` (N,) or (chain, draw, N) joins the levels' arrays.
    """
    results = {k: np.where(_along(degenerate, v), np.nan, v) for k, v in results.items()}
    levels = {k: np.where(_along(degenerate, v), np.nan, v) for k, v in levels.items()}
    return results, {**levels, "degenerate": degenerate}


def _along(mask, value):
    """``mask`` over the leading axes of ``value``, broadcast along the others."""
    return mask.reshape(mask.shape + (1,) * (value.ndim - mask.ndim))


#: methods that average over the points before taking an absolute value: their
#: values are not means of local values, so blocks of points cannot be summed
AVERAGED_FIRST = ("aed", "aeh")


def local_bytes(ctx, methods, order):
    """Bytes of the draw-mode local arrays of ``methods`` and the levels."""
    return 8 * ctx.draws.count * ctx.points.n_points * _values_per_point(ctx, methods, order)


def _values_per_point(ctx, methods, order):
    """Local values per draw and point: every method's, and each level's divergences."""
    features = len(ctx.points.features) + len(ctx.levels)
    per_method = [features**2 if m in ("rsens2", "eah") else features for m in methods]
    # each level's divergences to every level present, its mean, and its pairs
    pairs = features if order == 2 else 0
    levels = [np.count_nonzero(level.weights) + 1 + pairs for level in ctx.levels]
    return sum(per_method) + sum(levels)


def point_means(ctx, methods, kinds, *, delta, **settings):
    """Draw mode without the local arrays: each draw's mean over the points, by blocks.

    Every measure runs on a block of points at a time (as many as keep the
    block's local values within a quarter of ``ctx.memory_limit``, its passes'
    working memory within half), and each draw's sum over the block's points
    is kept. Returns ``(results, levels)`` as `local_results` does, without
    the point axis: ``(chain, draw, feature[, feature_bis])`` per method and
    ``(chain, draw, g_level)`` per ``levels_<g>``.
    """
    if ctx.points.lazy or ctx.draws.lazy:  # dask arrays: their mean is a dask reduction
        results, levels = local_results(ctx, methods, kinds, delta=delta, **settings)
        sums, counts = _point_sums(results, levels)
        return _split(_means(sums, counts), methods)
    joint = not dependence_of(ctx).local  # a series: its points evaluated together
    summed_in_graph = methods == ["rsens"] and ctx.inputs and not ctx.levels and not joint
    # a point mass must be left out of the mean: found point by point
    if summed_in_graph and not settings["family"].has_point_masses:
        means = rsens_point_means(ctx, alpha=settings["alpha"])[:, :, None]  # a point axis
        shown = with_level_columns({"rsens": means}, {}, ctx, settings["mode"], kinds)
        return {"rsens": shown["rsens"][:, :, 0]}, {}
    per_point = 8 * ctx.draws.count * _values_per_point(ctx, methods, settings["order"])
    size = int(max(1, min(ctx.points.n_points, ctx.memory_limit // (4 * per_point))))
    size = ctx.points.n_points if joint else size
    working = replace(ctx, memory_limit=ctx.memory_limit / 2)
    points, sums, counts = over_the_points(ctx, methods, delta), {}, 0
    with progress_bar("mean over points", ctx.points.n_points, ctx.progressbar, "points") as done:
        for start in range(0, ctx.points.n_points, size):
            stop = min(start + size, ctx.points.n_points)
            rows = [np.asarray(ctx.points.values[var][start:stop]) for var in ctx.points.per_point]
            block = block_context(working, start, stop, rows)
            results, levels = local_results(block, methods, kinds, points, delta=delta, **settings)
            block_sums, block_counts = _point_sums(results, levels)
            for name, total in block_sums.items():
                sums[name] = total if name not in sums else sums[name] + total
            counts = counts + block_counts
            done(stop - start)
    return _split(_means(sums, counts), methods)


def _point_sums(results, levels):
    """Each draw's sums over the points (axis 2), and the count of points summed.

    Points whose predictive is one value (``levels["degenerate"]``) are left
    out; their count per draw is kept as ``degenerate``.
    """
    values = {**results, **_shown_levels(levels)}
    degenerate = levels.get("degenerate")
    if degenerate is None:
        n_points = next(iter(values.values())).shape[2]
        return {name: np.sum(v, axis=2) for name, v in values.items()}, n_points
    sums = {}
    for name, value in values.items():
        sums[name] = np.sum(np.where(_along(degenerate, value), 0.0, value), axis=2)
    sums["degenerate"] = np.sum(degenerate, axis=2)
    return sums, degenerate.shape[2] - sums["degenerate"]


def _means(sums, counts):
    """Each draw's means over the points summed (``degenerate``: the count left out)."""
    counts = np.asarray(counts)
    means = {}
    for name, total in sums.items():
        if name == "degenerate":
            means[name] = total
            continue
        per_draw = counts.reshape(counts.shape + (1,) * (np.ndim(total) - counts.ndim))
        # a draw whose every point is degenerate has no mean
        means[name] = np.where(per_draw > 0, total / np.maximum(per_draw, 1), np.nan)
    return means


def _shown_levels(levels):
    """The level arrays the result shows (``levels_<g>``); the others are in the columns."""
    return {name: value for name, value in levels.items() if name.startswith("levels_")}


def _split(means, methods):
    """``(results, levels)`` from one dict of means."""
    return {m: means[m] for m in methods}, {k: v for k, v in means.items() if k not in methods}

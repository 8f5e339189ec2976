"""The passes over draws behind R-sens2's pairs with a categorical input.

For each categorical input, the derivatives with every point moved to each of
its levels give its pairs with the continuous inputs; for two categorical
inputs, the parameters at every combination of their levels give their pair.
The math is `pm_sens.measures.level_pairs`; the result's columns are filled
by `pm_sens._core.results.with_level_columns`.
"""

from dataclasses import replace
from functools import partial
from itertools import combinations

import numpy as np

from pm_sens._core.categorical_inputs import contrast_name, level_values, rate_pairs_name
from pm_sens._run.chunks import collect_draws, moment_pass
from pm_sens._run.compiling import compiled_for
from pm_sens.local.derivative_passes import all_components, check_matched, second_moment_of
from pm_sens.measures.level_pairs import contrast_pairs, rate_pairs, whitened_vectors
from pm_sens.measures.levels import other_level_weights


def pair_outputs(ctx):
    """Dims of `level_pair_measures`' arrays (point dim ``"point"``)."""
    dims = {rate_pairs_name(level): ["point", "feature"] for level in ctx.levels if ctx.inputs}
    dims.update({contrast_name(g, h): ["point"] for g, h in combinations(ctx.levels, 2)})
    return dims


def level_pair_measures(ctx, *, mode, family, alpha):
    """R-sens2 pairs of each categorical input with the others, local values.

    Returns ``rate_pairs_<g>`` (..., N, D) with the continuous inputs' D
    derivative columns, and ``level_pairs_<g>_<h>`` (..., N) for every two
    categorical inputs.
    """
    out = {}
    if ctx.inputs:
        for level in ctx.levels:
            out[rate_pairs_name(level)] = _rate_pairs(ctx, level, mode, family, alpha)
    for g, h in combinations(ctx.levels, 2):
        out[contrast_name(g, h)] = _contrast(ctx, g, h, mode, family, alpha)
    return out


def _chosen(level):
    """The levels present among the points, each point's own among them, and their weights."""
    chosen = np.flatnonzero(level.weights)
    return chosen, np.searchsorted(chosen, level.own), level.weights[chosen]


def _rate_pairs(ctx, level, mode, family, alpha):
    chosen, own, weights = _chosen(level)
    values = level_values(ctx.points, ctx.predictive, level, chosen)
    n, blocks = ctx.points.n_points, len(chosen) + 1
    second_moment = second_moment_of(family, mode)
    compiled = compiled_for(ctx, mode, 1, second_moment, rows=blocks * n)
    pairs = partial(_rate_pairs_of, n_points=n, own=own, weights=weights, alpha=alpha)
    description = f"pairs with {level.label}"
    if mode == "moment":
        moments, fixed = moment_pass(ctx, compiled, values, second_moment, description)
        check_matched(moments.phi, family)
        return pairs(family, moments.phi, list(moments.jac), fixed)
    draw_family = ctx.predictive.likelihood.draw_family
    per_chunk = partial(_rate_pairs_of_chunk, pairs=pairs, compiled=compiled, family=draw_family)
    shapes = {"pairs": (n, len(ctx.points.features))}
    return collect_draws(ctx, compiled, values, description, per_chunk, shapes)["pairs"]


def _rate_pairs_of_chunk(chunk, size, *, pairs, compiled, family):
    phi, fixed = chunk.per_draw_parameters(size)
    jac = all_components(compiled, chunk.jac, phi.shape[-1])
    return {"pairs": pairs(family, phi, jac, fixed)}


def _rate_pairs_of(family, phi, jac, fixed, *, n_points, own, weights, alpha):
    """`rate_pairs` from the parameters and derivatives at the stacked copies of the points."""
    family, phi, jac = family.in_mean_variance(phi, jac, trailing=1)
    vectors = whitened_vectors(*family.whitened(phi, jac, 1, **fixed))  # (..., rows, D, K)
    lead = vectors.shape[:-3]
    vectors = vectors.reshape(*lead, -1, n_points, *vectors.shape[-2:])
    return rate_pairs(np.moveaxis(vectors, len(lead), 0), own, weights, alpha)


def _contrast(ctx, g, h, mode, family, alpha):
    chosen_g, own_g, weights_g = _chosen(g)
    chosen_h, own_h, weights_h = _chosen(h)
    by_g = level_values(ctx.points, ctx.predictive, g, chosen_g)
    n = ctx.points.n_points
    stacked = replace(ctx.points, values=by_g, n_points=n * (len(chosen_g) + 1))
    values = level_values(stacked, ctx.predictive, h, chosen_h)  # rows (1 + Lh, 1 + Lg, N)
    second_moment = second_moment_of(family, mode)
    compiled = compiled_for(ctx, mode, 0, second_moment, rows=len(values[g.variable]))
    grid = (len(chosen_h) + 1, len(chosen_g) + 1, n)
    contrast = partial(
        _contrast_of,
        grid=grid,
        others=(other_level_weights(own_g, weights_g), other_level_weights(own_h, weights_h)),
        alpha=alpha,
    )
    description = f"pairs of {g.label} and {h.label}"
    if mode == "moment":
        moments, fixed = moment_pass(ctx, compiled, values, second_moment, description)
        check_matched(moments.phi, family)
        return contrast(family, moments.phi, compiled.varying, fixed)
    draw_family = ctx.predictive.likelihood.draw_family
    per_chunk = partial(_contrast_of_chunk, contrast=contrast, family=draw_family)
    return collect_draws(ctx, compiled, values, description, per_chunk, {"pairs": (n,)})["pairs"]


def _contrast_of_chunk(chunk, size, *, contrast, family):
    phi, fixed = chunk.per_draw_parameters(size)
    # every per-draw parameter may move with a level (the graph's ``varying`` are
    # those that move with the continuous inputs); one that does not has no contrast
    return {"pairs": contrast(family, phi, range(phi.shape[-1]), fixed)}


def _contrast_of(family, phi, varying, fixed, *, grid, others, alpha):
    """`contrast_pairs` from the parameters at the grid of both inputs' levels.

    ``phi`` (..., rows, M) holds rows in the order (h's block, g's block, point)
    (`grid`); ``fixed`` the family's fixed parameters per row.
    """
    if family.mean_variance is not None:
        # which mapped parameters vary: those the varying ones reach by the chain rule
        marks = [np.ones(()) if m in varying else None for m in range(phi.shape[-1])]
        family, phi, marks = family.in_mean_variance(phi, marks)
        varying = [m for m, mark in enumerate(marks) if mark is not None]
    lead = len(phi.shape) - 2
    phi = phi.reshape(*phi.shape[:-2], *grid, phi.shape[-1])
    phi = np.moveaxis(phi, (lead + 1, lead), (0, 1))  # (1 + Lg, 1 + Lh, ..., N, M)
    fixed = {k: _own_rows(v, grid) for k, v in fixed.items()}
    whitened = partial(family.whitened, **fixed)
    return contrast_pairs(phi, list(varying), whitened, *others, alpha)


def _own_rows(value, grid):
    """A fixed parameter (..., rows) at the points as they are (the first N rows)."""
    if np.ndim(value) == 0:
        return value
    return np.asarray(value).reshape(*np.shape(value)[:-1], *grid)[..., 0, 0, :]

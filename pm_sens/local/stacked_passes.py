"""Measures on stacked copies of the points: finite-difference KL and level divergences.

Each evaluates the predictive once on the points and on copies of them moved
(by a step in one feature, or to another level of a categorical input),
stacked as one set of rows, and compares each copy with the points. In a
model whose rows depend on other rows' inputs, each copy is a whole series
(`pm_sens._run.chunks`), and the KL steps move one colour of the rows at a
time (`pm_sens.measures.kl.colored_offsets`).
"""

from contextlib import nullcontext
from functools import partial

import numpy as np

from pm_sens._core.categorical_inputs import level_values
from pm_sens._core.points import feature_matrix, values_at
from pm_sens._run.chunks import collect_draws, moment_pass
from pm_sens._run.compiling import colors_for, compiled_for, dependence_of
from pm_sens.local.derivative_passes import check_matched, second_moment_of
from pm_sens.measures.kl import colored_offsets, kl_sensitivity, shift_offsets
from pm_sens.measures.levels import level_divergence, level_sensitivity


def feature_steps(x, delta):
    """Δ_d = delta × the feature's sd over all the points (1 where it is constant)."""
    sd = np.asarray(x.std(0))
    return delta * np.where(sd > 0, sd, 1.0)


def stacked_measure(ctx, compiled, values, blocks, family, measure, width, description):
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
        check_matched(phi, family)
        return measure(phi[0], phi[1:], **{k: v[:n] for k, v in fixed.items()})
    per_chunk = partial(_stacked_chunk, measure=measure, blocks=blocks, n_points=n, family=family)
    shapes = {"measure": (n, width)}
    return collect_draws(ctx, compiled, values, description, per_chunk, shapes)["measure"]


def _stacked_chunk(chunk, size, *, measure, blocks, n_points, family):
    """``measure`` on one chunk's stacked copies of the points: (size, N, width)."""
    phi, fixed = chunk.per_draw_parameters(size)
    phi = np.moveaxis(phi.reshape(size, blocks, n_points, phi.shape[-1]), 1, 0)
    fixed = {k: v[..., :n_points] for k, v in fixed.items()}
    # at a point mass the divergences divide by a mean of 0: such points are left
    # out afterwards (`pm_sens.local.passes.local_results`)
    quiet = family.has_point_masses and family.point_mass(phi[0]).any()
    with np.errstate(all="ignore") if quiet else nullcontext():
        return {"measure": measure(phi[0], phi[1:], **fixed)}


def _point_masses(phi, copies, family, **fixed):
    return family.point_mass(phi)[..., None].astype(float)


def degenerate_points(ctx, *, mode, family):
    """Where the predictive is one value (`Family.point_mass`), as 1.0 (else 0.0).

    ``{"degenerate": (N,)}`` in moment mode, ``(chain, draw, N)`` in draw mode.
    Divergence rates have no value there (at a zero exposure R-sens would be
    |∂λ|/sqrt(λ) at λ = 0), so every measure is left out at such points.
    """
    compiled = compiled_for(ctx, mode, 0, second_moment_of(family, mode))
    measure = partial(_point_masses, family=family)
    found = stacked_measure(
        ctx, compiled, ctx.points.values, 1, family, measure, 1, "degenerate points"
    )
    return {"degenerate": found[..., 0]}


def kl_measures(ctx, *, mode, family, steps, scheme):
    """Finite-difference KL sensitivity, local values (..., N, D)."""
    x = feature_matrix(ctx.points.values, ctx.inputs)
    offsets, joint = shift_offsets(steps, scheme)[:, None, :], None
    dependence = dependence_of(ctx)
    if not dependence.local:  # each colour of the rows moved on its own
        joint = (colors_for(ctx), dependence.first, dependence.last)
        offsets = colored_offsets(offsets[:, 0], len(x), joint[0])
    rows = np.concatenate([x, *(x + offset for offset in offsets)])
    second_moment = second_moment_of(family, mode)
    compiled = compiled_for(ctx, mode, 0, second_moment, rows=len(rows))
    values = values_at(ctx.points, ctx.inputs, rows)
    measure = partial(
        kl_sensitivity, family.kl_divergence, steps=steps, scheme=scheme, joint=joint
    )
    kl = stacked_measure(
        ctx, compiled, values, len(offsets) + 1, family, measure, len(steps), "KL"
    )
    return {"kl": kl}


def level_measures(ctx, *, mode, family, alpha):
    """Level divergences of each categorical input, and their per-point summary.

    For input ``g``: ``levels_g`` (..., N, L), the divergence ``sqrt(2 D_α)``
    from each point's own level to every level present among the points
    (``D_1`` the KL), and ``level_g`` (..., N), its mean over the other levels
    weighted by their frequency.
    """
    compiled = compiled_for(ctx, mode, 0, second_moment_of(family, mode))
    n = ctx.points.n_points
    divergence = (
        family.kl_divergence if alpha == 1 else partial(family.renyi_divergence, alpha=alpha)
    )
    measure = partial(level_divergence, divergence)
    out = {}
    for level in ctx.levels:
        chosen = np.flatnonzero(level.weights)
        values = level_values(ctx.points, ctx.predictive, level, chosen)
        divergence = stacked_measure(
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

"""Checks on a compiled predictive and its outputs.

Which rows' inputs the parameters at a row depend on (none but its own in a
local model; lags and adstock in a series), and the screening of each chunk's
outputs for nan and inf, with a message naming the quantity, the point, the
draw and the likely cause.
"""

from functools import partial

import numpy as np

from pm_sens.graph.compile.compiled import data_for_chunk
from pm_sens.graph.compile.nodes import is_float
from pm_sens.graph.model.dependence import Dependence

#: every row of a series up to this length is perturbed to find a model's
#: dependence; in a longer one, `SPREAD_ROWS` spread over it (both ends included)
PROBED_ROWS = 64
SPREAD_ROWS = 16
#: draws the perturbations are evaluated on, spread over the posterior: how far a
#: row reaches may differ between draws (a GP's lengthscale)
PROBED_DRAWS = 8


def find_dependence(compiled, points, draws):
    """Which rows the inputs at a row move (`pm_sens.graph.model.dependence.Dependence`).

    Perturbs the (float) inputs at each probed row on `PROBED_DRAWS` draws
    spread over the posterior and records which rows' parameters move on any
    of them: the smallest window of offsets that holds them all. Every row is
    probed in a series of up to `PROBED_ROWS` rows; in a longer one,
    `SPREAD_ROWS` rows spread over it, and the window is then verified at
    every row (`_window_holds`); where it does not hold, every row is taken to
    depend on every other. With one point, a second row (a copy of it) stands
    in for the others.
    """
    if not any(is_float(var) for var in compiled.inputs) or points.n_points == 0:
        return Dependence()
    values, n = points.values, points.n_points
    if n == 1:
        values = {
            var: np.concatenate([value, value]) if var in points.per_point else value
            for var, value in values.items()
        }
        n = 2
    probed = draws.spread(PROBED_DRAWS)
    base = _what_points_get(compiled(data_for_chunk(compiled, values), probed))
    working = {
        **values,
        **{v: np.array(values[v], dtype=float) for v in compiled.inputs if is_float(v)},
    }
    rows_moved = partial(_rows_moved, compiled, working, n, probed, base)
    spread = np.unique(np.linspace(0, n - 1, SPREAD_ROWS).astype(int))
    offsets = [0]
    for row in range(n) if n <= PROBED_ROWS else spread:
        moved = np.flatnonzero(rows_moved([row]))
        offsets += [int(moved.min()) - int(row), int(moved.max()) - int(row)] if len(moved) else []
    found = Dependence(min(offsets), max(offsets))
    if n <= PROBED_ROWS or _window_holds(found, rows_moved, n):
        return found
    return Dependence(-(n - 1), n - 1)


def _rows_moved(compiled, values, n, draws, base, rows):
    """Which of the n rows' parameters move when the float inputs at ``rows`` do: (n,) bool.

    ``values``: the data, the float inputs as float64 copies, moved at
    ``rows`` for the evaluation and put back after (no copy of a long series
    per probe); ``base``: the parameters (or statistics) before, on the
    probed draws.
    """
    moving = [var for var in compiled.inputs if is_float(var)]
    before = [values[var][rows].copy() for var in moving]
    for var, value in zip(moving, before, strict=True):
        values[var][rows] = value + 1e-3 * (np.abs(value) + 1)
    # new array objects (views) of the moved inputs: the JAX backend keeps its copy of
    # an array on the device by object (`pm_sens.graph.compile.jax_functions.DeviceArrays`)
    probe = {**values, **{var: values[var].view() for var in moving}}
    try:
        moved = _what_points_get(compiled(data_for_chunk(compiled, probe), draws))
    finally:
        for var, value in zip(moving, before, strict=True):
            values[var][rows] = value
    # nan or inf where the model is undefined is no sign of coupling (named later);
    # the rows not moved give the same values to the bit, so the tolerance is applied
    # to the values that differ alone: one exact comparison over a long series,
    # the tolerance's several array operations on a few values, found by index
    # (each boolean mask would be another pass over the whole series)
    differs = moved != base
    where = np.nonzero(differs)
    differs[where] = ~np.isclose(moved[where], base[where], rtol=1e-9, atol=1e-12, equal_nan=True)
    return differs.reshape(-1, n, differs.shape[-1]).any(axis=(0, 2))


def _window_holds(dependence, rows_moved, n):
    """Whether no row moves outside the window of the rows moved, at any row.

    The rows ``s ≡ r (mod K)`` move together, for K the window's width plus
    one and plus two (2K + 1 evaluations): a row outside every moved row's
    window that moves is a dependence the window misses (one at an offset
    that both K divide away from the window escapes).
    """
    rows = np.arange(n)
    for period in (dependence.width + 1, dependence.width + 2):
        for r in range(period):
            moved_rows = rows[rows % period == r]
            reach = moved_rows[:, None] + np.arange(dependence.first, dependence.last + 1)
            allowed = np.zeros(n, bool)
            allowed[reach[(reach >= 0) & (reach < n)]] = True
            if np.any(rows_moved(moved_rows) & ~allowed):
                return False
    return True


def _what_points_get(out):
    """A chunk's parameters (..., N, M), or its statistics side by side without them."""
    if out.phi is not None:
        return out.phi
    return np.stack(list(out.statistics.values()), -1)


def _component_names(ctx, compiled):
    """What each component of a chunk's ``phi`` is, for messages."""
    statistic = compiled.settings.get("statistic")
    if statistic is not None:
        return [statistic]
    if compiled.mode == "draw":
        return list(ctx.predictive.likelihood.draw_family.parameters)
    second = compiled.settings.get("second_moment")
    if second == "scale2":
        return ["location", "squared scale", "1/nu"]
    if second:
        return ["mean", "variance"]
    return ["mean", "1 - mean"]


def _point_masses(ctx, compiled, phi):
    """Where the chunk's law is one value (a count law of mean 0), or None.

    Derivatives through such a law's parameters (a negative binomial's p of 1)
    may be infinite there; the point is reported as degenerate instead
    (`pm_sens.local.stacked_passes.degenerate_points`).
    """
    names = _component_names(ctx, compiled)
    family = ctx.predictive.likelihood.draw_family
    if phi is None or not family.has_point_masses or "mean" not in names:
        return None
    masses = phi[..., names.index("mean")] <= 0
    return masses if masses.any() else None


def _outside(part, test, masses):
    """``test`` of ``part``, false at the rows of point masses."""
    return test(part) & ~_along_rows(masses, part)


def _along_rows(mask, part):
    """``mask`` (rows) broadcast over ``part``: its leading axes, or those after the first."""
    start = 0 if part.shape[: mask.ndim] == mask.shape else 1
    shape = (1,) * start + mask.shape + (1,) * (part.ndim - start - mask.ndim)
    return mask.reshape(shape)


def _first_problem(values, test):
    """(index, value, count) of the first value failing ``test``, or None.

    ``test`` flags nan or inf values (the values are screened by their sum).

    A list of arrays (draw-mode derivatives, one per parameter) is indexed with
    the position in the list first.
    """
    parts = values if isinstance(values, list) else [values]
    with np.errstate(all="ignore"):
        if all(np.isfinite(np.sum(part)) for part in parts):
            return None  # a finite sum has no nan or inf: one pass, no mask
    found, count = None, 0
    for position, part in enumerate(parts):
        bad = test(part)
        n_bad = int(np.count_nonzero(bad))
        if n_bad and found is None:
            index = tuple(np.argwhere(bad)[0])
            found = ((position, *index) if isinstance(values, list) else index, float(part[index]))
        count += n_bad
    return None if found is None else (*found, count)


def check_outputs(ctx, compiled, draws, out):
    """A chunk's parameters must not be nan, nor its derivatives nan or inf.

    The message names the quantity, the point, the draw (draw mode; in moment
    mode the chunk of draws) and the likely cause. Infinite parameters pass:
    some are legitimate (a truncation bound) and the measures name the others.
    A chunk without parameters (built with ``parameters=False``) has its
    per-draw statistics, and its sums over draws, screened in their place.
    """
    screened = {k: getattr(out, k) for k in ("phi", "jac", "hess")}
    screened = {k: v for k, v in screened.items() if v is not None}
    if out.phi is None:
        screened.update({k: list(getattr(out, k).values()) for k in ("statistics", "sums")})
    problems = [(k, np.isnan, "is nan") for k in ("phi", "statistics", "sums")]
    problems += [(k, lambda a: ~np.isfinite(a), "is not finite") for k in ("jac", "hess")]
    for key, test, what in problems:
        if key not in screened:
            continue
        problem = _first_problem(screened[key], test)
        masses = _point_masses(ctx, compiled, out.phi) if problem and key != "phi" else None
        if masses is not None:  # a count law of mean 0: reported as a degenerate point
            kept = partial(_outside, test=test, masses=masses)
            problem = _first_problem(screened[key], kept)
        if problem is None:
            continue
        index, value, count = problem
        names = _component_names(ctx, compiled)
        if key == "phi":
            component, rows = index[-1], index[:-1]
        elif key == "statistics":  # their position in the list, then draw, point
            names, component, rows = compiled.statistic_names, index[0], index[1:]
        elif key == "sums":  # their position in the list, then point
            names, component, rows = compiled.sum_names, index[0], index[1:2]
        else:  # the parameter axis first, then (draw,) point, feature(s)
            component = compiled.varying[index[0]] if compiled.mode == "draw" else index[0]
            rows = index[1 : len(index) - (1 if key == "jac" else 2)]
        name = names[component] if component < len(names) else f"component {component}"
        point = np.asarray(ctx.points.point_coords)[rows[-1] % ctx.points.n_points].item()
        span = f"draws {draws.start} to {draws.stop - 1}"
        where, note = f"point {point!r}", f"the mixture of {span}; {count} such value(s)"
        if len(rows) == 2:  # draw mode
            s = draws.start + rows[0]
            n_draw = len(ctx.draws.draw)
            chain, draw = ctx.draws.chain[s // n_draw], ctx.draws.draw[s % n_draw]
            where += f", chain={chain.item()!r}, draw={draw.item()!r}"
            note = f"{count} such value(s) among {span}"
        name = f"the {'per-draw' if len(rows) == 2 else 'mixture'} {name}"
        if key == "sums":  # the mixture's moments are sums of the per-draw mean and variance
            summed = {"mixture": "mean and variance"}.get(names[component], names[component])
            name, note = (
                f"the sum over draws of the per-draw {summed}",
                f"{span}; {count} such value(s)",
            )
        values = key in ("phi", "statistics", "sums")
        quantity = name if values else f"the derivative of {name}"
        shown = "" if np.isnan(value) else f" ({value:g})"
        cause = (
            "the model's expression is undefined there (a log or sqrt of a negative "
            "value, 0·inf, inf − inf, an overflowing exp), often at inputs far from the data"
            if values
            else f"the parameter changes faster than {ctx.dtype} can hold at these inputs (an "
            "overflowing exp of the linear predictor?) or is not differentiable there"
        )
        if len(rows) == 1 and key != "sums":
            cause += (
                f"; moment mode needs the mixture's mean and variance as {ctx.dtype} numbers, "
                "mode='draw' works with the per-draw parameters, which stay finite further"
            )
        if ctx.dtype == "float32":
            cause += (
                "; in float32 (dtype='float32') an exp overflows past 88 and a covariance "
                "matrix's Cholesky factor fails sooner (a GP's): dtype='float64' computes "
                "what the CPU backend does"
            )
        raise ValueError(f"{quantity} {what}{shown} at {where} ({note}): {cause}")

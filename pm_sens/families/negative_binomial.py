"""Negative binomial in PyMC's (mean μ, dispersion α) and in (mean, variance).

Variance ``v = μ + μ²/α``. The α–α information has no closed form; it is the
expected squared score summed over the support (tail mass below ``tail``).
"""

import numpy as np
from scipy import special

from pm_sens.families import poisson as poisson_family
from pm_sens.families._base import (
    NUMPY,
    Family,
    check_support,
    clip_positive,
    diagonal_factors,
    diagonal_matrix,
    expanded,
    log1p_gap,
    outer,
    reparametrize,
    stack_matrix,
)
from pm_sens.families._renyi import renyi_by_summation

_MAX_CELLS = 4_000_000  # elements × support values summed at once


def _alpha_information_block(m, a, width):
    """``E[(∂ log p/∂α)²]`` of NB(m, α) per cell, summed over the counts 0..width−1.

    The pmf and ψ(y + α) − ψ(α) come from running sums over the counts (of
    ``log((α + k)/(k + 1))`` and ``1/(α + k)``, k < y): stable when α ≫ y,
    and a few operations per count where SciPy's pmf takes log-gammas.
    """
    y = np.arange(float(width))
    k = y[:-1]
    steps = 1 / (a[:, None] + k)
    digamma_diff = np.concatenate([np.zeros_like(a)[:, None], np.cumsum(steps, -1)], -1)
    log_ratios = np.log(a[:, None] + k) - np.log1p(k)
    log_choose = np.concatenate([np.zeros_like(a)[:, None], np.cumsum(log_ratios, -1)], -1)
    log_p = np.log1p(-m / (a + m))  # log of the success probability α/(α + m)
    log_pmf = log_choose + (a * log_p)[:, None] + special.xlogy(y, (m / (a + m))[:, None])
    score = digamma_diff + log_p[:, None] + (m[:, None] - y) / (a + m)[:, None]
    return (np.exp(log_pmf) * score**2).sum(-1)


def alpha_information(m, a, tail=1e-16):
    """Expected squared score of α, ``E[(∂ log p / ∂α)²]``, for NB(m, α).

    Each cell is summed up to the count beyond which its mass is below
    ``tail``: the squared score grows into the tail (about 60 at the 1e-12
    quantile of NB(200, 3.5), where the sum is 1e-9 short), so the default
    leaves about 1e-13 of the information. Cells go in the order of that
    count, in blocks of about `_MAX_CELLS` cells × counts, each summed to its
    widest cell (a common width would make every cell as long as the widest
    of all: the largest mean with the smallest α).
    """
    from scipy.stats import nbinom

    m, a = (np.asarray(x, dtype=float) for x in np.broadcast_arrays(m, a))
    flat_m, flat_a = m.ravel(), a.ravel()
    out = np.empty_like(flat_m)
    if flat_m.size:
        # the support reaches past the mean: checked first, as SciPy's quantile search
        # runs for minutes at means of 1e14
        check_support("negative_binomial", flat_m.max() + 2, "Fisher information")
        ends = nbinom.isf(tail, flat_a, flat_a / (flat_a + flat_m)) + 2
        check_support("negative_binomial", ends.max(), "Fisher information")
        order = np.argsort(ends, kind="stable")
        ends = ends[order].astype(int)
        start = 0
        while start < flat_m.size:
            stop = _block_end(ends, start)
            cells = order[start:stop]
            out[cells] = _alpha_information_block(flat_m[cells], flat_a[cells], ends[stop - 1])
            start = stop
    return out.reshape(m.shape)


def _block_end(ends, start):
    """The end of the block from ``start`` whose cells × its widest cell fit `_MAX_CELLS`.

    ``ends`` are in increasing order, so the cells × width of the blocks from
    ``start`` grow with their length; a block holds at least one cell.
    """
    window = ends[start : start + max(1, _MAX_CELLS // ends[start])]
    fits = window * np.arange(1, window.size + 1) <= _MAX_CELLS
    return start + max(1, int(fits.sum()))


def _mean_information(m, a):
    """``α/(μ(μ+α))``, written to stay finite for α up to the float limit.

    A mean of 0 (a point mass, left out as a degenerate point) is held positive.
    """
    m = clip_positive(m)
    return 1 / (m * (1 + m / a))


def fisher_information_mean_alpha(phi):
    """Fisher information in (μ, α): ``diag(α/(μ(μ+α)), I_αα)``."""
    m, a = phi[..., 0], phi[..., 1]
    return diagonal_matrix(_mean_information(m, a), alpha_information(m, a))


def _mean_scale(xp, m, a):
    return np.sqrt(_mean_information(m, a))


def _alpha_scale(xp, m, a):
    return np.sqrt(alpha_information(m, a))


# Beyond this α/(m+1), v − m has lost ~eps·α/m of its digits to round-off while
# NB(m, v) is Poisson up to O(m/α): the (m, v) information takes the limit form
# below (both errors ~1e-8 at the switch).
_POISSON_LIMIT = 1e8


def fisher_information(phi):
    """Fisher information in (m, v), ``v > m``; Poisson(m) where ``v <= m``.

    Reparametrizes (μ, α) with ``α = m²/(v − m)``.
    """
    m, v = np.broadcast_arrays(phi[..., 0], phi[..., 1])
    excess = v - m
    overdispersed = excess > 0
    with np.errstate(over="ignore"):  # a huge α is the Poisson limit below
        a = np.where(overdispersed, m * (m / np.where(overdispersed, excess, 1)), np.inf)
    near_poisson = a > _POISSON_LIMIT * (m + 1)
    regular = overdispersed & ~near_poisson
    info = np.zeros((*m.shape, 2, 2))
    info[..., 0, 0] = 1 / m  # Poisson(m), where v <= m
    if regular.any():
        mr, er, ar = m[regular], excess[regular], a[regular]
        jac = stack_matrix([[1.0, 0.0], [mr * (mr + 2 * er) / er**2, -(mr**2) / er**2]])
        info[regular] = reparametrize(fisher_information_mean_alpha(np.stack([mr, ar], -1)), jac)
    limit = overdispersed & near_poisson
    if limit.any():
        c = 1 / (2 * m[limit] ** 2)
        info[limit] = stack_matrix([[1 / m[limit] + c, -c], [-c, c]])
    return info


def graph_log_density_mean_alpha(xp, y, m, a):
    """NB(m, α) log pmf at the count y (−inf off the counts), in ``xp``.

    ``log Γ(y + α) − log Γ(α) − log y! − α log(1 + m/α) + y log(m/(m + α))``:
    SciPy's ``nbinom.logpmf`` at ``p = α/(α + m)``, with ``log(1 − p)`` taken
    as ``log(m/(m + α))``, exact where α ≫ m.
    """
    m = clip_positive(m, xp)
    inside = (y >= 0) & xp.equal(xp.floor(y), y)
    k = xp.maximum(y, 0)
    value = (
        xp.gammaln(k + a)
        - xp.gammaln(a)
        - xp.gammaln(k + 1.0)
        - a * xp.log1p(m / a)
        + k * xp.log(m / (m + a))
    )
    return xp.where(inside, value, -np.inf)


def _logpmf(y, m, a):
    """NB(m, α) log pmf (`graph_log_density_mean_alpha` in NumPy); Poisson(m) at α = ∞."""
    y = np.asarray(y, dtype=float)
    finite = np.isfinite(a)
    safe = np.where(finite, a, 1.0)
    return np.where(
        finite,
        graph_log_density_mean_alpha(NUMPY, y, m, safe),
        poisson_family.graph_log_density(NUMPY, y, m),
    )


def _logpmf_table(top, m, a):
    """NB(m, α) log pmf at 0..top, (rows, top + 1), by the pmf's recurrence.

    ``p(y)/p(y−1) = (y−1+α)/y · m/(m+α) = m/y · (1 + (y−1−m)/(m+α))``: a
    cumulative sum of logs instead of SciPy's log-gamma per count, each step
    without cancellation for any α (→ the Poisson's m/y as α grows). Its
    rounding, a few ulp per count, is far below the KL's accuracy. Poisson(m)
    where α is infinite.
    """
    y = np.arange(top + 1)
    finite = np.isfinite(a)
    safe = np.where(finite, a, 1.0)[:, None]
    m = m[:, None]
    k = y[None, 1:]
    with np.errstate(divide="ignore"):  # a mean of 0: the point mass at 0
        steps = np.log(m / k) + np.log1p((k - 1 - m) / (m + safe))
    table = np.concatenate([-safe * np.log1p(m / safe), steps], -1)
    np.cumsum(table, axis=-1, out=table)
    if finite.all():
        return table
    return np.where(finite[:, None], table, _logpmf(y[None, :], m, np.inf))


def _log_ratio(y, m1, a1, m2, a2):
    """``log p(y) − log q(y)`` for NB laws with finite α, as sums of small differences.

    ``log Γ(y+a₁) − log Γ(a₁) − log Γ(y+a₂) + log Γ(a₂) = Σ_{k<y} log1p((a₁−a₂)/(a₂+k))``
    avoids the huge log-gamma values that would swamp a KL of order δ².
    """
    steps = np.log1p((a1 - a2)[:, None] / (a2[:, None] + y[None, :-1]))
    gamma_part = np.concatenate([np.zeros((len(m1), 1)), np.cumsum(steps, -1)], -1)
    const = -a1 * np.log1p(m1 / a1) + a2 * np.log1p(m2 / a2)
    slope = np.log1p((m1 - m2) / m2) - np.log1p((a1 + m1 - a2 - m2) / (a2 + m2))
    return gamma_part + const[:, None] + y[None, :] * slope[:, None]


def _sf(top, m, a):
    """P(Y > top) under NB(m, α); Poisson(m) where α is infinite."""
    from scipy.stats import nbinom, poisson

    finite = np.isfinite(a)
    safe = np.where(finite, a, 1.0)
    return np.where(finite, nbinom.sf(top, safe, safe / (safe + m)), poisson.sf(top, m))


def _kl_block(m1, a1, m2, a2, top):
    y = np.arange(top + 1)
    lp = _logpmf_table(top, m1, a1)
    finite = np.isfinite(a1) & np.isfinite(a2)
    ratio = np.where(
        finite[:, None],
        _log_ratio(y, m1, np.where(finite, a1, 1.0), m2, np.where(finite, a2, 1.0)),
        lp - _logpmf(y[None, :], m2[:, None], a2[:, None]),
    )
    # E_p[log p/q] = E_p[g(q/p − 1)] since E_p[q/p − 1] = 0: every term ≥ 0 and O(δ²);
    # far apart (a level change), the same term as q − p + p log(p/q) without overflow
    p = np.exp(lp)
    near = np.abs(ratio) < 1
    term = np.where(
        near,
        p * log1p_gap(np.expm1(-np.where(near, ratio, 0.0))),
        np.exp(lp - ratio) - p + p * ratio,
    )
    # Σ (q − p) is 0 over the whole support; over 0..top it is P(Y>top) − Q(Y>top)
    # (q may put mass beyond p's support), which the sum of terms must not include
    kl = term.sum(-1) + _sf(top, m2, a2) - _sf(top, m1, a1)
    both_poisson = ~np.isfinite(a1) & ~np.isfinite(a2)
    return np.where(both_poisson, m1 * log1p_gap((m2 - m1) / m1), kl)


def _kl_mean_alpha(m1, a1, m2, a2, tail=1e-15):
    """KL(NB(m₁, α₁) ‖ NB(m₂, α₂)): closed form where α is shared, else summed.

    A finite α shared by both laws (a global dispersion, as a step of an input
    meets it) has a closed form (`_kl_shared_alpha`). Other pairs are summed
    over the support of the first law, each up to its own upper count within a
    factor of 2: rows are grouped by the binary order of magnitude of that
    count, so one law with a long tail (a small α in one draw) does not make
    every row sum as far.
    """
    m1, a1, m2, a2 = (np.asarray(x, float) for x in np.broadcast_arrays(m1, a1, m2, a2))
    shape = m1.shape
    m1, a1, m2, a2 = (x.ravel() for x in (m1, a1, m2, a2))
    out = np.empty_like(m1)
    if not m1.size:
        return out.reshape(shape)
    shared = _shared_alpha(m1, a1, a2)
    out[shared] = _kl_shared_alpha(m1[shared], a1[shared], m2[shared])
    summed = np.flatnonzero(~shared)
    check_support("negative_binomial", m1[summed].max(initial=0) + 2, "KL divergence")
    tops = _upper(m1[summed], a1[summed], tail) + 1
    check_support("negative_binomial", tops, "KL divergence")
    magnitude = np.ceil(np.log2(np.maximum(tops, 1))).astype(int)
    for bucket in np.unique(magnitude):
        rows = summed[magnitude == bucket]
        top = int(tops[magnitude == bucket].max())
        step = max(1, _MAX_CELLS // (top + 1))
        for start in range(0, rows.size, step):
            b = rows[start : start + step]
            out[b] = _kl_block(m1[b], a1[b], m2[b], a2[b], top)
    return out.reshape(shape)


def _shared_alpha(m1, a1, a2):
    """Pairs of one finite α whose closed form keeps 12 digits (`_kl_shared_alpha`).

    α equal to rounding (1e-12 relative) counts as shared: the KL's part from
    so small a difference, ½ Δα² I_αα, is below the sum's own rounding, and
    the same laws computed in another order must take the same route.
    """
    with np.errstate(invalid="ignore"):  # two infinite α (Poissons): not finite, left out
        same = np.abs(a1 - a2) <= 1e-12 * np.abs(a1)
    return np.isfinite(a1) & same & (m1 > 0) & (a1 >= 1e-4 * m1)


def _kl_shared_alpha(m1, a, m2):
    """KL(NB(m₁, α) ‖ NB(m₂, α)) in closed form.

    With α shared, NB is an exponential family in the count, so the log ratio is
    linear in y and its mean under the first law gives
    ``(α + m₁) log1p(d/(α + m₁)) − m₁ log1p(d/m₁)``, d = m₂ − m₁. Written as
    ``m₁ g(d/m₁) − (α + m₁) g(d/(α + m₁))`` with g(u) = u − log1p(u), the first-order
    parts cancel exactly; the two terms agree to a share m₁/(α + m₁) of their
    size, so α ≥ 1e-4 m₁ keeps 12 of 16 digits.
    """
    with np.errstate(divide="ignore"):
        return m1 * log1p_gap((m2 - m1) / m1) - (a + m1) * log1p_gap((m2 - m1) / (a + m1))


def kl_divergence_mean_alpha(phi_p, phi_q):
    """KL between NB laws given as (mean, α)."""
    return _kl_mean_alpha(phi_p[..., 0], phi_p[..., 1], phi_q[..., 0], phi_q[..., 1])


def _alpha(phi):
    excess = phi[..., 1] - phi[..., 0]
    return np.where(excess > 0, phi[..., 0] ** 2 / np.where(excess > 0, excess, 1), np.inf)


def kl_divergence(phi_p, phi_q):
    """KL between NB laws given as (mean, variance); Poisson where v <= m."""
    return _kl_mean_alpha(phi_p[..., 0], _alpha(phi_p), phi_q[..., 0], _alpha(phi_q))


def log_density_mean_alpha(phi, y):
    """Log pmf at the count y for NB given as (mean, α)."""
    return _logpmf(y, phi[..., 0], phi[..., 1])


def log_density(phi, y):
    """Log pmf at the count y for NB given as (mean, variance); Poisson where v <= m."""
    return _logpmf(y, phi[..., 0], _alpha(phi))


def _upper(m, a, tail):
    from scipy.stats import nbinom

    m, a, tail = np.broadcast_arrays(*(np.asarray(x, float) for x in (m, a, tail)))
    finite = np.isfinite(a)  # an infinite α is a Poisson
    upper = np.empty(m.shape, dtype=int)
    m_f, a_f = m[finite], a[finite]
    upper[finite] = nbinom.isf(tail[finite], a_f, a_f / (a_f + m_f))
    upper[~finite] = poisson_family.upper_count(m[~finite], tail[~finite])
    return upper


def support_window_mean_alpha(low, high, tail):
    """Counts holding all but ``tail`` of the mass of every NB(μ, α) in [low, high].

    Both tails reach furthest at the largest dispersion (the smallest α).
    """
    dispersed = low[..., 1]
    lower = _lower(low[..., 0], dispersed, tail / 2)
    return lower, _upper(high[..., 0], dispersed, tail / 2)


def _lower(m, a, tail):
    from scipy.stats import nbinom, poisson

    finite = np.isfinite(a)
    safe = np.where(finite, a, 1.0)
    quantile = np.where(finite, nbinom.ppf(tail, safe, safe / (safe + m)), poisson.ppf(tail, m))
    return np.maximum(quantile, 0).astype(int)


def support_upper_mean_alpha(phi, tail):
    """The count above which the mass is below ``tail``, NB given as (mean, α)."""
    return _upper(phi[..., 0], phi[..., 1], tail)


def support_upper(phi, tail):
    """The count above which the mass is below ``tail``, NB given as (mean, variance)."""
    return _upper(phi[..., 0], _alpha(phi), tail)


def _recursion(m, a):
    """``p(y)/p(y−1) = c + c(α−1)/y`` with ``c = μ/(μ+α)``; ``μ/y`` where α is infinite."""
    finite = np.isfinite(a)
    safe = np.where(finite, a, 1.0)
    c = np.where(finite, m / (m + safe), 0.0)
    return c, np.where(finite, c * (safe - 1), m), lambda y: _logpmf(y, m, a), None, None


def pmf_recursion_mean_alpha(phi):
    """Panjer's (a, b) for NB given as (mean, α) (`Family.pmf_recursion`)."""
    return _recursion(phi[..., 0], phi[..., 1])


def pmf_recursion(phi):
    """Panjer's (a, b) for NB given as (mean, variance); Poisson's where v <= m."""
    return _recursion(phi[..., 0], _alpha(phi))


FAMILY = Family(
    "negative_binomial",
    "count",
    ("mean", "variance"),
    fisher_information,
    kl_divergence,
    log_density,
    support_upper=support_upper,
    pmf_recursion=pmf_recursion,
    renyi_divergence=renyi_by_summation(log_density, support_upper),
    renyi_above_one=False,
)


def mean_variance_hessian(phi, jac, hess):
    """Second derivatives of (m, v = μ + μ²/α) pulled back to (μ, α).

    ``J ∂²(m, v)`` with ``J = ∂(μ, α)/∂(m, v)``: its quadratic form with the
    (μ, α) information is that of ``∂²(m, v)`` with the (m, v) information,
    so R-sens2 in the mean–variance parametrization whitens it in (μ, α),
    where α's information (a sum over the counts) is already computed. With
    ``a = ∂μ/μ`` and ``c = ∂α/α`` it is ``(∂²μ, ∂²α − 2α (a − c)(a − c)ᵀ)``:
    not 0 in α where α is constant, as v moves with μ.

    Parameters
    ----------
    phi : ndarray (..., 2)
        (μ, α).
    jac, hess : lists of 2 arrays (..., D) and (..., D, D), or None where a
        parameter does not vary

    Returns
    -------
    list of 2 arrays (..., D, D), or None where both are None
    """
    if jac[0] is None and jac[1] is None:
        return hess
    m, a = phi[..., 0], phi[..., 1]
    gap = 0.0
    if jac[0] is not None:
        gap = jac[0] / expanded(m, 1)
    if jac[1] is not None:
        gap = gap - jac[1] / expanded(a, 1)
    # far in the Poisson limit (α = ∞ too) the term whitens to ~√2 (μ/α) (a − c)²
    # (I_αα ~ μ²/(2α⁴)), nothing: held at 0 rather than let 2α overflow
    a = np.where(a > 1e150 * (1 + m), 0.0, a)
    pulled = -2 * expanded(a, 2) * outer(gap)
    if hess[1] is not None:
        pulled += hess[1]
    return [hess[0], pulled]


def to_mean_variance(phi, derivatives=None, trailing=0):
    """(μ, α) → (m, v = μ + μ²/α); derivatives ``∂v = (1 + 2μ/α) ∂μ − (μ/α)² ∂α``."""
    m, ratio = phi[..., 0], phi[..., 0] / phi[..., 1]  # ratio 0 where α = ∞ (Poisson)
    mapped = np.stack([m, m * (1 + ratio)], -1)
    if derivatives is None:
        return mapped, None
    d_mean, d_alpha = derivatives
    d_variance = None
    if d_mean is not None:
        d_variance = expanded(1 + 2 * ratio, trailing) * d_mean
    if d_alpha is not None:
        from_alpha = -expanded(ratio**2, trailing) * d_alpha
        d_variance = from_alpha if d_variance is None else d_variance + from_alpha
    return mapped, [d_mean, d_variance]


#: PyMC's own parametrization (mean μ, dispersion α), for per-draw likelihoods
FAMILY_MEAN_ALPHA = Family(
    "negative_binomial",
    "count",
    ("mean", "alpha"),
    fisher_information_mean_alpha,
    kl_divergence_mean_alpha,
    log_density_mean_alpha,
    support_upper=support_upper_mean_alpha,
    support_window=support_window_mean_alpha,
    pmf_recursion=pmf_recursion_mean_alpha,
    graph_log_density=graph_log_density_mean_alpha,
    renyi_divergence=renyi_by_summation(log_density_mean_alpha, support_upper_mean_alpha),
    renyi_above_one=False,
    # α's information is a sum over the support, in NumPy
    fisher_factors=diagonal_factors(_mean_scale, _alpha_scale, in_graph=False),
    mean_variance_hessian=mean_variance_hessian,
    mean_variance=(to_mean_variance, FAMILY),
)

"""Normal(μ, σ) truncated to fixed bounds l < u, in (μ, σ).

With ``a = (l − μ)/σ``, ``b = (u − μ)/σ`` and ``Z = Φ(b) − Φ(a)``, the density
is ``φ(z)/(σZ)`` on (l, u). Its scores are ``(z − m_1)/σ`` and ``(z² − m_2)/σ``,
with ``m_k`` the moments of the standard normal truncated to (a, b)
(`censored_normal.partial_moments` divided by Z, Z in log space), so

- the Fisher information is the covariance of ``(z, z²)`` divided by σ²:
  ``σ² I = [[m_2 − m_1², m_3 − m_1 m_2], [m_3 − m_1 m_2, m_4 − m_2²]]``;
- the entropy is ``log(√(2π) σ Z) + m_2/2``;
- KL and Rényi divergences (same bounds) are those of the Normal densities over
  (l, u), corrected by each law's ``log Z``.

Far in a tail (``a`` large) the covariance is a difference of moments near
``a²``, of about ``a⁴`` times float64's relative error: beyond a bound 4 or
more scales out (the other bound's terms below rounding) the information and
entropy come from the excess over the bound instead (`beyond_a_bound`, the
Mills ratio's continued fraction), to rounding.
"""

import numpy as np

from pm_sens.families._base import Family, log1p_gap, stack_matrix
from pm_sens.families.censored_normal import (
    LOG_ROOT_2PI,
    graph_bounds,
    graph_log_mass,
    log_mixed_interior,
    log_ndtr_gap,
    log_pdf,
    partial_moments,
    standardized,
)

#: a bound this many scales beyond the location, the other bound's terms below
#: rounding: moments from the Mills ratio's continued fraction (`beyond_a_bound`)
TAIL_FROM = 4.0
#: the fraction's levels: 2e-16 relative at 4 scales (against 60-digit arithmetic)
_FRACTION_DEPTH = 50
#: a bound farther out than this stands in for an infinite one in `far_in_a_tail`
_FAR_BOUND = 1e10


def far_in_a_tail(xp, a, b):
    """Where the interval (a, b) lies far in one tail, in the namespace ``xp``.

    Returns ``(far, z, side)``: whether the nearer bound ``z`` (a ≥ 0, or −b ≥
    0) is at least `TAIL_FROM` scales out while the farther one's terms
    ``φ(far)/φ(z)``, times the squares of both, are below 1e-20; z itself (at
    least `TAIL_FROM`); ``side`` +1 where the interval lies above the
    location, −1 below.
    """
    upper_side = a >= 0
    z = xp.where(upper_side, a, -b)
    other = xp.minimum(xp.where(upper_side, b, -a), _FAR_BOUND)
    log_ratio = -(other - z) * (other + z) / 2  # log φ(other) − log φ(z)
    small = log_ratio + 2 * xp.log(xp.maximum(other, 1.0) * xp.maximum(z, 1.0)) < -46.0
    far = (z >= TAIL_FROM) & small
    return far, xp.maximum(z, TAIL_FROM), xp.where(upper_side, 1.0, -1.0)


def beyond_a_bound(xp, z):
    """The standard normal beyond a bound at z ≥ `TAIL_FROM`, in the namespace ``xp``.

    With the Mills ratio's continued fraction ``(1 − Φ(z))/φ(z) = 1/C₁``,
    ``C_k = z + k/C_{k+1}`` (from its `_FRACTION_DEPTH`-th level up), the
    excess x = |y| − z has the raw moments ``E[x^k] = k!/(C₂ ⋯ C_{k+1})``.
    Returns ``C₁`` (the mean's distance from 0, ``z + 1/C₂``), the entropy
    ``½ − log C₁ + z/(2C₂)`` and the central moments ``Var x``, ``Cov(x, x²)``
    and ``Var x²``, each a sum of positive terms by the recurrence:
    ``(2C₂ − C₃)/(C₂²C₃)``, ``2(3C₂ − C₄)/(C₂²C₃C₄)`` and ``4(6C₂C₃ −
    C₄C₅)/(C₂²C₃²C₄C₅)``, where ``1 + zC₁ − C₁²`` (near ``1/z²``) cancels
    terms near z².
    """
    fraction = z
    for k in range(_FRACTION_DEPTH, 6, -1):
        fraction = z + k / fraction
    c6 = z + 6 / fraction
    c5 = z + 5 / c6
    c4 = z + 4 / c5
    c3 = z + 3 / c4
    c2 = z + 2 / c3
    c1 = z + 1 / c2
    variance = (z + 4 / c3 - 3 / c4) / (c2**2 * c3)
    skew = 2 * (2 * z + 6 / c3 - 4 / c5) / (c2**2 * c3 * c4)
    spread = 4 * (z * (5 * z + 18 / c4 - 5 / c6) + 8) / ((c2 * c3) ** 2 * c4 * c5)
    entropy = 0.5 - xp.log(c1) + z / (2 * c2)
    return c1, entropy, variance, skew, spread


def _far_rows(phi, lower, upper):
    """`far_in_a_tail` of the laws ``phi`` on (l, u)."""
    _, _, a, b = standardized(phi, lower, upper)
    return far_in_a_tail(np, *np.broadcast_arrays(a, b))


def _moments(phi, lower, upper, order):
    """σ, ``log Z`` and the truncated standard moments ``m_0 … m_order``."""
    _, sigma, a, b = standardized(phi, lower, upper)
    return sigma, log_ndtr_gap(a, b), partial_moments(a, b, order, normalized=True)


def fisher_information(phi, lower, upper):
    """Fisher information of (μ, σ), (..., 2, 2).

    The covariance of ``(z, z²)`` over σ²; far beyond one bound (`far_in_a_tail`)
    from the excess x beyond it (`beyond_a_bound`): ``z = ±(c + x)``, so
    ``Var z = Var x``, ``Cov(z, z²) = ±(Cov(x, x²) + 2c Var x)`` and ``Var z² =
    Var x² + 4c Cov(x, x²) + 4c² Var x``.
    """
    sigma, _, m = _moments(phi, lower, upper, 4)
    covariance = [
        m[..., 2] - m[..., 1] ** 2,
        m[..., 3] - m[..., 1] * m[..., 2],
        m[..., 4] - m[..., 2] ** 2,
    ]
    far, z, side = _far_rows(phi, lower, upper)
    if far.any():
        c, side = z[far], side[far]
        _, _, var_x, cov_x, var_x2 = beyond_a_bound(np, c)
        for entries, value in zip(
            covariance,
            (var_x, side * (cov_x + 2 * c * var_x), var_x2 + 4 * c * cov_x + 4 * c**2 * var_x),
            strict=True,
        ):
            entries[far] = value
    mu_mu, mu_sigma, sigma_sigma = (x / sigma**2 for x in covariance)
    return stack_matrix([[mu_mu, mu_sigma], [mu_sigma, sigma_sigma]])


def log_density(phi, y, lower, upper):
    """``log φ(z) − log(σZ)`` between the bounds, −inf outside."""
    mu, sigma, a, b = standardized(phi, lower, upper)
    y = np.asarray(y, dtype=float)
    inside = log_pdf((y - mu) / sigma) - np.log(sigma) - log_ndtr_gap(a, b)
    return np.where((y < lower) | (y > upper), -np.inf, inside)


def kl_divergence(phi_p, phi_q, lower, upper):
    """KL(p ‖ q) for the same bounds.

    With ``r = σ_p/σ_q``, ``d = (μ_p − μ_q)/σ_q`` and z standardized under p,
    ``log p/q = −log r + ((r z + d)² − z²)/2 + log Z_q − log Z_p``; ``−log r +
    (r² − 1) m_2/2`` is written ``g(r² − 1)/2 + (r² − 1)(m_2 − 1)/2``.
    """
    _, log_z_p, m = _moments(phi_p, lower, upper, 2)
    _, sigma_q, a_q, b_q = standardized(phi_q, lower, upper)
    r2_minus_1 = np.expm1(2 * (np.log(phi_p[..., 1]) - np.log(sigma_q)))
    r, d = phi_p[..., 1] / sigma_q, (phi_p[..., 0] - phi_q[..., 0]) / sigma_q
    return (
        log1p_gap(r2_minus_1) / 2
        + r2_minus_1 * (m[..., 2] - 1) / 2
        + r * d * m[..., 1]
        + d**2 / 2
        + (log_ndtr_gap(a_q, b_q) - log_z_p)
    )


def renyi_divergence(phi_p, phi_q, alpha, lower, upper):
    """``log(∫_l^u p^α q^(1−α)) / (α − 1)`` with each density divided by its Z."""
    log_zs = [log_ndtr_gap(*standardized(phi, lower, upper)[2:]) for phi in (phi_p, phi_q)]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        interior = log_mixed_interior(phi_p, phi_q, alpha, lower, upper)
        return (interior - alpha * log_zs[0] - (1 - alpha) * log_zs[1]) / (alpha - 1)


def entropy(phi, lower, upper):
    """``log(√(2π) σ Z) + m_2/2``; far beyond one bound, `beyond_a_bound`'s plus ``log σ``."""
    sigma, log_z, m = _moments(phi, lower, upper, 2)
    value = np.log(sigma) + LOG_ROOT_2PI + log_z + m[..., 2] / 2
    far, z, _ = _far_rows(phi, lower, upper)
    if far.any():
        value = np.array(value, dtype=float)
        value[far] = np.broadcast_to(np.log(sigma), far.shape)[far] + beyond_a_bound(np, z[far])[1]
    return value


def graph_log_density(xp, y, mu, sigma, lower, upper):
    """`log_density` in the namespace ``xp`` (one with ``erfcx`` and ``erfc``)."""
    a, b = graph_bounds(xp, mu, sigma, lower, upper)
    inside = log_pdf((y - mu) / sigma) - xp.log(sigma) - graph_log_mass(xp, a, b)
    return xp.where((y < lower) | (y > upper), -np.inf, inside)


FAMILY = Family(
    "truncated_normal",
    "real",
    ("mu", "sigma"),
    fisher_information,
    kl_divergence,
    log_density,
    entropy=entropy,
    graph_log_density=graph_log_density,
    renyi_divergence=renyi_divergence,
)

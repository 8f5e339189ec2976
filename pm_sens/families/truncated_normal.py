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
``a²``: its relative precision is about ``a⁴`` times float64's.
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


def _moments(phi, lower, upper, order):
    """σ, ``log Z`` and the truncated standard moments ``m_0 … m_order``."""
    _, sigma, a, b = standardized(phi, lower, upper)
    return sigma, log_ndtr_gap(a, b), partial_moments(a, b, order, normalized=True)


def fisher_information(phi, lower, upper):
    """Fisher information of (μ, σ), (..., 2, 2)."""
    sigma, _, m = _moments(phi, lower, upper, 4)
    s2 = sigma**2
    mu_mu = (m[..., 2] - m[..., 1] ** 2) / s2
    mu_sigma = (m[..., 3] - m[..., 1] * m[..., 2]) / s2
    sigma_sigma = (m[..., 4] - m[..., 2] ** 2) / s2
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
    """``log(√(2π) σ Z) + m_2/2``."""
    sigma, log_z, m = _moments(phi, lower, upper, 2)
    return np.log(sigma) + LOG_ROOT_2PI + log_z + m[..., 2] / 2


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

"""Wald (inverse Gaussian) law in PyMC's (mu, lam), shifted by a fixed ``shift``.

``log p(y) = ½ log(λ/2π) − (3/2) log y − λ(y − μ)²/(2μ²y)`` for y > 0 (y less
the shift). Its scores are ``λ(y − μ)/μ³`` and ``1/(2λ) − (y − μ)²/(2μ²y)``,
and ``E[y] = μ``, ``E[1/y] = 1/μ + 1/λ`` give everything in closed form:

- Fisher information ``diag(λ/μ³, 1/(2λ²))``;
- ``KL(p ‖ q) = g(λ_q/λ_p − 1)/2 + λ_q (μ_p − μ_q)²/(2 μ_p μ_q²)`` with
  ``g(u) = u − log(1 + u)`` (the ``log y`` terms cancel);
- entropy ``½ log(2π/λ) + ½ + (3/2) E[log y]``, ``E[log y] = log μ − e^{2λ/μ} E₁(2λ/μ)``;
- Rényi divergence: ``p^α q^(1−α)`` is ``C y^{−3/2} e^{−A y − B/y}``, whose
  integral is ``C √(π/B) e^{−2√(AB)}`` (infinite where A < 0 or B <= 0, α > 1).
"""

import numpy as np
from scipy import special

from pm_sens.families._base import Family, log1p_gap

#: e^z E₁(z) by its asymptotic series from here on: 20 terms, relative error < 3e-16
_ASYMPTOTIC_FROM = 50.0
_ASYMPTOTIC_TERMS = 20


def scaled_exp1(z):
    """``e^z E₁(z)`` for z > 0, without overflow for large z."""
    z = np.asarray(z, dtype=float)
    large = z >= _ASYMPTOTIC_FROM
    near, far = np.where(large, 1.0, z), np.where(large, z, _ASYMPTOTIC_FROM)
    series = np.ones_like(far)  # Σ (−1)^k k!/z^(k+1), by Horner's rule
    for k in reversed(range(1, _ASYMPTOTIC_TERMS)):
        series = 1.0 - k * series / far
    return np.where(large, series / far, np.exp(near) * special.exp1(near))


def fisher_information(phi, shift=0.0):
    """``diag(λ/μ³, 1/(2λ²))``, (..., 2, 2)."""
    mu, lam = phi[..., 0], phi[..., 1]
    zero = np.zeros_like(mu)
    return np.stack([np.stack([lam / mu**3, zero], -1), np.stack([zero, 0.5 / lam**2], -1)], -2)


def kl_divergence(phi_p, phi_q, shift=0.0):
    """KL(p ‖ q), its two terms each 0 with their first derivatives at p = q."""
    (mu_p, lam_p), (mu_q, lam_q) = (phi_p[..., 0], phi_p[..., 1]), (phi_q[..., 0], phi_q[..., 1])
    return log1p_gap(lam_q / lam_p - 1) / 2 + lam_q * (mu_p - mu_q) ** 2 / (2 * mu_p * mu_q**2)


def renyi_divergence(phi_p, phi_q, alpha, shift=0.0):
    """``log(C √(π/B) e^{−2√(AB)}) / (α − 1)``, written without cancellation.

    With ``L = α λ_p/μ_p + (1−α) λ_q/μ_q``: ``log C + ½ log(π/B) − 2√(AB)`` is
    ``−½[log(1 + (1−α)(r − 1)) − (1−α) log r] + L − 2√(AB)``, ``r = λ_q/λ_p``,
    and ``L − 2√(AB) = −α(1−α) λ_p λ_q (1/μ_p − 1/μ_q)²/(L + 2√(AB))``.
    """
    (mu_p, lam_p), (mu_q, lam_q) = (phi_p[..., 0], phi_p[..., 1]), (phi_q[..., 0], phi_q[..., 1])
    a_term = (alpha * lam_p / mu_p**2 + (1 - alpha) * lam_q / mu_q**2) / 2
    b_term = (alpha * lam_p + (1 - alpha) * lam_q) / 2
    gap = lam_q / lam_p - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        root = 2 * np.sqrt(a_term * b_term)
        linear = alpha * lam_p / mu_p + (1 - alpha) * lam_q / mu_q
        inverse_gap = (mu_q - mu_p) / (mu_p * mu_q)
        exponent = np.where(
            linear > 0,
            -alpha * (1 - alpha) * lam_p * lam_q * inverse_gap**2 / (linear + root),
            linear - root,
        )
        log_front = -0.5 * (np.log1p((1 - alpha) * gap) - (1 - alpha) * np.log1p(gap))
        value = (log_front + exponent) / (alpha - 1)
    return np.where((a_term < 0) | (b_term <= 0), np.inf, value)


def log_density(phi, y, shift=0.0):
    """Log density at y (−inf at or below the shift)."""
    return graph_log_density(np, np.asarray(y, dtype=float), phi[..., 0], phi[..., 1], shift)


def graph_log_density(xp, y, mu, lam, shift=0.0):
    """`log_density` in the namespace ``xp``: y less the shift, −inf where that is not positive."""
    y = y - shift
    positive = y > 0
    safe = xp.where(positive, y, 1.0)
    value = (
        0.5 * xp.log(lam / (2 * np.pi))
        - 1.5 * xp.log(safe)
        - lam * (safe - mu) ** 2 / (2 * mu**2 * safe)
    )
    return xp.where(positive, value, -np.inf)


def mean_log(phi):
    """``E[log y] = log μ − e^{2λ/μ} E₁(2λ/μ)`` (y less the shift)."""
    mu, lam = phi[..., 0], phi[..., 1]
    return np.log(mu) - scaled_exp1(2 * lam / mu)


def entropy(phi, shift=0.0):
    """``½ log(2π/λ) + ½ + (3/2) E[log y]``."""
    return 0.5 * np.log(2 * np.pi / phi[..., 1]) + 0.5 + 1.5 * mean_log(phi)


FAMILY = Family(
    "wald",
    "positive",
    ("mu", "lam"),
    fisher_information,
    kl_divergence,
    log_density,
    entropy=entropy,
    graph_log_density=graph_log_density,
    renyi_divergence=renyi_divergence,
)

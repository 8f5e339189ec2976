"""Weibull(shape k, scale λ), in PyMC's (alpha, beta).

With ``u = (y/λ)^k``, an Exponential(1) variable, the scores are
``∂_λ log p = (k/λ)(u − 1)`` and ``∂_k log p = (1 + (1 − u) log u)/k``, whose
expectations over u give the information below. ``−log y`` is
Gumbel(−log λ, 1/k): divergences, invariant under that map, are the Gumbel's.
"""

import numpy as np

from pm_sens.families import gumbel
from pm_sens.families._base import Family


def fisher_information(phi):
    """Fisher information in (k, λ): ``[[c/k², −(1 − γ)/λ], [−(1 − γ)/λ, k²/λ²]]``."""
    k, scale = phi[..., 0], phi[..., 1]
    cross = -(1 - np.euler_gamma) / scale
    shape = gumbel.SHAPE_INFORMATION / k**2
    return np.stack([np.stack([shape, cross], -1), np.stack([cross, (k / scale) ** 2], -1)], -2)


def _as_gumbel(phi):
    """The Gumbel (μ, β) = (−log λ, 1/k) of ``−log y``."""
    return np.stack([-np.log(phi[..., 1]), 1 / phi[..., 0]], -1)


def kl_divergence(phi_p, phi_q):
    """KL(p ‖ q): the Gumbel's of ``−log y`` (`gumbel.kl_divergence`)."""
    return gumbel.kl_divergence(_as_gumbel(phi_p), _as_gumbel(phi_q))


def renyi_divergence(phi_p, phi_q, alpha):
    """Rényi divergence (0 < α < 1): the Gumbel's of ``−log y``."""
    return gumbel.renyi_divergence(_as_gumbel(phi_p), _as_gumbel(phi_q), alpha)


def log_density(phi, y):
    """Log density at y >= 0."""
    from scipy import stats

    return stats.weibull_min.logpdf(y, phi[..., 0], scale=phi[..., 1])


def entropy(phi):
    """``γ(1 − 1/k) + log(λ/k) + 1``."""
    k, scale = phi[..., 0], phi[..., 1]
    return np.euler_gamma * (1 - 1 / k) + np.log(scale / k) + 1


FAMILY = Family(
    "weibull",
    "positive",
    ("alpha", "beta"),
    fisher_information,
    kl_divergence,
    log_density,
    entropy,
    renyi_divergence=renyi_divergence,
    renyi_above_one=False,
)

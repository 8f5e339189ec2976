"""Normal(mean, variance)."""

import numpy as np
from scipy import stats

from pm_sens.families._base import Family, diagonal_matrix, log1p_gap


def fisher_information(phi):
    """Fisher information of Normal(m, v) in (m, v): ``diag(1/v, 1/(2v²))``."""
    v = phi[..., 1]
    return diagonal_matrix(1 / v, 1 / (2 * v**2))


def kl_divergence(phi_p, phi_q):
    """KL(N(m₁, v₁) ‖ N(m₂, v₂)) = ½[g(v₁/v₂ − 1) + (m₁ − m₂)²/v₂], g(u) = u − log(1+u)."""
    (m1, v1), (m2, v2) = (phi_p[..., 0], phi_p[..., 1]), (phi_q[..., 0], phi_q[..., 1])
    return 0.5 * (log1p_gap((v1 - v2) / v2) + (m1 - m2) ** 2 / v2)


def log_density(phi, y):
    """Log density at y."""
    return stats.norm.logpdf(y, phi[..., 0], np.sqrt(phi[..., 1]))


def entropy(phi):
    """``½ log(2πe v)``."""
    return 0.5 * np.log(2 * np.pi * np.e * phi[..., 1])


FAMILY = Family(
    "normal",
    "real",
    ("mean", "variance"),
    fisher_information,
    kl_divergence,
    log_density,
    entropy,
)

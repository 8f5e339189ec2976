"""Exponential(mean)."""

import numpy as np

from pm_sens.families._base import Family, log1p_gap
from pm_sens.families._renyi import renyi_exponential_family


def fisher_information(phi):
    """Fisher information of the mean m: ``1/m²``."""
    m = phi[..., :1]
    return (1 / m**2)[..., None]


def kl_divergence(phi_p, phi_q):
    """KL between exponentials with means m₁, m₂: ``g(m₁/m₂ − 1)``."""
    m1, m2 = phi_p[..., 0], phi_q[..., 0]
    return log1p_gap((m1 - m2) / m2)


def renyi_divergence(phi_p, phi_q, alpha):
    """Rényi divergence between exponentials: natural parameter ``−1/m``."""
    return renyi_exponential_family(
        (-1 / phi_p[..., 0],),
        (-1 / phi_q[..., 0],),
        lambda eta: -np.log(-eta),
        alpha,
        lambda eta: eta < 0,
    )


def log_density(phi, y):
    """Log density at y >= 0."""
    from scipy import stats

    return stats.expon.logpdf(y, scale=phi[..., 0])


def graph_log_density(xp, y, mean):
    """``−y/m − log m`` at y >= 0 (−inf below), in the namespace ``xp``."""
    return xp.where(y >= 0, -y / mean - xp.log(mean), -np.inf)


def entropy(phi):
    """``1 + log m``."""
    return 1 + np.log(phi[..., 0])


FAMILY = Family(
    "exponential",
    "positive",
    ("mean",),
    fisher_information,
    kl_divergence,
    log_density,
    entropy,
    graph_log_density=graph_log_density,
    renyi_divergence=renyi_divergence,
)

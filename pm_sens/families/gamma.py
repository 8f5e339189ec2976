"""Gamma(mean, variance): shape m²/v, rate m/v."""

import numpy as np
from scipy import stats
from scipy.special import gammaln, polygamma, psi

from pm_sens.families._base import Family, reparametrize, stack_matrix


def fisher_information(phi):
    """Fisher information in (m, v), from the shape/rate form ``[[ψ′(a), −1/b], [−1/b, a/b²]]``."""
    m, v = phi[..., 0], phi[..., 1]
    a, b = m**2 / v, m / v
    info = stack_matrix([[polygamma(1, a), -1 / b], [-1 / b, a / b**2]])
    jac = stack_matrix([[2 * m / v, -(m**2) / v**2], [1 / v, -m / v**2]])
    return reparametrize(info, jac)


def kl_divergence(phi_p, phi_q):
    """KL between Gamma laws with shape a = m²/v and rate r = m/v."""
    a1, r1 = phi_p[..., 0] ** 2 / phi_p[..., 1], phi_p[..., 0] / phi_p[..., 1]
    a2, r2 = phi_q[..., 0] ** 2 / phi_q[..., 1], phi_q[..., 0] / phi_q[..., 1]
    return (
        (a1 - a2) * psi(a1)
        - gammaln(a1)
        + gammaln(a2)
        + a2 * np.log(r1 / r2)
        + a1 * (r2 - r1) / r1
    )


def log_density(phi, y):
    """Log density at y > 0."""
    return stats.gamma.logpdf(y, phi[..., 0] ** 2 / phi[..., 1], scale=phi[..., 1] / phi[..., 0])


def entropy(phi):
    """``a − log r + log Γ(a) + (1 − a) ψ(a)`` (shape a, rate r)."""
    a, r = phi[..., 0] ** 2 / phi[..., 1], phi[..., 0] / phi[..., 1]
    return a - np.log(r) + gammaln(a) + (1 - a) * psi(a)


FAMILY = Family(
    "gamma",
    "positive",
    ("mean", "variance"),
    fisher_information,
    kl_divergence,
    log_density,
    entropy,
)

"""LogNormal(mean, variance) of y (not of log y)."""

import numpy as np

from pm_sens.families import normal
from pm_sens.families._base import Family, diagonal_matrix, reparametrize, stack_matrix


def fisher_information(phi):
    """Fisher information in (m, v), from ``diag(1/s, 1/(2s²))`` in (μ, s = σ²).

    ``s = log(1 + v/m²)`` and ``μ = log m − s/2``.
    """
    m, v = phi[..., 0], phi[..., 1]
    s = np.log1p(v / m**2)
    ds_dm = -2 * v / (m * (m**2 + v))
    ds_dv = 1 / (m**2 + v)
    jac = stack_matrix([[1 / m - ds_dm / 2, -ds_dv / 2], [ds_dm, ds_dv]])
    return reparametrize(diagonal_matrix(1 / s, 1 / (2 * s**2)), jac)


def _log_moments(phi):
    """Mean and variance of log y."""
    s = np.log1p(phi[..., 1] / phi[..., 0] ** 2)
    return np.stack([np.log(phi[..., 0]) - s / 2, s], -1)


def kl_divergence(phi_p, phi_q):
    """KL between lognormals: the KL of the normal laws of log y."""
    return normal.kl_divergence(_log_moments(phi_p), _log_moments(phi_q))


def renyi_divergence(phi_p, phi_q, alpha):
    """That of the normal laws of log y (a divergence is kept by a bijection)."""
    return normal.renyi_divergence(_log_moments(phi_p), _log_moments(phi_q), alpha)


def log_density(phi, y):
    """Log density at y > 0."""
    from scipy import stats

    log_moments = _log_moments(phi)
    return stats.lognorm.logpdf(y, np.sqrt(log_moments[..., 1]), scale=np.exp(log_moments[..., 0]))


def graph_log_density(xp, y, mean, variance):
    """The Normal's of log y (mean μ, variance s: `_log_moments`) less log y, y > 0.

    In the namespace ``xp``; −inf at y <= 0.
    """
    s = xp.log1p(variance / mean**2)
    log_y = xp.log(xp.where(y > 0, y, 1.0))
    inside = -log_y - 0.5 * (log_y - xp.log(mean) + s / 2) ** 2 / s - 0.5 * xp.log(2 * np.pi * s)
    return xp.where(y > 0, inside, -np.inf)


def entropy(phi):
    """``μ + ½ log(2πe σ²)`` with μ, σ² the mean and variance of log y."""
    log_moments = _log_moments(phi)
    return log_moments[..., 0] + normal.entropy(log_moments)


FAMILY = Family(
    "lognormal",
    "positive",
    ("mean", "variance"),
    fisher_information,
    kl_divergence,
    log_density,
    entropy,
    graph_log_density=graph_log_density,
    renyi_divergence=renyi_divergence,
)

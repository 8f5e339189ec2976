"""Binomial(n, p) with n fixed."""

import numpy as np
from scipy import stats

from pm_sens.families import bernoulli
from pm_sens.families._base import Family, clip_probability


def fisher_information(phi, n):
    """Fisher information of p: ``n/(p(1−p))``."""
    p = clip_probability(phi[..., :1])
    return (np.asarray(n)[..., None] / (p * (1 - p)))[..., None]


def kl_divergence(phi_p, phi_q, n):
    """KL between Binomial(n, p) laws: n times the Bernoulli KL."""
    return np.asarray(n) * bernoulli.kl_divergence(phi_p, phi_q)


def log_density(phi, y, n):
    """Log pmf at y ∈ {0, …, n}."""
    return stats.binom.logpmf(y, np.asarray(n).astype(int), phi[..., 0])


def support_upper(phi, tail, n):
    """The support is {0, …, n}."""
    return np.broadcast_to(np.asarray(n), phi.shape[:-1]).astype(int)


FAMILY = Family(
    "binomial",
    "binomial",
    ("p",),
    fisher_information,
    kl_divergence,
    log_density,
    support_upper=support_upper,
)

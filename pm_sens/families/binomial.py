"""Binomial(n, p) with n fixed; like the Bernoulli, may carry ``1 − p`` as a column."""

import numpy as np
from scipy import stats

from pm_sens.families import bernoulli
from pm_sens.families._base import Family


def fisher_information(phi, n):
    """Fisher information of p: ``n/(p(1−p))``."""
    return np.asarray(n)[..., None, None] * bernoulli.fisher_information(phi)


def fisher_factors(phi, given, n):
    """Square roots of the (diagonal) information on the columns in ``given``."""
    scales, _ = bernoulli.fisher_factors(phi, given)
    return np.sqrt(np.asarray(n))[..., None] * scales, None


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
    fisher_factors=fisher_factors,
)

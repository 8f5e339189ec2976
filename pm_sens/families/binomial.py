"""Binomial(n, p) with n fixed."""

import numpy as np

from pm_sens.families import bernoulli
from pm_sens.families._base import Family, clip_probability


def fisher_information(phi, n):
    """Fisher information of p: ``n/(p(1−p))``."""
    p = clip_probability(phi[..., :1])
    return (np.asarray(n)[..., None] / (p * (1 - p)))[..., None]


def kl_divergence(phi_p, phi_q, n):
    """KL between Binomial(n, p) laws: n times the Bernoulli KL."""
    return np.asarray(n) * bernoulli.kl_divergence(phi_p, phi_q)


FAMILY = Family("binomial", "binomial", ("p",), fisher_information, kl_divergence)

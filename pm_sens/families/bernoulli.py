"""Bernoulli(p)."""

import numpy as np

from pm_sens.families._base import Family, clip_probability, log1p_gap


def fisher_information(phi):
    """Fisher information of p: ``1/(p(1−p))``."""
    p = clip_probability(phi[..., :1])
    return (1 / (p * (1 - p)))[..., None]


def kl_divergence(phi_p, phi_q):
    """KL between Bernoulli laws: ``p₁ g(d/p₁) + (1−p₁) g(−d/(1−p₁))``, d = p₂ − p₁."""
    p1, p2 = clip_probability(phi_p[..., 0]), clip_probability(phi_q[..., 0])
    d = p2 - p1
    return p1 * log1p_gap(d / p1) + (1 - p1) * log1p_gap(-d / (1 - p1))


def log_density(phi, y):
    """Log pmf at y ∈ {0, 1} (−inf elsewhere)."""
    p = phi[..., 0]
    with np.errstate(divide="ignore"):
        return np.where(y == 1, np.log(p), np.where(y == 0, np.log1p(-p), -np.inf))


def support_upper(phi, tail):
    """The support is {0, 1}."""
    return np.ones(phi.shape[:-1], dtype=int)


FAMILY = Family(
    "bernoulli",
    "binary",
    ("p",),
    fisher_information,
    kl_divergence,
    log_density,
    support_upper=support_upper,
)

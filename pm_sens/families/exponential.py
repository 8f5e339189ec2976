"""Exponential(mean)."""

from pm_sens.families._base import Family, log1p_gap


def fisher_information(phi):
    """Fisher information of the mean m: ``1/m²``."""
    m = phi[..., :1]
    return (1 / m**2)[..., None]


def kl_divergence(phi_p, phi_q):
    """KL between exponentials with means m₁, m₂: ``g(m₁/m₂ − 1)``."""
    m1, m2 = phi_p[..., 0], phi_q[..., 0]
    return log1p_gap((m1 - m2) / m2)


FAMILY = Family("exponential", "positive", ("mean",), fisher_information, kl_divergence)

"""Poisson(mean)."""

from pm_sens.families._base import Family, clip_positive, log1p_gap


def fisher_information(phi):
    """Fisher information of the rate m: ``1/m``."""
    m = clip_positive(phi[..., :1])
    return (1 / m)[..., None]


def kl_divergence(phi_p, phi_q):
    """KL between Poisson laws: ``m₁ g((m₂ − m₁)/m₁)``."""
    m1, m2 = clip_positive(phi_p[..., 0]), clip_positive(phi_q[..., 0])
    return m1 * log1p_gap((m2 - m1) / m1)


FAMILY = Family("poisson", "count", ("mean",), fisher_information, kl_divergence)

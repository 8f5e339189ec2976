"""Exponential(mean)."""

from pm_sens.families._base import Family


def fisher_information(phi):
    """Fisher information of the mean m: ``1/m²``."""
    m = phi[..., :1]
    return (1 / m**2)[..., None]


FAMILY = Family("exponential", "positive", ("mean",), fisher_information)

"""Poisson(mean)."""

from pm_sens.families._base import Family


def fisher_information(phi):
    """Fisher information of the rate m: ``1/m``."""
    m = phi[..., :1]
    return (1 / m)[..., None]


FAMILY = Family("poisson", "count", ("mean",), fisher_information)

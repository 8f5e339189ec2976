"""Poisson(mean)."""

from pm_sens.families._base import Family, clip_positive


def fisher_information(phi):
    """Fisher information of the rate m: ``1/m``."""
    m = clip_positive(phi[..., :1])
    return (1 / m)[..., None]


FAMILY = Family("poisson", "count", ("mean",), fisher_information)

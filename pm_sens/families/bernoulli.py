"""Bernoulli(p)."""

from pm_sens.families._base import Family


def fisher_information(phi):
    """Fisher information of p: ``1/(p(1−p))``."""
    p = phi[..., :1]
    return (1 / (p * (1 - p)))[..., None]


FAMILY = Family("bernoulli", "binary", ("p",), fisher_information)

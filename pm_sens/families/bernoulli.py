"""Bernoulli(p)."""

from pm_sens.families._base import Family, clip_probability


def fisher_information(phi):
    """Fisher information of p: ``1/(p(1−p))``."""
    p = clip_probability(phi[..., :1])
    return (1 / (p * (1 - p)))[..., None]


FAMILY = Family("bernoulli", "binary", ("p",), fisher_information)

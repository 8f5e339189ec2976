"""Binomial(n, p) with n fixed."""

import numpy as np

from pm_sens.families._base import Family, clip_probability


def fisher_information(phi, n):
    """Fisher information of p: ``n/(p(1−p))``."""
    p = clip_probability(phi[..., :1])
    return (np.asarray(n)[..., None] / (p * (1 - p)))[..., None]


FAMILY = Family("binomial", "binomial", ("p",), fisher_information)

"""Student-t in (location μ, squared scale s = σ², degrees of freedom ν).

Not a moment-matching target (its variance needs ν > 2 and ν is not identified
by two moments); used per draw for Student-t likelihoods.
"""

import numpy as np
from scipy.special import polygamma

from pm_sens.families._base import Family, stack_matrix


def fisher_information(phi):
    """Fisher information in (μ, s, ν) (Lange, Little & Taylor 1989, in s = σ²)."""
    s, nu = phi[..., 1], phi[..., 2]
    zero = np.zeros_like(s)
    i_mm = (nu + 1) / ((nu + 3) * s)
    i_ss = nu / (2 * (nu + 3) * s**2)
    i_sn = -1 / ((nu + 1) * (nu + 3) * s)
    i_nn = (polygamma(1, nu / 2) - polygamma(1, (nu + 1) / 2)) / 4 - (nu + 5) / (
        2 * nu * (nu + 1) * (nu + 3)
    )
    return stack_matrix([[i_mm, zero, zero], [zero, i_ss, i_sn], [zero, i_sn, i_nn]])


FAMILY = Family("studentt", "real", ("location", "scale2", "nu"), fisher_information)

"""LogNormal(mean, variance) of y (not of log y)."""

import numpy as np

from pm_sens.families._base import Family, diagonal_matrix, reparametrize, stack_matrix


def fisher_information(phi):
    """Fisher information in (m, v), from ``diag(1/s, 1/(2s²))`` in (μ, s = σ²).

    ``s = log(1 + v/m²)`` and ``μ = log m − s/2``.
    """
    m, v = phi[..., 0], phi[..., 1]
    s = np.log1p(v / m**2)
    ds_dm = -2 * v / (m * (m**2 + v))
    ds_dv = 1 / (m**2 + v)
    jac = stack_matrix([[1 / m - ds_dm / 2, -ds_dv / 2], [ds_dm, ds_dv]])
    return reparametrize(diagonal_matrix(1 / s, 1 / (2 * s**2)), jac)


FAMILY = Family("lognormal", "positive", ("mean", "variance"), fisher_information)

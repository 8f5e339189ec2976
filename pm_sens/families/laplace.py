"""Laplace(mean, variance); PyMC's scale b gives variance 2b²."""

from pm_sens.families._base import Family, diagonal_matrix


def fisher_information(phi):
    """Fisher information in (m, v): ``diag(1/b², 1/(4v²))`` with ``b² = v/2``."""
    v = phi[..., 1]
    return diagonal_matrix(2 / v, 1 / (4 * v**2))


FAMILY = Family("laplace", "real", ("mean", "variance"), fisher_information)

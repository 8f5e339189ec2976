"""Normal(mean, variance)."""

from pm_sens.families._base import Family, diagonal_matrix


def fisher_information(phi):
    """Fisher information of Normal(m, v) in (m, v): ``diag(1/v, 1/(2v²))``."""
    v = phi[..., 1]
    return diagonal_matrix(1 / v, 1 / (2 * v**2))


FAMILY = Family("normal", "real", ("mean", "variance"), fisher_information)

"""Gamma(mean, variance): shape m²/v, rate m/v."""

from scipy.special import polygamma

from pm_sens.families._base import Family, reparametrize, stack_matrix


def fisher_information(phi):
    """Fisher information in (m, v), from the shape/rate form ``[[ψ′(a), −1/b], [−1/b, a/b²]]``."""
    m, v = phi[..., 0], phi[..., 1]
    a, b = m**2 / v, m / v
    info = stack_matrix([[polygamma(1, a), -1 / b], [-1 / b, a / b**2]])
    jac = stack_matrix([[2 * m / v, -(m**2) / v**2], [1 / v, -m / v**2]])
    return reparametrize(info, jac)


FAMILY = Family("gamma", "positive", ("mean", "variance"), fisher_information)

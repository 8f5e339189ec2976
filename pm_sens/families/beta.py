"""Beta(mean, variance): concentration κ = m(1−m)/v − 1, α = mκ, β = (1−m)κ."""

import numpy as np
from scipy.special import betaln, polygamma, psi

from pm_sens.families._base import Family, graph_log_beta, reparametrize, stack_matrix
from pm_sens.families._renyi import renyi_exponential_family


def fisher_information(phi):
    """Fisher information in (m, v), from the (α, β) form with trigamma ψ′."""
    m, v = phi[..., 0], phi[..., 1]
    kappa = m * (1 - m) / v - 1
    a, b = m * kappa, (1 - m) * kappa
    t_ab = polygamma(1, a + b)
    info = stack_matrix([[polygamma(1, a) - t_ab, -t_ab], [-t_ab, polygamma(1, b) - t_ab]])
    dk_dm, dk_dv = (1 - 2 * m) / v, -m * (1 - m) / v**2
    jac = stack_matrix(
        [[kappa + m * dk_dm, m * dk_dv], [-kappa + (1 - m) * dk_dm, (1 - m) * dk_dv]]
    )
    return reparametrize(info, jac)


def _shapes(phi):
    return _shapes_of(phi[..., 0], phi[..., 1])


def _shapes_of(mean, variance):
    kappa = mean * (1 - mean) / variance - 1
    return mean * kappa, (1 - mean) * kappa


def kl_divergence(phi_p, phi_q):
    """KL between Beta laws, from their (α, β) shapes."""
    (a1, b1), (a2, b2) = _shapes(phi_p), _shapes(phi_q)
    return (
        betaln(a2, b2)
        - betaln(a1, b1)
        + (a1 - a2) * psi(a1)
        + (b1 - b2) * psi(b1)
        + (a2 - a1 + b2 - b1) * psi(a1 + b1)
    )


def renyi_divergence(phi_p, phi_q, alpha):
    """Rényi divergence between Beta laws: natural parameters ``(a − 1, b − 1)``."""
    (a1, b1), (a2, b2) = _shapes(phi_p), _shapes(phi_q)
    return renyi_exponential_family(
        (a1 - 1, b1 - 1),
        (a2 - 1, b2 - 1),
        lambda a_1, b_1: betaln(a_1 + 1, b_1 + 1),
        alpha,
        lambda a_1, b_1: (a_1 > -1) & (b_1 > -1),
    )


def log_density(phi, y):
    """Log density at 0 < y < 1."""
    from scipy import stats

    a, b = _shapes(phi)
    return stats.beta.logpdf(y, a, b)


def graph_log_density(xp, y, mean, variance):
    """`log_density` in the namespace ``xp`` (one with ``gammaln``, as PyTensor's).

    ``(a − 1) log y + (b − 1) log(1 − y) − log B(a, b)`` of the shapes; −inf
    outside [0, 1], ±inf at 0 and 1 as SciPy's (a, b ≠ 1).
    """
    a, b = _shapes_of(mean, variance)
    inside = (a - 1) * xp.log(y) + (b - 1) * xp.log1p(-y) - graph_log_beta(xp, a, b)
    return xp.where((y >= 0) & (y <= 1), inside, -np.inf)


def entropy(phi):
    """``log B(a, b) − (a−1)ψ(a) − (b−1)ψ(b) + (a+b−2)ψ(a+b)``."""
    a, b = _shapes(phi)
    return betaln(a, b) - (a - 1) * psi(a) - (b - 1) * psi(b) + (a + b - 2) * psi(a + b)


FAMILY = Family(
    "beta",
    "unit",
    ("mean", "variance"),
    fisher_information,
    kl_divergence,
    log_density,
    entropy,
    graph_log_density=graph_log_density,
    renyi_divergence=renyi_divergence,
)

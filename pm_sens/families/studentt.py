"""Student-t in (location μ, squared scale s = σ², degrees of freedom ν).

Not a moment-matching target (its variance needs ν > 2 and ν is not identified
by two moments); used per draw for Student-t likelihoods.
"""

import numpy as np
from scipy.special import betaln, polygamma, psi
from scipy.stats import t as student_t

from pm_sens.families._base import Family, log1p_gap, stack_matrix


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


_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(200)


def kl_divergence(phi_p, phi_q):
    """KL between Student-t laws by Gauss–Legendre quadrature.

    No closed form exists. With ``y = μ + σ√ν tan θ`` the density of p becomes
    ``∝ cos^(ν−1) θ`` on (−π/2, π/2), smooth, so the nodes cover the heavy tails.
    """
    theta = (np.pi / 2 * _NODES).reshape(-1, *([1] * (phi_p.ndim - 1)))
    weights = (np.pi / 2 * _WEIGHTS).reshape(theta.shape)
    mu, scale, nu = phi_p[..., 0], np.sqrt(phi_p[..., 1]), phi_p[..., 2]
    y = mu + scale * np.sqrt(nu) * np.tan(theta)
    jacobian = scale * np.sqrt(nu) / np.cos(theta) ** 2
    logp = student_t.logpdf(y, nu, mu, scale)
    logq = student_t.logpdf(y, phi_q[..., 2], phi_q[..., 0], np.sqrt(phi_q[..., 1]))
    # E_p[log p/q] = E_p[g(q/p − 1)], g(u) = u − log1p(u): no cancellation for close laws
    return (weights * jacobian * np.exp(logp) * log1p_gap(np.expm1(logq - logp))).sum(0)


def log_density(phi, y):
    """Log density at y."""
    return student_t.logpdf(y, phi[..., 2], phi[..., 0], np.sqrt(phi[..., 1]))


def entropy(phi):
    """``(ν+1)/2 [ψ((ν+1)/2) − ψ(ν/2)] + log(√ν B(ν/2, ½)) + ½ log s``."""
    s, nu = phi[..., 1], phi[..., 2]
    return (
        (nu + 1) / 2 * (psi((nu + 1) / 2) - psi(nu / 2))
        + 0.5 * np.log(nu)
        + betaln(nu / 2, 0.5)
        + 0.5 * np.log(s)
    )


FAMILY = Family(
    "studentt",
    "real",
    ("location", "scale2", "nu"),
    fisher_information,
    kl_divergence,
    log_density,
    entropy,
)

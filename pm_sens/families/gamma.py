"""Gamma(mean, variance): shape m²/v, rate m/v."""

import math

import numpy as np
from scipy.special import gammaln, polygamma, psi

from pm_sens.families._base import (
    Family,
    diagonal_factors,
    diagonal_matrix,
    expanded,
    log1p_gap,
    outer,
    reparametrize,
    stack_matrix,
)
from pm_sens.families._renyi import renyi_exponential_family


def fisher_information(phi):
    """Fisher information in (m, v), from the shape/rate form ``[[ψ′(a), −1/b], [−1/b, a/b²]]``."""
    m, v = phi[..., 0], phi[..., 1]
    a, b = m**2 / v, m / v
    info = stack_matrix([[polygamma(1, a), -1 / b], [-1 / b, a / b**2]])
    jac = stack_matrix([[2 * m / v, -(m**2) / v**2], [1 / v, -m / v**2]])
    return reparametrize(info, jac)


def shape_information(k):
    """``ψ′(k) − 1/k``, the shape's information given the mean.

    A series for large k, where the difference would lose ~2·eps·k of its digits.
    """
    k = np.asarray(k, dtype=float)
    large = k > 100
    z = 1 / np.where(large, k, 1.0)
    series = z**2 * (1 / 2 + z * (1 / 6 - z**2 * (1 / 30 - z**2 / 42)))
    return np.where(large, series, polygamma(1, np.where(large, 1.0, k)) - 1 / k)


def _mean_variance_factors(k):
    """Scales (relative to 1/m and to k/v) and correlation of the (m, v) information."""
    b = shape_information(k)
    return (
        np.sqrt(k * (1 + 4 * k * b)),
        np.sqrt(b) * k,
        -2 * np.sqrt(k * b) / np.sqrt(1 + 4 * k * b),
    )


def fisher_factors(phi, given):
    """Scales and correlation of the (m, v) information, via the orthogonal (m, k).

    With ``k = m²/v`` the information in (m, k) is ``diag(k/m², B)``, ``B`` the
    shape information; mapping back, ``I_mm = k(1 + 4kB)/m²``, ``I_vv = Bk²/v²``,
    ``I_mv = −2k²B/(mv)``.
    """
    m, v = phi[..., 0], phi[..., 1]
    k = m * (m / v)
    mean_scale, variance_scale, cross = _mean_variance_factors(k)
    scales = np.stack([mean_scale / m, variance_scale / v], -1)[..., given]
    if len(given) < 2:
        return scales, None
    ones = np.ones_like(cross)
    return scales, stack_matrix([[ones, cross], [cross, ones]])


def kl_divergence(phi_p, phi_q):
    """KL between Gamma laws with shape a = m²/v and rate r = m/v (`kl_divergence_mean_shape`)."""
    (m1, v1), (m2, v2) = (phi_p[..., 0], phi_p[..., 1]), (phi_q[..., 0], phi_q[..., 1])
    return kl_divergence_mean_shape(
        np.stack([m1, m1 * (m1 / v1)], -1), np.stack([m2, m2 * (m2 / v2)], -1)
    )


#: shapes closer than this (relative) take the Taylor series of log Γ (error ~ 1e-12 of it)
_CLOSE_SHAPES = 1e-3


def _shape_terms(k1, k2):
    """``log Γ(k₂) − log Γ(k₁) − (k₂ − k₁) ψ(k₁)`` (>= 0), accurate for close shapes.

    Where ``|k₂ − k₁| < 1e-3 k₁`` the difference is ``Σ_{n>=2} ψ^{(n−1)}(k₁) d^n/n!``
    (four terms), which keeps its relative precision where the direct form
    loses everything but ``eps · log Γ(k)``.
    """
    d = k2 - k1
    close = np.abs(d) < _CLOSE_SHAPES * k1
    series = sum(polygamma(n - 1, k1) * d**n / math.factorial(n) for n in range(2, 6))
    direct = gammaln(k2) - gammaln(k1) - d * psi(k1)
    return np.where(close, series, direct)


def log_density(phi, y):
    """Log density at y > 0."""
    from scipy import stats

    return stats.gamma.logpdf(y, phi[..., 0] ** 2 / phi[..., 1], scale=phi[..., 1] / phi[..., 0])


def renyi_shape_rate(a1, r1, a2, r2, alpha):
    """Rényi divergence between Gamma laws of shapes a and rates r.

    Natural parameters ``(a − 1, −r)``, log-partition ``log Γ(a) − a log r``.
    """
    return renyi_exponential_family(
        (a1 - 1, -r1),
        (a2 - 1, -r2),
        lambda shape_1, minus_rate: gammaln(shape_1 + 1) - (shape_1 + 1) * np.log(-minus_rate),
        alpha,
        lambda shape_1, minus_rate: (shape_1 > -1) & (minus_rate < 0),
    )


def renyi_divergence(phi_p, phi_q, alpha):
    """Rényi divergence between Gamma laws given as (mean, variance)."""
    (m1, v1), (m2, v2) = (phi_p[..., 0], phi_p[..., 1]), (phi_q[..., 0], phi_q[..., 1])
    return renyi_shape_rate(m1**2 / v1, m1 / v1, m2**2 / v2, m2 / v2, alpha)


def entropy(phi):
    """``a − log r + log Γ(a) + (1 − a) ψ(a)`` (shape a, rate r)."""
    a, r = phi[..., 0] ** 2 / phi[..., 1], phi[..., 0] / phi[..., 1]
    return a - np.log(r) + gammaln(a) + (1 - a) * psi(a)


FAMILY = Family(
    "gamma",
    "positive",
    ("mean", "variance"),
    fisher_information,
    kl_divergence,
    log_density,
    entropy,
    fisher_factors=fisher_factors,
    renyi_divergence=renyi_divergence,
)


# Per-draw Gamma in (mean, shape): orthogonal, and finite for means e^±700
# whose variance m²/k would overflow.


def fisher_information_mean_shape(phi):
    """``diag(k/m², ψ′(k) − 1/k)``."""
    m, k = phi[..., 0], phi[..., 1]
    return diagonal_matrix(k / m**2, shape_information(k))


#: square roots of the diagonal information in (m, k): ``√k/m``, ``sqrt(ψ′(k) − 1/k)``
_FACTORS_MEAN_SHAPE = diagonal_factors(
    lambda xp, m, k: np.sqrt(k) / m,
    lambda xp, m, k: np.sqrt(shape_information(k)),
    in_graph=False,  # the shape's information by SciPy's polygamma
)


def whitened_hessian_mean_shape(phi, jac, hess):
    """Hessians of (m, v = m²/k), whitened with the (m, v) information.

    With relative derivatives ``a = ∂m/m``, ``c = ∂k/k``, ``A = ∂²m/m``,
    ``C = ∂²k/k``: ``∂²v/v = 2(aaᵀ + A) − 2(acᵀ + caᵀ) − C + 2ccᵀ``.
    """
    m, k = (phi[..., i, None, None] for i in (0, 1))
    mean_scale, variance_scale, cross = _mean_variance_factors(k)
    relative_hessian = 0.0
    if jac[0] is not None:
        a, big_a = jac[0] / m[..., 0], hess[0] / m
        relative_hessian = 2 * (outer(a) + big_a)
    if jac[1] is not None:
        c, big_c = jac[1] / k[..., 0], hess[1] / k
        relative_hessian = relative_hessian - big_c + 2 * outer(c)
        if jac[0] is not None:
            mixed = a[..., :, None] * c[..., None, :]
            relative_hessian = relative_hessian - 2 * (mixed + np.swapaxes(mixed, -1, -2))
    u_variance = variance_scale * relative_hessian
    if jac[0] is None:
        return [u_variance], None
    ones = np.ones_like(cross[..., 0, 0])
    corr = stack_matrix([[ones, cross[..., 0, 0]], [cross[..., 0, 0], ones]])
    return [mean_scale * big_a, u_variance], corr


def kl_divergence_mean_shape(phi_p, phi_q):
    """KL between Gamma laws given as (mean, shape).

    With rates ``r = k/m`` and ``u = r₂/r₁ − 1``, the rate terms
    ``k₂ log(r₁/r₂) + k₁ u`` are written ``k₂ g(u) + (k₁ − k₂) u`` (g as in
    `log1p_gap`), exact when the laws are close.
    """
    (m1, k1), (m2, k2) = (phi_p[..., 0], phi_p[..., 1]), (phi_q[..., 0], phi_q[..., 1])
    u = (k2 / k1) * (m1 / m2) - 1
    return _shape_terms(k1, k2) + k2 * log1p_gap(u) + (k1 - k2) * u


def log_density_mean_shape(phi, y):
    """Log density at y > 0."""
    from scipy import stats

    return stats.gamma.logpdf(y, phi[..., 1], scale=phi[..., 0] / phi[..., 1])


def graph_log_density_mean_shape(xp, y, mean, shape):
    """`log_density_mean_shape` in the namespace ``xp`` (one with ``gammaln``, as PyTensor's).

    ``k log r + (k − 1) log y − r y − log Γ(k)`` with rate ``r = k/m``; at
    y = 0 ±inf as SciPy's (k ≠ 1), −inf below.
    """
    rate = shape / mean
    inside = shape * xp.log(rate) + (shape - 1) * xp.log(y) - rate * y - xp.gammaln(shape)
    return xp.where(y >= 0, inside, -np.inf)


def entropy_mean_shape(phi):
    """``k − log(k/m) + log Γ(k) + (1 − k) ψ(k)``."""
    m, k = phi[..., 0], phi[..., 1]
    return k - np.log(k) + np.log(m) + gammaln(k) + (1 - k) * psi(k)


def to_mean_variance(phi, derivatives=None, trailing=0):
    """(m, k) → (m, v = m²/k); derivatives ``∂v = v (2∂m/m − ∂k/k)``."""
    m, k = phi[..., 0], phi[..., 1]
    v = m * (m / k)
    mapped = np.stack([m, v], -1)
    if derivatives is None:
        return mapped, None
    d_mean, d_shape = derivatives
    relative = 0.0
    if d_mean is not None:
        relative = 2 * d_mean / expanded(m, trailing)
    if d_shape is not None:
        relative = relative - d_shape / expanded(k, trailing)
    return mapped, [d_mean, expanded(v, trailing) * relative]


FAMILY_MEAN_SHAPE = Family(
    "gamma",
    "positive",
    ("mean", "shape"),
    fisher_information_mean_shape,
    kl_divergence_mean_shape,
    log_density_mean_shape,
    entropy_mean_shape,
    graph_log_density=graph_log_density_mean_shape,
    fisher_factors=_FACTORS_MEAN_SHAPE,
    whitened_hessian=whitened_hessian_mean_shape,
    renyi_divergence=lambda phi_p, phi_q, alpha: renyi_shape_rate(
        phi_p[..., 1],
        phi_p[..., 1] / phi_p[..., 0],
        phi_q[..., 1],
        phi_q[..., 1] / phi_q[..., 0],
        alpha,
    ),
    mean_variance=(to_mean_variance, FAMILY),
)

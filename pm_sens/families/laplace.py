"""Laplace(mean, variance); PyMC's scale b gives variance 2b²."""

import numpy as np

from pm_sens.families._base import Family, diagonal_matrix, log1p_gap


def fisher_information(phi):
    """Fisher information in (m, v): ``diag(1/b², 1/(4v²))`` with ``b² = v/2``."""
    v = phi[..., 1]
    return diagonal_matrix(2 / v, 1 / (4 * v**2))


def kl_divergence(phi_p, phi_q):
    """KL between Laplace laws with scales b = sqrt(v/2) and distance t = |m₁ − m₂|.

    ``log(b₂/b₁) + t/b₂ + (b₁/b₂)exp(−t/b₁) − 1``, rearranged as
    ``g(ρ − 1) + ρ(expm1(−t/b₁) + t/b₁)`` with ρ = b₁/b₂.
    """
    b1, b2 = np.sqrt(phi_p[..., 1] / 2), np.sqrt(phi_q[..., 1] / 2)
    scaled = np.abs(phi_p[..., 0] - phi_q[..., 0]) / b1
    rho = b1 / b2
    return log1p_gap((b1 - b2) / b2) + rho * (np.expm1(-scaled) + scaled)


def renyi_divergence(phi_p, phi_q, alpha):
    """Rényi divergence between Laplace laws, integrated piece by piece.

    With ``a = α/b₁``, ``c = (1 − α)/b₂`` and distance ``t = |m₁ − m₂|``, the
    integrand ``p^α q^(1−α)`` is ``(2b₁)^(−α) (2b₂)^(α−1) e^{−a|y−m₁| − c|y−m₂|}``,
    whose integral is ``(e^{−at} + e^{−ct})/(a + c) + (e^{−at} − e^{−ct})/(c − a)``
    (the outer pieces, then the one between the means); infinite where
    ``a + c <= 0`` (α > 1 and q much narrower than p).
    """
    b1, b2 = np.sqrt(phi_p[..., 1] / 2), np.sqrt(phi_q[..., 1] / 2)
    t = np.abs(phi_p[..., 0] - phi_q[..., 0])
    a, c = alpha / b1, (1 - alpha) / b2
    total = a + c
    low, gap = np.minimum(a, c), np.abs(c - a)
    with np.errstate(divide="ignore", invalid="ignore"):
        outer = np.logaddexp(-a * t, -c * t) - np.log(total)
        # (e^{−at} − e^{−ct})/(c − a) = e^{−low·t} (1 − e^{−gap·t})/gap, t as gap → 0
        between = -low * t + np.where(
            gap * t > 1e-300, np.log(-np.expm1(-gap * t)) - np.log(gap), np.log(t)
        )
        log_integral = np.logaddexp(outer, between)
    log_integral = log_integral - alpha * np.log(2 * b1) + (alpha - 1) * np.log(2 * b2)
    return np.where(total > 0, log_integral / (alpha - 1), np.inf)


def log_density(phi, y):
    """Log density at y (scale b = sqrt(v/2))."""
    from scipy import stats

    return stats.laplace.logpdf(y, phi[..., 0], np.sqrt(phi[..., 1] / 2))


def graph_log_density(xp, y, mean, variance):
    """``−|y − m|/b − log 2b`` with ``b = √(v/2)``, in the namespace ``xp``."""
    b = xp.sqrt(variance / 2)
    return -xp.abs(y - mean) / b - xp.log(2 * b)


def entropy(phi):
    """``1 + log(2b)``."""
    return 1 + np.log(2 * np.sqrt(phi[..., 1] / 2))


FAMILY = Family(
    "laplace",
    "real",
    ("mean", "variance"),
    fisher_information,
    kl_divergence,
    log_density,
    entropy,
    graph_log_density=graph_log_density,
    renyi_divergence=renyi_divergence,
)

"""Normal(mean, variance)."""

import numpy as np

from pm_sens.families._base import (
    Family,
    diagonal_factors,
    diagonal_matrix,
    expanded,
    log1p_gap,
    outer,
)


def fisher_information(phi):
    """Fisher information of Normal(m, v) in (m, v): ``diag(1/v, 1/(2v²))``."""
    v = phi[..., 1]
    return diagonal_matrix(1 / v, 1 / (2 * v**2))


#: square roots of the diagonal information in (m, v): ``1/√v``, ``1/(√2 v)``
_FACTORS = diagonal_factors(lambda xp, m, v: 1 / xp.sqrt(v), lambda xp, m, v: 1 / (np.sqrt(2) * v))


def kl_divergence(phi_p, phi_q):
    """KL(N(m₁, v₁) ‖ N(m₂, v₂)) = ½[g(v₁/v₂ − 1) + (m₁ − m₂)²/v₂], g(u) = u − log(1+u)."""
    (m1, v1), (m2, v2) = (phi_p[..., 0], phi_p[..., 1]), (phi_q[..., 0], phi_q[..., 1])
    return 0.5 * (log1p_gap((v1 - v2) / v2) + (m1 - m2) ** 2 / v2)


def renyi_divergence(phi_p, phi_q, alpha):
    """``D_α = α(m₁ − m₂)²/(2v_α) − log(v_α / (v₁^(1−α) v₂^α)) / (2(α − 1))``.

    ``v_α = α v₂ + (1 − α) v₁``; infinite where ``v_α <= 0`` (α > 1 and q
    much narrower than p: the integral diverges).
    """
    (m1, v1), (m2, v2) = (phi_p[..., 0], phi_p[..., 1]), (phi_q[..., 0], phi_q[..., 1])
    v_alpha = alpha * v2 + (1 - alpha) * v1
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ratio = np.log(v_alpha) - (1 - alpha) * np.log(v1) - alpha * np.log(v2)
        value = alpha * (m1 - m2) ** 2 / (2 * v_alpha) - log_ratio / (2 * (alpha - 1))
    return np.where(v_alpha > 0, value, np.inf)


def _log_density(y, mean, sd):
    """``−½ ((y − m)/s)² − log s − ½ log 2π`` (nan where s <= 0, as scipy's)."""
    z = np.empty(np.broadcast_shapes(np.shape(y), np.shape(mean), np.shape(sd)))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        np.subtract(y, mean, out=z)
        z /= sd
        z *= z
        z *= -0.5
        z -= np.log(sd)
    z -= 0.5 * np.log(2 * np.pi)
    return z


def log_density(phi, y):
    """Log density at y."""
    return _log_density(y, phi[..., 0], np.sqrt(phi[..., 1]))


def graph_log_density(xp, y, mean, variance):
    """`log_density` in the namespace ``xp``."""
    return -0.5 * (y - mean) ** 2 / variance - 0.5 * xp.log(2 * np.pi * variance)


def entropy(phi):
    """``½ log(2πe v)``."""
    return 0.5 * np.log(2 * np.pi * np.e * phi[..., 1])


FAMILY = Family(
    "normal",
    "real",
    ("mean", "variance"),
    fisher_information,
    kl_divergence,
    log_density,
    entropy,
    graph_log_density=graph_log_density,
    fisher_factors=_FACTORS,
    renyi_divergence=renyi_divergence,
)


# Per-draw Normal in (mean, sd): the sd, not its square, so that a likelihood
# sd anywhere in float64's range (1e-300 .. 1e300) keeps finite information.


def fisher_information_mean_sd(phi):
    """Fisher information of Normal(m, s) in (m, s): ``diag(1/s², 2/s²)``."""
    s = phi[..., 1]
    return diagonal_matrix(1 / s**2, 2 / s**2)


#: in (m, s): ``1/s``, ``√2/s``
_FACTORS_MEAN_SD = diagonal_factors(lambda xp, m, s: 1 / s, lambda xp, m, s: np.sqrt(2) / s)


def whitened_hessian_mean_sd(phi, jac, hess):
    """Hessians of (m, v = s²) whitened by ``diag(1/√v, 1/(√2 v))``.

    ``u_m = ∂²m/s``, ``u_v = √2 (∂²s/s + (∂s/s)(∂s/s)ᵀ)``.
    """
    inverse = (1 / phi[..., 1])[..., None, None]
    u = []
    if hess[0] is not None:
        u.append(hess[0] * inverse)
    if hess[1] is not None:
        relative = jac[1] * inverse[..., 0]
        u.append(np.sqrt(2) * (hess[1] * inverse + outer(relative)))
    return u, None


def kl_divergence_mean_sd(phi_p, phi_q):
    """KL between Normal laws given as (mean, sd), ratios formed before squaring."""
    (m1, s1), (m2, s2) = (phi_p[..., 0], phi_p[..., 1]), (phi_q[..., 0], phi_q[..., 1])
    ratio = s1 / s2
    return 0.5 * (log1p_gap((ratio - 1) * (ratio + 1)) + ((m1 - m2) / s2) ** 2)


def log_density_mean_sd(phi, y):
    """Log density at y."""
    return _log_density(y, phi[..., 0], phi[..., 1])


def graph_log_density_mean_sd(xp, y, mean, sd):
    """`log_density_mean_sd` in the namespace ``xp``."""
    return -0.5 * ((y - mean) / sd) ** 2 - xp.log(sd) - 0.5 * np.log(2 * np.pi)


def entropy_mean_sd(phi):
    """``½ log(2πe) + log s``."""
    entropy = np.log(phi[..., 1])
    entropy += 0.5 * np.log(2 * np.pi * np.e)  # in place: no second array
    return entropy


def to_mean_variance(phi, derivatives=None, trailing=0):
    """(m, s) → (m, s²); derivatives ``∂v = 2s ∂s``."""
    if derivatives is None:
        return _variance(phi), None
    d_mean, d_sd = derivatives
    d_variance = None if d_sd is None else 2 * expanded(phi[..., 1], trailing) * d_sd
    return _variance(phi), [d_mean, d_variance]


FAMILY_MEAN_SD = Family(
    "normal",
    "real",
    ("mean", "sd"),
    fisher_information_mean_sd,
    kl_divergence_mean_sd,
    log_density_mean_sd,
    entropy_mean_sd,
    graph_log_density=graph_log_density_mean_sd,
    fisher_factors=_FACTORS_MEAN_SD,
    whitened_hessian=whitened_hessian_mean_sd,
    renyi_divergence=lambda phi_p, phi_q, alpha: renyi_divergence(
        _variance(phi_p), _variance(phi_q), alpha
    ),
    mean_variance=(to_mean_variance, FAMILY),
)


def _variance(phi):
    """(m, s) -> (m, s²)."""
    return np.stack([phi[..., 0], phi[..., 1] ** 2], -1)

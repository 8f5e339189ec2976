"""Gumbel(location μ, scale β), in PyMC's (mu, beta).

With ``v = exp(−(y − μ)/β)``, an Exponential(1) variable, the scores are
``∂_μ log p = (1 − v)/β`` and ``∂_β log p = (−1 − (1 − v) log v)/β``, whose
expectations over v give the information below. The Weibull is the law of
``e^{−y}`` (`pm_sens.families.weibull`): its divergences are these.
"""

import numpy as np
from scipy import special

from pm_sens.families._base import Family, log1p_gap
from pm_sens.families._renyi import renyi_by_rules

#: ``E[(1 + (1 − v) log v)²]`` for v ~ Exponential(1): ``(1 − γ)² + π²/6``
SHAPE_INFORMATION = (1 - np.euler_gamma) ** 2 + np.pi**2 / 6

#: the standard Gumbel's rule: the trapezoid rule, spectrally accurate for its
#: smooth density, on [−4, 40] (the mass left out is below 1e-17)
_STEP = 0.1
_Z = np.arange(-4.0, 40.0 + _STEP / 2, _STEP)


def fisher_information(phi):
    """Fisher information in (μ, β): ``[[1, γ − 1], [γ − 1, c]]/β²``, c the shape's."""
    scale2 = phi[..., 1] ** 2
    cross = (np.euler_gamma - 1) / scale2
    return np.stack(
        [np.stack([1 / scale2, cross], -1), np.stack([cross, SHAPE_INFORMATION / scale2], -1)],
        -2,
    )


def kl_divergence(phi_p, phi_q):
    """KL(p ‖ q) from ``r = β₁/β₂`` and ``s = (μ₂ − μ₁)/β₂``.

    ``KL = e^s Γ(1 + r) − 1 − s − log r − γ(1 − r)``, written as
    ``g(e^{s + log Γ(1 + r)} − 1) + log Γ(r) + γ(r − 1)`` with
    ``g(u) = u − log(1 + u)``: both terms are 0 with their first derivatives
    where the laws are equal, so close laws keep their relative precision.
    """
    ratio = phi_p[..., 1] / phi_q[..., 1]
    shift = (phi_q[..., 0] - phi_p[..., 0]) / phi_q[..., 1]
    return log1p_gap(np.expm1(shift + special.gammaln(1 + ratio))) + (
        special.gammaln(ratio) + np.euler_gamma * (ratio - 1)
    )


def renyi_divergence(phi_p, phi_q, alpha):
    """Rényi divergence (0 < α < 1) by the trapezoid rules of both laws (`renyi_by_rules`)."""
    phi_p, phi_q = np.broadcast_arrays(phi_p, phi_q)
    z = _Z.reshape(-1, *(1,) * (phi_p.ndim - 1))
    rules = []
    for own in (phi_p, phi_q):
        y = own[..., 0] + own[..., 1] * z
        log_p, log_q = log_density(phi_p, y), log_density(phi_q, y)
        own_density = log_p if own is phi_p else log_q
        rules.append((np.log(_STEP * own[..., 1]) + own_density, log_p, log_q))
    return renyi_by_rules(*rules, alpha)


def log_density(phi, y):
    """Log density at y."""
    from scipy import stats

    return stats.gumbel_r.logpdf(y, phi[..., 0], phi[..., 1])


def graph_log_density(xp, y, mu, beta):
    """``−z − e^{−z} − log β`` with ``z = (y − μ)/β``, in the namespace ``xp``."""
    z = (y - mu) / beta
    return -z - xp.exp(-z) - xp.log(beta)


def entropy(phi):
    """``log β + γ + 1``."""
    return np.log(phi[..., 1]) + np.euler_gamma + 1


FAMILY = Family(
    "gumbel",
    "real",
    ("mu", "beta"),
    fisher_information,
    kl_divergence,
    log_density,
    entropy,
    graph_log_density=graph_log_density,
    renyi_divergence=renyi_divergence,
    renyi_above_one=False,
)

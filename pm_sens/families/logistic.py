"""Logistic(location μ, scale s), in PyMC's (mu, s).

With ``z = (y − μ)/s`` the scores are ``∂_μ log p = tanh(z/2)/s`` and
``∂_s log p = (z tanh(z/2) − 1)/s``; over the standard logistic law
``E[tanh²(z/2)] = 1/3`` and ``E[(z tanh(z/2) − 1)²] = (π² + 3)/9``, and the
cross term is odd in z: the information below. The KL and the Rényi
divergence have no closed form: they are sums over a trapezoid rule of the
standard logistic law, spectrally accurate for its density (analytic in the
strip ``|Im z| < π``).
"""

import numpy as np

from pm_sens.families._base import Family, kl_terms
from pm_sens.families._renyi import renyi_by_rules

#: ``E[(z tanh(z/2) − 1)²]`` over the standard logistic law
SCALE_INFORMATION = (np.pi**2 + 3) / 9

#: the standard logistic law's rule: the trapezoid rule on [−40, 40] (the mass
#: left out, 2e^{−40}, is below 1e-17; the rule's error with this step, about
#: e^{−2π²/step}, far below it)
_STEP = 0.25
_Z = np.arange(-40.0, 40.0 + _STEP / 2, _STEP)


def fisher_information(phi):
    """Fisher information in (μ, s): ``diag(1/3, (π² + 3)/9)/s²``."""
    scale2 = phi[..., 1] ** 2
    zero = np.zeros_like(scale2)
    return np.stack(
        [
            np.stack([1 / (3 * scale2), zero], -1),
            np.stack([zero, SCALE_INFORMATION / scale2], -1),
        ],
        -2,
    )


def _rule(phi_p, phi_q, own):
    """Log weights and both log densities at the nodes of ``own``'s rule, (..., P)."""
    y = own[..., 0, None] + own[..., 1, None] * _Z
    log_p = log_density(phi_p[..., None, :], y)
    log_q = log_density(phi_q[..., None, :], y)
    own_density = log_p if own is phi_p else log_q
    return np.log(_STEP * own[..., 1, None]) + own_density, log_p, log_q


def kl_divergence(phi_p, phi_q):
    """KL(p ‖ q) by p's rule, in terms of second order in the gap (`kl_terms`)."""
    phi_p, phi_q = np.broadcast_arrays(phi_p, phi_q)
    log_weight, log_p, log_q = _rule(phi_p, phi_q, phi_p)
    # the weights times p: p's masses at the nodes; times q, q's there
    return kl_terms(log_weight, log_weight - log_p + log_q)


def renyi_divergence(phi_p, phi_q, alpha):
    """Rényi divergence (0 < α < 1) by the trapezoid rules of both laws (`renyi_by_rules`)."""
    phi_p, phi_q = np.broadcast_arrays(phi_p, phi_q)
    rules = [
        tuple(np.moveaxis(a, -1, 0) for a in _rule(phi_p, phi_q, own)) for own in (phi_p, phi_q)
    ]
    return renyi_by_rules(*rules, alpha)


def log_density(phi, y):
    """Log density at y: ``−z − 2 log(1 + e^{−z}) − log s``, symmetric in z."""
    z = np.abs((y - phi[..., 0]) / phi[..., 1])
    return -z - 2 * np.log1p(np.exp(-z)) - np.log(phi[..., 1])


def graph_log_density(xp, y, mu, s):
    """`log_density` in the namespace ``xp``."""
    z = xp.abs((y - mu) / s)
    return -z - 2 * xp.log1p(xp.exp(-z)) - xp.log(s)


def entropy(phi):
    """``log s + 2``."""
    return np.log(phi[..., 1]) + 2


FAMILY = Family(
    "logistic",
    "real",
    ("mu", "s"),
    fisher_information,
    kl_divergence,
    log_density,
    entropy,
    graph_log_density=graph_log_density,
    renyi_divergence=renyi_divergence,
    renyi_above_one=False,
)

"""Binomial(n, p) with n fixed; like the Bernoulli, may carry ``1 − p`` as a column."""

import numpy as np

from pm_sens.families import bernoulli
from pm_sens.families._base import NUMPY, Family


def fisher_information(phi, n):
    """Fisher information of p: ``n/(p(1−p))``."""
    return np.asarray(n)[..., None, None] * bernoulli.fisher_information(phi)


def fisher_factors(phi, given, n):
    """Square roots of the (diagonal) information on the columns in ``given``."""
    scales, _ = bernoulli.fisher_factors(phi, given)
    return np.sqrt(np.asarray(n))[..., None] * scales, None


def kl_divergence(phi_p, phi_q, n):
    """KL between Binomial(n, p) laws: n times the Bernoulli KL."""
    return np.asarray(n) * bernoulli.kl_divergence(phi_p, phi_q)


def log_density(phi, y, n):
    """Log pmf at y ∈ {0, …, n}."""
    from scipy import stats

    return stats.binom.logpmf(y, np.asarray(n).astype(int), phi[..., 0])


def support_upper(phi, tail, n):
    """The support is {0, …, n}."""
    return np.broadcast_to(np.asarray(n), phi.shape[:-1]).astype(int)


def renyi_divergence(phi_p, phi_q, alpha, n):
    """N times the Bernoulli's: the binomial sum factors, ``(Σ p^α q^(1−α))^n``."""
    return np.asarray(n) * bernoulli.renyi_divergence(phi_p, phi_q, alpha)


def renyi_divergence_logit(phi_p, phi_q, alpha, n):
    """N times the Bernoulli's, from the logits."""
    return np.asarray(n) * bernoulli.renyi_divergence_logit(phi_p, phi_q, alpha)


FAMILY = Family(
    "binomial",
    "binomial",
    ("p",),
    fisher_information,
    kl_divergence,
    log_density,
    support_upper=support_upper,
    fisher_factors=fisher_factors,
    renyi_divergence=renyi_divergence,
)


# Per-draw Binomial on the logit η, n fixed: as the Bernoulli's, times n.


def fisher_information_logit(phi, n):
    """``n σ(η)σ(−η)``."""
    return np.asarray(n)[..., None, None] * bernoulli.fisher_information_logit(phi)


def fisher_factors_logit(phi, given, n):
    """``sqrt(n σ(η)σ(−η))``."""
    scales, _ = bernoulli.fisher_factors_logit(phi, given)
    return np.sqrt(np.asarray(n))[..., None] * scales, None


def whitened_hessian_logit(phi, jac, hess, n):
    """The Bernoulli's (`bernoulli.whitened_hessian_logit`) times ``sqrt(n)``."""
    (u,), _ = bernoulli.whitened_hessian_logit(phi, jac, hess)
    return [np.sqrt(np.asarray(n))[..., None, None] * u], None


def kl_divergence_logit(phi_p, phi_q, n):
    """The Bernoulli KL between the logits, times n."""
    return np.asarray(n) * bernoulli.kl_divergence_logit(phi_p, phi_q)


def graph_log_density_logit(xp, y, eta, n):
    """``log C(n, y) − y softplus(−η) − (n − y) softplus(η)`` at y ∈ {0, …, n}, in ``xp``."""
    inside = (y >= 0) & (y <= n) & xp.equal(xp.floor(y), y)
    log_choose = xp.gammaln(n + 1.0) - xp.gammaln(y + 1.0) - xp.gammaln(xp.maximum(n - y, 0) + 1.0)
    value = log_choose - y * xp.softplus(-eta) - (n - y) * xp.softplus(eta)
    return xp.where(inside, value, -np.inf)


def log_density_logit(phi, y, n):
    """Log pmf at y ∈ {0, …, n} (`graph_log_density_logit` in NumPy), −inf elsewhere."""
    return graph_log_density_logit(
        NUMPY, np.asarray(y, dtype=float), phi[..., 0], np.asarray(n, dtype=float)
    )


FAMILY_LOGIT = Family(
    "binomial",
    "binomial",
    ("logit_p",),
    fisher_information_logit,
    kl_divergence_logit,
    log_density_logit,
    support_upper=support_upper,
    fisher_factors=fisher_factors_logit,
    whitened_hessian=whitened_hessian_logit,
    graph_log_density=graph_log_density_logit,
    renyi_divergence=renyi_divergence_logit,
    mean_variance=(bernoulli.to_probability, FAMILY),
)

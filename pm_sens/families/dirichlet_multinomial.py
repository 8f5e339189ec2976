"""Dirichlet-multinomial(n, α) over K categories per point, n fixed.

Held like the Dirichlet of its latent proportions (`pm_sens.families.dirichlet`):
the K means ``m_k = α_k/α₀`` and ``v = 1/(1 + α₀)``, the intra-class
correlation, with which ``Var(y_k) = n m_k(1 − m_k)(1 + (n − 1) v)``. Its
Fisher information in α is ``diag(ψ′(α_k) − E ψ′(y_k + α_k)) − (ψ′(α₀) −
ψ′(n + α₀)) 11ᵀ``, the expectations over each count's beta-binomial marginal;
its KL divergence and entropy are sums over every split of the n trials
(`pm_sens.families._compositions`).
"""

import numpy as np
from scipy.special import gammaln, polygamma

from pm_sens.families import _compositions, dirichlet
from pm_sens.families._base import Family, raw_moment_family


def fisher_information(phi, n):
    """The information in α (see the module), reparametrized to ``(m, v)``."""
    from scipy import stats

    alpha = dirichlet.concentrations(phi)
    total = alpha.sum(-1)
    n = np.asarray(n, dtype=float)
    counts = np.arange(int(np.max(n)) + 1)
    # each count's beta-binomial marginal over 0..max(n) (0 beyond the row's n)
    marginal = stats.betabinom.pmf(
        counts, n[..., None, None], alpha[..., None], (total[..., None] - alpha)[..., None]
    )
    expected = (marginal * polygamma(1, counts + alpha[..., None])).sum(-1)
    within = (expected, polygamma(1, total) - polygamma(1, n + total))
    return dirichlet.to_mean_scale(dirichlet.information_in_alpha(alpha, within), phi)


def log_density(phi, y, n):
    """Log pmf at the count vector y (..., K); −inf where y does not split the n trials."""
    alpha = dirichlet.concentrations(phi)
    total = alpha.sum(-1)
    y = np.asarray(y, dtype=float)
    safe = np.maximum(y, 0)
    value = (
        gammaln(np.asarray(n) + 1.0)
        + gammaln(total)
        - gammaln(n + total)
        + (gammaln(safe + alpha) - gammaln(alpha) - gammaln(safe + 1)).sum(-1)
    )
    inside = (y.sum(-1) == n) & np.all(y >= 0, axis=-1)
    return np.where(inside, value, -np.inf)


def _table(phi, n):
    """The log pmf over every count vector with sum <= max(n) (`count_table`)."""
    return _compositions.count_table(
        lambda y: log_density(phi[..., None, :], y, np.asarray(n)[..., None]),
        n,
        phi.shape[-1] - 1,
        "dirichlet_multinomial",
    )


def kl_divergence(phi_p, phi_q, n):
    """KL over every split of the trials (`kl_over_table`)."""
    return _compositions.kl_over_table(_table(phi_p, n), _table(phi_q, n))


def support_upper(phi, tail, n):
    """No count exceeds the trials."""
    return np.broadcast_to(n, phi.shape[:-1])


def pmf_table(phi, n):
    """The pmf of every count vector with sum <= max(n), and the entropy."""
    return _compositions.pmf_table(_table(phi, n))


FAMILY = Family(
    "dirichlet_multinomial",
    "multinomial",
    ("mean", "v"),
    fisher_information,
    kl_divergence,
    log_density,
    support_upper=support_upper,
    pmf_table=pmf_table,
)


# The moment-matched family: the latent proportions' raw moments, as the Dirichlet's.


def whitened_hessian_matched(phi, jac, hess, n):
    """`dirichlet.matched_second_derivatives`, whitened by `FAMILY`."""
    return FAMILY.whitened(*dirichlet.matched_second_derivatives(phi, jac, hess), 2, n=n)


FAMILY_MATCHED = raw_moment_family(
    FAMILY, ("mean", "r"), dirichlet.matched, whitened_hessian_matched
)

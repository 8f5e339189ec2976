"""Multinomial(n, p) over K categories per point, n fixed; ``phi`` holds the K probabilities.

The Fisher information is n times the categorical's (``Jᵀ I J = n Σ_k (∂p_k)²/p_k``,
derivatives along the simplex), and so is the KL divergence. Its entropy is a
sum over every way to split the n trials (`pm_sens.families._compositions`),
taken while there are few enough of them.
"""

import numpy as np
from scipy.special import gammaln

from pm_sens.families import _compositions, categorical
from pm_sens.families._base import Family, clip_probability


def fisher_information(phi, n):
    """``n diag(1/p_k)``."""
    return np.asarray(n)[..., None, None] * categorical.fisher_information(phi)


def kl_divergence(phi_p, phi_q, n):
    """The categorical KL, times n."""
    return np.asarray(n) * categorical.kl_divergence(phi_p, phi_q)


def log_density(phi, y, n):
    """``log n! − Σ log y_k! + Σ y_k log p_k`` at the count vector y (..., K).

    −inf where y is not a split of the n trials.
    """
    y = np.asarray(y, dtype=float)
    with np.errstate(divide="ignore"):
        terms = np.where(y > 0, y * np.log(clip_probability(phi)), 0.0).sum(-1)
    value = gammaln(np.asarray(n) + 1.0) - gammaln(np.maximum(y, 0) + 1.0).sum(-1) + terms
    inside = (y.sum(-1) == n) & np.all(y >= 0, axis=-1)  # counts that split the n trials
    return np.where(inside, value, -np.inf)


def support_upper(phi, tail, n):
    """No count exceeds the trials."""
    return np.broadcast_to(n, phi.shape[:-1])


def pmf_table(phi, n):
    """The pmf of every count vector with sum <= max(n), and the entropy (`count_table`)."""
    logp = _compositions.count_table(
        lambda y: log_density(phi[..., None, :], y, np.asarray(n)[..., None]),
        n,
        phi.shape[-1],
        "multinomial",
    )
    return _compositions.pmf_table(logp)


FAMILY = Family(
    "multinomial",
    "multinomial",
    ("p",),
    fisher_information,
    kl_divergence,
    log_density,
    support_upper=support_upper,
    pmf_table=pmf_table,
)

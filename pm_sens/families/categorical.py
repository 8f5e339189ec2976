"""Categorical(p) over K classes; ``phi`` holds the K probabilities."""

import numpy as np

from pm_sens.families._base import Family, clip_probability, log1p_gap
from pm_sens.families._renyi import renyi_from_log_masses


def fisher_information(phi):
    """Fisher information of the class probabilities: ``diag(1/p_k)``.

    Then ``JᵀIJ = Σ_k (∂p_k)²/p_k``; derivatives along the simplex have
    ``Σ_k ∂p_k = 0``, which this form respects.
    """
    return np.eye(phi.shape[-1]) / clip_probability(phi[..., None, :])


def kl_divergence(phi_p, phi_q):
    """``Σ_k p₁ₖ g((p₂ₖ − p₁ₖ)/p₁ₖ)``: the first-order terms sum to zero exactly."""
    p1, p2 = clip_probability(phi_p), clip_probability(phi_q)
    return (p1 * log1p_gap((p2 - p1) / p1)).sum(-1)


def renyi_divergence(phi_p, phi_q, alpha):
    """Rényi divergence of order α over the K classes."""
    with np.errstate(divide="ignore"):
        return renyi_from_log_masses(np.log(phi_p), np.log(phi_q), alpha)


def log_density(phi, y):
    """Log pmf at the class y (an integer array broadcasting with phi[..., 0])."""
    y = np.asarray(y).astype(int)
    shape = np.broadcast_shapes(y.shape, phi.shape[:-1])
    index = np.broadcast_to(y, shape)[..., None]
    inside = (index >= 0) & (index < phi.shape[-1])
    phi = np.broadcast_to(phi, (*shape, phi.shape[-1]))
    picked = np.take_along_axis(phi, np.clip(index, 0, phi.shape[-1] - 1), -1)
    with np.errstate(divide="ignore"):
        return np.where(inside, np.log(picked), -np.inf)[..., 0]


def support_upper(phi, tail):
    """The support is {0, …, K−1}."""
    return np.full(phi.shape[:-1], phi.shape[-1] - 1)


def pmf_table(phi):
    """The class probabilities and the entropy ``−Σ_k p_k log p_k`` (0 log 0 = 0)."""
    with np.errstate(divide="ignore"):
        log_p = np.log(phi)  # NumPy's vector log: twice SciPy's entr
    # log 0 → the most negative float, whose product with 0 is 0 (a masked log,
    # ``where=phi > 0``, leaves NumPy's vector loop: 10.0 against 6.1 ms on (8, 75000, 4))
    np.maximum(log_p, np.finfo(float).min, out=log_p)
    return tuple(np.moveaxis(phi, -1, 0)), -np.einsum("...k,...k->...", phi, log_p)


def graph_pmf_table(xp, *columns):
    """`pmf_table` in the namespace ``xp``, of the K probability columns."""
    logs = graph_log_pmf_table(xp, *columns)
    return columns, -sum(
        p * xp.maximum(log_p, np.finfo(float).min) for p, log_p in zip(columns, logs, strict=True)
    )


def graph_log_pmf_table(xp, *columns):
    """The log class probabilities in the namespace ``xp`` (−inf where one is 0)."""
    return tuple(xp.log(p) for p in columns)


FAMILY = Family(
    "categorical",
    "categorical",
    ("p",),
    fisher_information,
    kl_divergence,
    log_density,
    support_upper=support_upper,
    pmf_table=pmf_table,
    graph_pmf_table=graph_pmf_table,
    graph_log_pmf_table=graph_log_pmf_table,
    renyi_divergence=renyi_divergence,
)

"""Categorical(p) over K classes; ``phi`` holds the K probabilities."""

import numpy as np

from pm_sens.families._base import Family, clip_probability, log1p_gap


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


FAMILY = Family("categorical", "categorical", ("p",), fisher_information, kl_divergence)

"""Categorical(p) over K classes; ``phi`` holds the K probabilities."""

import numpy as np

from pm_sens.families._base import Family, clip_probability


def fisher_information(phi):
    """Fisher information of the class probabilities: ``diag(1/p_k)``.

    Then ``JᵀIJ = Σ_k (∂p_k)²/p_k``; derivatives along the simplex have
    ``Σ_k ∂p_k = 0``, which this form respects.
    """
    return np.eye(phi.shape[-1]) / clip_probability(phi[..., None, :])


FAMILY = Family("categorical", "categorical", ("p",), fisher_information)

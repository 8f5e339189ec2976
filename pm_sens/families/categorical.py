"""Categorical(p) over K classes; ``phi`` holds the K probabilities."""

import numpy as np

from pm_sens.families._base import Family


def fisher_information(phi):
    """``diag(1/p_k)``, so that ``JᵀIJ = Σ_k (∂p_k)²/p_k`` (the simplex constraint
    makes ``Σ_k ∂p_k = 0``, which this form respects)."""
    return np.eye(phi.shape[-1]) / phi[..., None, :]


FAMILY = Family("categorical", "categorical", ("p",), fisher_information)

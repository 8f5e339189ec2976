"""Level sensitivity of categorical inputs: how far the predictive moves when a level changes.

A group index, a treatment arm or a flag has no derivative, but the question
R-sens answers for a continuous input has a finite version: the divergence
``sqrt(2 KL(p(·|x) ‖ p(·|x with level l)))`` between the predictive at a
point's own level and at each other level ``l``. Its local form (small steps)
is R-sens times the step, so both share a scale: a level change compares with
a continuous input's R-sens times a typical change of that input (its sd).
"""

import numpy as np


def level_divergence(divergence, phi, phi_levels, **fixed):
    """``sqrt(2 D)`` from the predictive at the points to the same points at each level.

    Parameters
    ----------
    divergence : callable
        ``divergence(phi_p, phi_q, **fixed)`` of the predictive family: its KL,
        or its Rényi divergence of order α (``sqrt(2 D_α)`` is R-sens of order α
        times the step for nearby laws, as ``D_α ≈ α/2 δᵀIδ``).
    phi : ndarray, shape (..., N, M)
        Family parameters at the points, at their own levels.
    phi_levels : ndarray, shape (L, ..., N, M)
        Parameters with every point set to each of L levels.
    **fixed
        Parameters the family holds fixed (Binomial ``n``).

    Returns
    -------
    ndarray, shape (..., N, L)
    """
    value = divergence(phi[None], phi_levels, **fixed)
    return np.moveaxis(np.sqrt(np.clip(2 * value, 0, None)), 0, -1)


def other_level_weights(own, weights):
    """Per point, the weights of the levels other than its own, summing to 1.

    Parameters
    ----------
    own : ndarray of int, shape (N,)
        Position of each point's own level among the L.
    weights : ndarray, shape (L,)
        Weight of each level (pm_sens: its frequency among the points).

    Returns
    -------
    ndarray, shape (N, L)
        0 at each point's own level.
    """
    others = np.broadcast_to(weights, (len(own), len(weights))).copy()
    others[np.arange(len(own)), own] = 0.0
    others /= others.sum(-1, keepdims=True)
    return others


def level_sensitivity(divergence, own, weights):
    """Per point, the mean divergence to the other levels, weighted by ``weights``.

    Parameters
    ----------
    divergence : ndarray, shape (..., N, L)
        From `level_divergence`.
    own : ndarray of int, shape (N,)
        Position of each point's own level among the L.
    weights : ndarray, shape (L,)
        Weight of each level (pm_sens: its frequency among the points).

    Returns
    -------
    ndarray, shape (..., N)
    """
    return np.einsum("...nl,nl->...n", divergence, other_level_weights(own, weights))

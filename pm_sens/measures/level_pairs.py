"""R-sens2 pairs with a categorical input: does an input act differently at another level.

A pair of a continuous input x and a categorical input g compares x's
whitened rate ``u_x(l) = I(λ(l))^{1/2} ∂λ/∂x`` at each level l of g with the
one at the point's own level: ``‖u_x(l) − u_x(g_i)‖ √α`` (R-sens_x is
``‖u_x(g_i)‖ √α``), averaged over the other levels weighted by their frequency.
It is zero exactly when x moves the predictive the same way at every level.

A pair of two categorical inputs g and h is the finite version of R-sens2's
mixed derivative ``∂²λ/∂x_d∂x_e``: the interaction contrast
``Δ²λ = λ(l, m) − λ(l, h_i) − λ(g_i, m) + λ(g_i, h_i)`` whitened at the point,
``‖I(λ_i)^{1/2} Δ²λ‖ √α``, averaged over the other levels l of g and m of h.

Both are taken in the mean–variance parametrization, as R-sens2 (docs: how_to/hierarchical.md,
"Interactions with a categorical input").
"""

import numpy as np

from pm_sens.measures.levels import other_level_weights
from pm_sens.measures.rsens import rsens2_local


def whitened_vectors(u, corr):
    """Whitened derivatives as vectors whose Euclidean norm is ``sqrt(Jᵀ I J)``.

    Parameters
    ----------
    u : list of K arrays (..., *T)
        `Family.whitened` components ``u_m = sqrt(I_mm) ∂φ_m``.
    corr : ndarray (..., K, K) or None
        Their correlation (None: the identity).

    Returns
    -------
    ndarray, shape (..., *T, K)
        ``C^{1/2} u`` with ``C^{1/2}`` the symmetric square root of ``corr``: the
        derivatives in coordinates where the information is the identity.
    """
    vectors = np.stack(u, -1)
    if corr is None:
        return vectors
    values, basis = np.linalg.eigh(corr)
    root = (basis * np.sqrt(np.clip(values, 0, None))[..., None, :]) @ np.swapaxes(basis, -1, -2)
    trailing = vectors.ndim - root.ndim + 1  # the axes T, which corr does not have
    root = root.reshape(root.shape[:-2] + (1,) * trailing + root.shape[-2:])
    return np.einsum("...jk,...k->...j", root, vectors)


def rate_pairs(vectors, own, weights, alpha=1.0):
    """Level × rate pairs of one categorical input with each continuous input.

    Parameters
    ----------
    vectors : ndarray, shape (1 + L, ..., N, D, K)
        `whitened_vectors` of the derivatives at the points as they are (block
        0), then with every point at each of the L levels.
    own : ndarray of int, shape (N,)
        Position of each point's own level among the L.
    weights : ndarray, shape (L,)
        Weight of each level (its frequency among the points).
    alpha : float
        Rényi order; the pairs scale as ``sqrt(alpha)``.

    Returns
    -------
    ndarray, shape (..., N, D)
        ``Σ_l w_il ‖u(l) − u(own)‖ √α``, ``w_il`` the other levels' weights.
    """
    distance = np.linalg.norm(vectors[1:] - vectors[:1], axis=-1)  # (L, ..., N, D)
    others = other_level_weights(own, weights)
    return np.sqrt(alpha) * np.einsum("l...nd,nl->...nd", distance, others)


def contrast_pairs(phi, varying, whitened, others_g, others_h, alpha=1.0):
    """Level × level pair of two categorical inputs g and h.

    Parameters
    ----------
    phi : ndarray, shape (1 + Lg, 1 + Lh, ..., N, M)
        Mean–variance parameters with g and h at each point's own level
        (index 0) or at each of their levels.
    varying : list of int
        The parameters that vary with the inputs (the others have no contrast).
    whitened : callable
        ``whitened(phi, derivatives, trailing) -> (u, corr)``: `Family.whitened`
        with the family's fixed parameters bound.
    others_g, others_h : ndarray, shapes (N, Lg) and (N, Lh)
        `other_level_weights` of each input.
    alpha : float
        Rényi order.

    Returns
    -------
    ndarray, shape (..., N)
    """
    contrast = phi[1:, 1:] - phi[1:, :1] - phi[:1, 1:] + phi[:1, :1]  # (Lg, Lh, ..., N, M)
    contrast = np.moveaxis(contrast, (0, 1), (-3, -2))  # (..., N, Lg, Lh, M)
    derivatives = [contrast[..., m] if m in varying else None for m in range(contrast.shape[-1])]
    own = phi[0, 0]
    pairs = rsens2_local(derivatives, lambda d: whitened(own, d, 2), alpha)
    return np.einsum("...nlm,nl,nm->...n", pairs, others_g, others_h)

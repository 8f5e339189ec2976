"""Finite-difference KL sensitivity (Paananen et al. 2019, eq. 2).

``r(x, d, Δ) = sqrt(2 KL(q(·|x) ‖ q(·|x + Δ e_d))) / Δ``. As Δ → 0 it tends to
R-sens with α = 1 (the KL's Hessian is the Fisher information), which makes
it an independent check on the derivative-based measure.
"""

import numpy as np

SCHEMES = ("forward", "central")


def shift_offsets(steps, scheme):
    """Signed offsets per evaluation block: (B, D) with one nonzero per row.

    Forward: one block per feature (+Δ_d). Central: +Δ_d blocks then −Δ_d blocks.
    """
    forward = np.diag(steps)
    return forward if scheme == "forward" else np.concatenate([forward, -forward])


def kl_sensitivity(kl_divergence, phi, phi_shifted, steps, scheme, **fixed):
    """Local finite-difference KL sensitivity.

    Parameters
    ----------
    kl_divergence : callable
        ``kl_divergence(phi_p, phi_q, **fixed)`` of the predictive family.
    phi : ndarray, shape (..., N, M)
        Family parameters at the points.
    phi_shifted : ndarray, shape (B, ..., N, M)
        Parameters at the points moved by `shift_offsets` (B = D or 2D).
    steps : ndarray, shape (D,)
        The step Δ_d of each feature.
    scheme : {"forward", "central"}
        Forward: ``sqrt(2 KL(x ‖ x+Δ))/Δ`` (error O(Δ)); central:
        ``sqrt(KL(x ‖ x+Δ) + KL(x ‖ x−Δ))/Δ`` (error O(Δ²)).
    **fixed
        Parameters the family holds fixed (Binomial ``n``).

    Returns
    -------
    ndarray, shape (..., N, D)
    """
    kl = kl_divergence(phi[None], phi_shifted, **fixed)  # (B, ..., N)
    n_features = len(steps)
    total = 2 * kl if scheme == "forward" else kl[:n_features] + kl[n_features:]
    return np.moveaxis(np.sqrt(np.clip(total, 0, None)), 0, -1) / steps

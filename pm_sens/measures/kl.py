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


def colored_offsets(offsets, n_rows, colors):
    """Offsets of each row for each colour of the rows: (B·C, N, D), block b·C + r.

    Colour r moves the rows ``s ≡ r (mod C)`` only, so that each prediction
    of a series whose rows depend on a window of C rows moves with one input
    row (`pm_sens.graph.model.dependence`).
    """
    moved = np.arange(n_rows) % colors == np.arange(colors)[:, None]  # (C, N)
    return (offsets[:, None, None, :] * moved[None, :, :, None]).reshape(
        -1, n_rows, offsets.shape[1]
    )


def window_sums(per_row, colors, first, last):
    """At each input row s, the sum over the rows s + first … s + last it moves.

    ``per_row`` (C, ..., N): each row's value when the rows of colour r moved
    (`colored_offsets`); the row of colour ``s mod C`` is the one that moved
    row s. Returns (..., N).
    """
    n_rows = per_row.shape[-1]
    rows = np.arange(n_rows)
    color = rows % colors  # the colour that moved input row s
    total = np.zeros(per_row.shape[1:])
    for offset in range(first, last + 1):
        moved = rows + offset
        inside = (moved >= 0) & (moved < n_rows)
        s = rows[inside]
        total[..., s] += np.moveaxis(per_row[color[s], ..., moved[inside]], 0, -1)
    return total


def kl_sensitivity(kl_divergence, phi, phi_shifted, steps, scheme, joint=None, **fixed):
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
    joint : tuple of int, optional
        ``(colors, first, last)`` for a series whose rows depend on other
        rows' inputs: ``phi_shifted`` then holds B·C blocks (`colored_offsets`)
        and the result is that of the joint predictive, the KLs of every row an
        input row moves summed (the joint KL of independent rows).
    **fixed
        Parameters the family holds fixed (Binomial ``n``).

    Returns
    -------
    ndarray, shape (..., N, D)
    """
    kl = kl_divergence(phi[None], phi_shifted, **fixed)  # (B[·C], ..., N)
    if joint is not None:
        colors, first, last = joint
        per_color = kl.reshape(-1, colors, *kl.shape[1:])
        kl = np.stack([window_sums(k, colors, first, last) for k in per_color])
    n_features = len(steps)
    total = 2 * kl if scheme == "forward" else kl[:n_features] + kl[n_features:]
    return np.moveaxis(np.sqrt(np.clip(total, 0, None)), 0, -1) / steps

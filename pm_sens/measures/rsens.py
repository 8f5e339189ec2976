"""R-sens and R-sens2 from derivatives and Fisher information.

See the docs: explanation/measures.md, "What R-sens measures".

``R-sens(x, d; α) = sqrt(α J_dᵀ I J_d)`` with ``J_d = ∂φ/∂x_d`` and
``R-sens2(x, (d, e); α) = sqrt(α H_deᵀ I H_de)`` with ``H_de = ∂²φ/∂x_d∂x_e``,
φ the family's parameters and I their Fisher information.

The form is evaluated on whitened derivatives ``u_m = sqrt(I_mm) ∂φ_m`` (see
`Family.whitened`), so neither ``∂φ²`` nor ``I`` is formed: a Poisson rate of
1e300 (``∂φ ≈ 1e300``, ``I = 1e-300``) gives R-sens 1e150, not inf·0.
"""

from itertools import combinations

import numpy as np

# below this, Σ u² may have lost digits to underflow: recomputed after scaling
_SMALLEST_SAFE = 1e-280


def _form(u, corr, expand, out=None):
    """``Σ_mk u_m corr_mk u_k``, elementwise (corr None: the identity)."""
    total = np.multiply(u[0], u[0], out=out)
    term = np.empty_like(total) if len(u) > 1 else None
    for m in range(1, len(u)):
        np.multiply(u[m], u[m], out=term)
        total += term
    for m, k in combinations(range(len(u)) if corr is not None else (), 2):
        np.multiply(u[m], u[k], out=term)
        term *= 2 * corr[..., m, k][expand]
        total += term
    return total


def _norm(u, corr, trailing, alpha, out=None):
    """``sqrt(α Σ u corr u)``, without overflow or underflow of the squares.

    Written into ``out`` when given (an array of the result's shape).
    """
    if corr is None and len(u) == 1:  # |u| itself
        out = np.abs(u[0], out=out)
        if alpha != 1:
            out *= np.sqrt(alpha)
        return out
    expand = (Ellipsis,) + (None,) * trailing
    with np.errstate(over="ignore", under="ignore"):  # such values are redone below
        total = _form(u, corr, expand, out)
    rescale = np.nonzero(~np.isfinite(total) | (total < _SMALLEST_SAFE))
    # round-off can leave tiny negatives where the form is 0
    np.maximum(total, 0, out=total)
    total *= alpha
    out = np.sqrt(total, out=total)
    if rescale[0].size:
        # divide by the largest |u_m| first: the form then lies in [0, M]
        parts = [x[rescale] for x in u]
        largest = np.max(np.abs(parts), axis=0)
        safe = np.where((largest > 0) & np.isfinite(largest), largest, 1.0)
        if corr is not None:
            corr = corr.reshape(corr.shape[:-2] + (1,) * trailing + corr.shape[-2:])
            corr = np.broadcast_to(corr, (*out.shape, *corr.shape[-2:]))[rescale]
        scaled = _form([p / safe for p in parts], corr, Ellipsis)
        root = largest * np.sqrt(np.maximum(scaled, 0) * alpha)
        out[rescale] = np.where(np.isinf(largest), np.inf, root)
    return out


def rsens_local(jac, whiten, alpha=1.0, out=None):
    """Local R-sens per feature.

    Parameters
    ----------
    jac : list of M arrays (..., D), or None for a parameter that does not vary
        Derivatives of the M parameters with respect to the D features.
    whiten : callable
        ``whiten(jac, trailing=1) -> (u, corr)``: `Family.whitened` with the
        parameters (and fixed values) bound.
    alpha : float
        Rényi order; the measure scales as ``sqrt(alpha)``.
    out : ndarray (..., D), optional
        Where to write the result.

    Returns
    -------
    ndarray, shape (..., D)
    """
    return _norm(*whiten(jac, trailing=1), trailing=1, alpha=alpha, out=out)


def joint_over_colors(values, colors, point_axis=-2, out=None):
    """R-sens (or R-sens2) of the joint predictive of a series from its colours' parts.

    ``values`` (..., C·N, D[, D]): the values of each colour's rows
    (colour-major, `pm_sens.graph.compile.derivatives.colored_gradient`) on
    ``point_axis``; the joint value at input row s is ``sqrt(Σ_r
    values[r, s]²)``, the square root of ``α Σ_i J_{i,s}ᵀ I_i J_{i,s}``
    summed over the rows i that s moves. Returns (..., N, D[, D]).
    """
    axis = point_axis % values.ndim
    shape = values.shape
    parts = values.reshape(*shape[:axis], colors, shape[axis] // colors, *shape[axis + 1 :])
    return np.sqrt(np.sum(parts**2, axis=axis), out=out)


def rsens2_local(hess, whiten, alpha=1.0, out=None):
    """Local R-sens2 per feature pair (diagonal: curvature, not interaction).

    Parameters
    ----------
    hess : list of M arrays (..., D, D), or None for a parameter that does not vary
        Second derivatives of the M parameters.
    whiten : callable
        ``whiten(hess) -> (u, corr)``: `Family.whitened_second_order` with the
        parameters and first derivatives bound.
    alpha : float
        Rényi order.
    out : ndarray (..., D, D), optional
        Where to write the result.

    Returns
    -------
    ndarray, shape (..., D, D), symmetric
    """
    return _norm(*whiten(hess), trailing=2, alpha=alpha, out=out)

"""R-sens and R-sens2 from derivatives and Fisher information (SPEC §3).

``R-sens(x, d; α) = sqrt(α J_dᵀ I J_d)`` with ``J_d = ∂φ/∂x_d`` and
``R-sens2(x, (d, e); α) = sqrt(α H_deᵀ I H_de)`` with ``H_de = ∂²φ/∂x_d∂x_e``,
φ the family's mean–variance parameters and I their Fisher information.
"""

import numpy as np


def _quadratic_form(derivatives, info, trailing):
    """``Σ_mk D_m I_mk D_k`` for derivatives (M, ..., *trailing) and info (..., M, M).

    M is small (1–3, or the number of classes): summing the M(M+1)/2 terms of
    the symmetric form elementwise beats a batched matrix product.
    """
    expand = (Ellipsis,) + (None,) * trailing
    total = np.zeros(derivatives.shape[1:])
    term = np.empty_like(total)
    for m in range(info.shape[-1]):
        for k in range(m, info.shape[-1]):
            np.multiply(derivatives[m], derivatives[k], out=term)
            term *= info[..., m, k][expand] * (1 if k == m else 2)
            total += term
    return total


def _scaled_sqrt(quadratic, alpha):
    # round-off can leave tiny negatives where the form is 0
    np.maximum(quadratic, 0, out=quadratic)
    quadratic *= alpha
    return np.sqrt(quadratic, out=quadratic)


def rsens_local(jac, info, alpha=1.0):
    """Local R-sens per feature.

    Parameters
    ----------
    jac : ndarray, shape (M, ..., D)
        Derivatives of the M parameters with respect to the D features.
    info : ndarray, shape (..., M, M)
        Fisher information of the parameters (symmetric).
    alpha : float
        Rényi order; the measure scales as ``sqrt(alpha)``.

    Returns
    -------
    ndarray, shape (..., D)
    """
    return _scaled_sqrt(_quadratic_form(jac, info, trailing=1), alpha)


def rsens2_local(hess, info, alpha=1.0):
    """Local R-sens2 per feature pair (diagonal: curvature, not interaction).

    Parameters
    ----------
    hess : ndarray, shape (M, ..., D, D)
        Second derivatives of the M parameters.
    info : ndarray, shape (..., M, M)
        Fisher information of the parameters (symmetric).
    alpha : float
        Rényi order.

    Returns
    -------
    ndarray, shape (..., D, D), symmetric
    """
    return _scaled_sqrt(_quadratic_form(hess, info, trailing=2), alpha)

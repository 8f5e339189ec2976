"""R-sens and R-sens2 from derivatives and Fisher information (SPEC §3).

``R-sens(x, d; α) = sqrt(α J_dᵀ I J_d)`` with ``J_d = ∂φ/∂x_d`` and
``R-sens2(x, (d, e); α) = sqrt(α H_deᵀ I H_de)`` with ``H_de = ∂²φ/∂x_d∂x_e``,
φ the family's mean–variance parameters and I their Fisher information.
"""

import numpy as np


def _sqrt_quadratic_form(quadratic, alpha):
    # round-off can leave tiny negatives where the form is 0
    return np.sqrt(alpha * np.clip(quadratic, 0, None))


def rsens_local(jac, info, alpha=1.0):
    """Local R-sens per feature.

    Parameters
    ----------
    jac : ndarray, shape (..., M, D)
        Derivatives of the M parameters with respect to the D features.
    info : ndarray, shape (..., M, M)
        Fisher information of the parameters.
    alpha : float
        Rényi order; the measure scales as ``sqrt(alpha)``.

    Returns
    -------
    ndarray, shape (..., D)
    """
    return _sqrt_quadratic_form(np.einsum("...md,...mk,...kd->...d", jac, info, jac), alpha)


def rsens2_local(hess, info, alpha=1.0):
    """Local R-sens2 per feature pair (diagonal: curvature, not interaction).

    Parameters
    ----------
    hess : ndarray, shape (..., M, D, D)
        Second derivatives of the M parameters.
    info : ndarray, shape (..., M, M)
        Fisher information of the parameters.
    alpha : float
        Rényi order.

    Returns
    -------
    ndarray, shape (..., D, D), symmetric
    """
    quadratic = np.einsum("...mde,...mk,...kde->...de", hess, info, hess)
    return _sqrt_quadratic_form(quadratic, alpha)

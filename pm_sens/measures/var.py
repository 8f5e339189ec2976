"""VAR: variance of the predictive mean along each input's conditional (2019, eq. 3–5).

The inputs are modelled as Gaussian with their sample mean and covariance. For
each point i and feature d, ``x_d | x_{−d}^{(i)} ~ N(m_d^{(i)}, s_d²)`` and
``VAR_d(i) = Var[ m(x_{−d}^{(i)}, x_d) ]`` over that conditional, by
Gauss–Hermite quadrature. All D conditionals come from the precision matrix
``P = Σ⁻¹`` (one Cholesky): ``s_d² = 1/P_dd`` and
``m_d = μ_d − Σ_{k≠d} P_dk (x_k − μ_k) / P_dd``.
"""

import numpy as np
from scipy import linalg


def regularized_cholesky(cov, max_condition=1e10):
    """Cholesky factor of ``cov``, jittered until well conditioned.

    The diagonal jitter grows tenfold from 1e-12 × the mean variance until the
    matrix is positive definite with condition number below ``max_condition``.
    """
    scale = np.mean(np.diag(cov)) or 1.0
    jitter = 0.0
    while True:
        candidate = cov + jitter * scale * np.eye(len(cov))
        try:
            factor = linalg.cholesky(candidate, lower=True)
        except linalg.LinAlgError:
            factor = None
        if factor is not None and np.linalg.cond(candidate) < max_condition:
            return factor, jitter * scale
        jitter = 1e-12 if jitter == 0 else jitter * 10


def input_gaussian(x):
    """Mean (D,) and precision matrix (D, D) of a Gaussian fitted to the rows of ``x``.

    ``x`` may be dask-backed: the mean and covariance are then reductions over
    its chunks of rows, computed here.
    """
    mu = np.asarray(x.mean(0))
    centred = x - mu
    cov = np.atleast_2d(np.asarray(centred.T @ centred)) / (len(x) - 1)
    factor, _ = regularized_cholesky(cov)
    return mu, linalg.cho_solve((factor, True), np.eye(len(cov)))


def conditional_gaussians(x, gaussian):
    """Mean and sd of ``x_d | x_{−d}`` per point and feature.

    Under ``gaussian = (mu, precision)`` (`input_gaussian`); returns means
    (N, D) and sds (D,).
    """
    mu, precision = gaussian
    diag = np.diag(precision)
    centred = x - mu
    # Σ_{k≠d} P_dk (x_k − μ_k) = (centred @ P)_d − P_dd (x_d − μ_d)
    offdiag = centred @ precision - centred * diag
    return mu - offdiag / diag, 1 / np.sqrt(diag)


def gauss_hermite_normal(n_nodes):
    """Nodes z and weights w with ``Σ w f(z) ≈ E[f(Z)]``, Z ~ N(0, 1)."""
    k, w = np.polynomial.hermite.hermgauss(n_nodes)
    return np.sqrt(2) * k, w / np.sqrt(np.pi)


def conditional_points(x, n_nodes, gaussian):
    """Points at which VAR evaluates the predictive mean: (Q, D, N, D).

    Block (q, d) is ``x`` with column d replaced by ``m_d + s_d z_q``, the
    conditionals under ``gaussian`` (`input_gaussian` of all the points).
    """
    means, sds = conditional_gaussians(x, gaussian)
    nodes, _ = gauss_hermite_normal(n_nodes)
    n, d = x.shape
    out = np.broadcast_to(x, (n_nodes, d, n, d)).copy()
    features = np.arange(d)
    out[:, features, :, features] = (
        means.T[None] + sds[None, :, None] * nodes[:, None, None]
    ).transpose(1, 0, 2)
    return out


def var_sensitivity(mean_values, n_nodes):
    """Local VAR from the predictive mean at `conditional_points`.

    Parameters
    ----------
    mean_values : ndarray, shape (..., Q, D, N)
        Predictive mean at the Q·D·N conditional points.
    n_nodes : int
        Q, the number of Gauss–Hermite nodes.

    Returns
    -------
    ndarray, shape (..., N, D)
        Variance of the mean along each feature's conditional, per point.
    """
    _, weights = gauss_hermite_normal(n_nodes)
    w = weights[:, None, None]
    centre = np.sum(w * mean_values, axis=-3, keepdims=True)
    variance = np.sum(w * (mean_values - centre) ** 2, axis=-3)  # (..., D, N)
    return np.swapaxes(variance, -1, -2)

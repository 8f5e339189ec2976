"""Multivariate Normal over K outcomes per point: mean vector and covariance entries.

``phi`` holds the K means, then the covariance's lower triangle row by row
(``Σ_00, Σ_10, Σ_11, Σ_20, …``): M = K + K(K+1)/2 components. Entry (a, b)
stands for both ``Σ_ab`` and ``Σ_ba``. The moment-matched family
(`FAMILY_MATCHED`) holds the mixture's raw moments instead — the means, the
mean covariance and the mean of ``μ_a μ_b`` — and maps them to the mixture's
mean and covariance (law of total covariance) in each function.
"""

import numpy as np

from pm_sens.families._base import Family, log1p_gap, raw_moment_family, stack_matrix


def outcome_count(n_components, raw=False):
    """K from the number of components (M = K + K(K+1)/2; raw: K + K(K+1))."""
    per_pair = 2 if raw else 1
    k = 0
    while k + per_pair * k * (k + 1) // 2 < n_components:
        k += 1
    return k


def outcome_pairs(k):
    """The covariance entries (a, b), a >= b, in the order ``phi`` holds them."""
    return [(a, b) for a in range(k) for b in range(a + 1)]


def unpacked(phi):
    """``(mean (..., K), covariance (..., K, K))`` from ``phi`` (..., M)."""
    k = outcome_count(phi.shape[-1])
    cov = np.empty((*phi.shape[:-1], k, k))
    for i, (a, b) in enumerate(outcome_pairs(k)):
        cov[..., a, b] = cov[..., b, a] = phi[..., k + i]
    return phi[..., :k], cov


def fisher_information(phi):
    """``diag(Σ⁻¹, I_Σ)`` with ``I_Σ[(ab), (cd)] = ½ tr(Σ⁻¹ E_ab Σ⁻¹ E_cd)``.

    ``E_ab`` is the symmetric unit matrix of entry (a, b); with ``P = Σ⁻¹``,
    ``tr(P e_i e_jᵀ P e_k e_lᵀ) = P_li P_jk``.
    """
    mean, cov = unpacked(phi)
    k = mean.shape[-1]
    precision = np.linalg.inv(cov)
    entries = [{(a, b), (b, a)} for a, b in outcome_pairs(k)]  # where each entry sits in Σ
    zero = np.zeros(phi.shape[:-1])
    rows = [[precision[..., i, j] for j in range(k)] + [zero] * len(entries) for i in range(k)]
    for first in entries:
        row = [zero] * k
        for second in entries:
            terms = [
                precision[..., m, i] * precision[..., j, n] for i, j in first for n, m in second
            ]
            row.append(0.5 * sum(terms))
        rows.append(row)
    return stack_matrix(rows)


def kl_divergence(phi_p, phi_q):
    """``½[Σ_i g(λ_i) + δᵀ Σ_q⁻¹ δ]``, λ the eigenvalues of ``L⁻¹(Σ_p − Σ_q)L⁻ᵀ``, ``Σ_q = LLᵀ``.

    ``g(u) = u − log(1 + u)``: the trace and log-determinant terms cancel to first
    order, so nearby laws keep their digits.
    """
    (mean_p, cov_p), (mean_q, cov_q) = unpacked(phi_p), unpacked(phi_q)
    chol = np.linalg.cholesky(cov_q)
    inverse = np.linalg.inv(chol)
    gap = inverse @ (cov_p - cov_q) @ np.swapaxes(inverse, -1, -2)
    eigenvalues = np.linalg.eigvalsh(gap)
    delta = np.einsum("...ij,...j->...i", inverse, mean_p - mean_q)
    return 0.5 * (log1p_gap(eigenvalues).sum(-1) + (delta**2).sum(-1))


def log_density(phi, y):
    """Log density at y (..., K)."""
    mean, cov = unpacked(phi)
    chol = np.linalg.cholesky(cov)
    z = np.linalg.solve(chol, (np.asarray(y) - mean)[..., None])[..., 0]
    log_det = 2 * np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(-1)
    return -0.5 * (mean.shape[-1] * np.log(2 * np.pi) + log_det + (z**2).sum(-1))


def entropy(phi):
    """``½ (K log(2πe) + log det Σ)``."""
    mean, cov = unpacked(phi)
    return 0.5 * (mean.shape[-1] * np.log(2 * np.pi * np.e) + np.linalg.slogdet(cov)[1])


FAMILY = Family(
    "mvnormal",
    "multivariate",
    ("mu", "cov"),
    fisher_information,
    kl_divergence,
    log_density,
    entropy,
)


# The moment-matched family: the mixture's raw moments (E μ, E Σ, E μμᵀ), whose
# averages over draws merge chunk by chunk; its mean and covariance follow.


def matched(phi, derivatives=None, trailing=0):
    """Raw moments → ``phi`` of `FAMILY`: ``m = E μ``, ``Σ = E Σ + E μμᵀ − m mᵀ``.

    ``derivatives`` (one per raw moment, or None) map by the chain rule:
    ``∂Σ_ab = ∂EΣ_ab + ∂Eμ_aμ_b − ∂m_a m_b − m_a ∂m_b``.
    """
    k = outcome_count(phi.shape[-1], raw=True)
    pairs = outcome_pairs(k)
    mean = phi[..., :k]
    cov = [
        phi[..., k + i] + phi[..., k + len(pairs) + i] - mean[..., a] * mean[..., b]
        for i, (a, b) in enumerate(pairs)
    ]
    mapped = np.concatenate([mean, np.stack(cov, -1)], -1)
    if derivatives is None:
        return mapped, None
    d = list(derivatives) + [None] * (phi.shape[-1] - len(derivatives))
    expand = (Ellipsis,) + (None,) * trailing
    d_cov = []
    for i, (a, b) in enumerate(pairs):
        terms = [d[k + i], d[k + len(pairs) + i]]
        if d[a] is not None:
            terms.append(-d[a] * mean[..., b][expand])
        if d[b] is not None:
            terms.append(-mean[..., a][expand] * d[b])
        terms = [t for t in terms if t is not None]
        d_cov.append(sum(terms) if terms else None)
    return mapped, d[:k] + d_cov


def whitened_hessian_matched(phi, jac, hess):
    """Second derivatives of the matched mean and covariance, whitened by `FAMILY`.

    Besides `matched`'s terms, ``∂²(m_a m_b)`` brings ``∂m_a ∂m_bᵀ + ∂m_b ∂m_aᵀ``.
    """
    k = outcome_count(phi.shape[-1], raw=True)
    mapped, second = matched(phi, hess, trailing=2)
    jac = list(jac) + [None] * (phi.shape[-1] - len(jac))
    for i, (a, b) in enumerate(outcome_pairs(k)):
        if jac[a] is not None and jac[b] is not None:
            cross = jac[a][..., :, None] * jac[b][..., None, :]
            cross = cross + np.swapaxes(cross, -1, -2)
            second[k + i] = -cross if second[k + i] is None else second[k + i] - cross
    return FAMILY.whitened(mapped, second, 2)


FAMILY_MATCHED = raw_moment_family(FAMILY, ("mu", "cov"), matched, whitened_hessian_matched)

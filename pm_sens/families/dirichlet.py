"""Dirichlet(α) over K proportions per point, held as means and a variance scale.

``phi`` holds the K means ``m_k = α_k/α₀`` and ``v = 1/(1 + α₀)``, with which
``Var(y_k) = m_k(1 − m_k) v`` (for K = 2 the Beta's mean and variance): the
mean–variance parametrization R-sens2 is taken in. Derivatives of the means
sum to zero (they stay on the simplex), so the K + 1 components carry the K
degrees of freedom of α.

The moment-matched family (`FAMILY_MATCHED`) holds the mixture's raw moments
instead, the means and ``r = E Σ_k y_k²`` (per draw ``v(1 − Σm²) + Σm²``),
and maps them to ``(m, v)`` by matching ``Σ_k Var(y_k)`` (`matched`); the
Dirichlet-multinomial's match is the same on its latent proportions.
"""

import numpy as np
from scipy.special import gammaln, polygamma, psi

from pm_sens.families._base import Family, raw_moment_family, reparametrize, stack_matrix


def concentrations(phi):
    """``α`` (..., K) from ``phi`` (..., K + 1)."""
    return phi[..., :-1] * (1 / phi[..., -1:] - 1)


def information_in_alpha(alpha, within=None):
    """``diag(ψ′(α_k) − w_k) − c 11ᵀ`` (..., K, K).

    The Dirichlet's (``within`` None): ``w = 0``, ``c = ψ′(α₀)``. Others pass
    ``within = (w, c)`` (`pm_sens.families.dirichlet_multinomial`).
    """
    w, c = within if within is not None else (0.0, polygamma(1, alpha.sum(-1)))
    diagonal = polygamma(1, alpha) - w
    k = alpha.shape[-1]
    return np.eye(k) * diagonal[..., None, :] - np.asarray(c)[..., None, None]


def to_mean_scale(info, phi):
    """An information in α, reparametrized to ``(m, v)`` by ``α = m(1/v − 1)``."""
    m, v = phi[..., :-1], phi[..., -1]
    k = m.shape[-1]
    scale = 1 / v - 1
    rows = [
        [scale if a == b else np.zeros_like(v) for b in range(k)] + [-m[..., a] / v**2]
        for a in range(k)
    ]
    return reparametrize(info, stack_matrix(rows))


def fisher_information(phi):
    """The α information ``diag(ψ′(α)) − ψ′(α₀) 11ᵀ`` in ``(m, v)``."""
    return to_mean_scale(information_in_alpha(concentrations(phi)), phi)


def _log_beta(alpha):
    return gammaln(alpha).sum(-1) - gammaln(alpha.sum(-1))


def kl_divergence(phi_p, phi_q):
    """``log B(b) − log B(a) + Σ (a_k − b_k)(ψ(a_k) − ψ(a₀))``."""
    a, b = concentrations(phi_p), concentrations(phi_q)
    digamma = psi(a) - psi(a.sum(-1))[..., None]
    return _log_beta(b) - _log_beta(a) + ((a - b) * digamma).sum(-1)


def log_density(phi, y):
    """Log density at proportions y (..., K) on the simplex."""
    alpha = concentrations(phi)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(alpha == 1, 0.0, (alpha - 1) * np.log(y)).sum(-1)
    inside = np.all(np.asarray(y) > 0, -1) & (np.abs(np.sum(y, -1) - 1) < 1e-8)
    return np.where(inside, terms - _log_beta(alpha), -np.inf)


def entropy(phi):
    """``log B(α) + (α₀ − K) ψ(α₀) − Σ (α_k − 1) ψ(α_k)``."""
    alpha = concentrations(phi)
    total = alpha.sum(-1)
    k = alpha.shape[-1]
    return _log_beta(alpha) + (total - k) * psi(total) - ((alpha - 1) * psi(alpha)).sum(-1)


FAMILY = Family(
    "dirichlet", "simplex", ("mean", "v"), fisher_information, kl_divergence, log_density, entropy
)


# The moment-matched family: the raw moments (E m, E r) merge chunk by chunk.


def matched(phi, derivatives=None, trailing=0):
    """Raw moments ``(m̄, r̄)`` → ``(m̄, v̄)``, ``v̄ = (r̄ − S)/(1 − S)``, ``S = Σ m̄²``.

    ``derivatives`` (one per raw moment, or None) map by the chain rule:
    ``∂v̄ = (∂r̄ − (1 − v̄) ∂S)/(1 − S)``, ``∂S = 2 Σ m̄_k ∂m̄_k``.
    """
    m, r = phi[..., :-1], phi[..., -1]
    squares = (m**2).sum(-1)
    v = (r - squares) / (1 - squares)
    mapped = np.concatenate([m, v[..., None]], -1)
    if derivatives is None:
        return mapped, None
    expand = (Ellipsis,) + (None,) * trailing
    d = list(derivatives) + [None] * (phi.shape[-1] - len(derivatives))
    d_squares = _sum_or_none(
        [2 * m[..., k][expand] * dk for k, dk in enumerate(d[:-1]) if dk is not None]
    )
    terms = [d[-1]] + ([-(1 - v)[expand] * d_squares] if d_squares is not None else [])
    terms = [t for t in terms if t is not None]
    d_v = sum(terms) / (1 - squares)[expand] if terms else None
    return mapped, d[:-1] + [d_v]


def _sum_or_none(terms):
    return sum(terms) if terms else None


def matched_second_derivatives(phi, jac, hess):
    """``(m̄, v̄)`` and their second derivatives (list over the K + 1, None where constant).

    Besides `matched`'s terms in the second derivatives, ``v̄ = f(r̄, S)`` brings
    ``2 f_rS ∂r̄ ∂S + f_SS ∂S ∂S`` (symmetrized outer products), and ``∂²S`` the
    ``2 Σ ∂m̄_k ∂m̄_kᵀ``; ``f_rS = 1/(1 − S)²``, ``f_SS = 2(r̄ − 1)/(1 − S)³``.
    """
    m, r = phi[..., :-1], phi[..., -1]
    squares = (m**2).sum(-1)
    mapped, second = matched(phi, hess, trailing=2)
    jac = list(jac) + [None] * (phi.shape[-1] - len(jac))
    expand = (Ellipsis, None, None)

    def outer(a, b):
        product = a[..., :, None] * b[..., None, :]
        return product + np.swapaxes(product, -1, -2)

    d_squares = _sum_or_none(
        [2 * m[..., k][..., None] * dk for k, dk in enumerate(jac[:-1]) if dk is not None]
    )
    extra = []
    if d_squares is not None:
        curvature = _sum_or_none([outer(dk, dk) for dk in jac[:-1] if dk is not None])
        # ∂²S's 2 Σ ∂m ∂mᵀ part, through f_S = (r̄ − 1)/(1 − S)²
        extra.append(((r - 1) / (1 - squares) ** 2)[expand] * curvature)
        extra.append((2 * (r - 1) / (1 - squares) ** 3)[expand] * outer(d_squares, d_squares) / 2)
        if jac[-1] is not None:
            extra.append(outer(jac[-1], d_squares) / ((1 - squares) ** 2)[expand])
    if extra:
        second[-1] = sum(extra) if second[-1] is None else second[-1] + sum(extra)
    return mapped, second


def whitened_hessian_matched(phi, jac, hess):
    """`matched_second_derivatives`, whitened by `FAMILY`."""
    return FAMILY.whitened(*matched_second_derivatives(phi, jac, hess), 2)


FAMILY_MATCHED = raw_moment_family(FAMILY, ("mean", "r"), matched, whitened_hessian_matched)

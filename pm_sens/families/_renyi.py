"""Rényi divergences of order α ≠ 1, ``D_α(p ‖ q) = log ∫ p^α q^(1−α) / (α − 1)``.

Three routes, each exact to its stated accuracy:

- exponential families, in closed form from the log-partition function;
- finite or truncated supports, by summing ``p^α q^(1−α)`` in log space;
- any law with a quadrature rule, by the rules of both laws (`renyi_by_rules`).

For ``0 < α < 1`` the integrand is at most ``α p + (1 − α) q``, so the mass of
both laws bounds it and rules built from them are sound. For ``α > 1`` it is
``p (p/q)^(α−1)``, which can put its mass outside both laws' bulk (Normals
with variances 1 and 1/4: at α = 1.3 the tilted law ``∝ p^α q^(1−α)`` has sd
3.2, at α ≥ 4/3 the integral diverges); only closed forms are used there.
"""

from functools import partial

import numpy as np
from scipy import special

_MAX_CELLS = 4_000_000  # elements × support values summed at once


def renyi_from_log_masses(log_p, log_q, alpha):
    """``log Σ_k p_k^α q_k^(1−α) / (α − 1)`` over a finite support (last axis).

    Classes without mass under p add nothing; with mass under p and none
    under q the divergence is infinite for ``alpha > 1``.
    """
    with np.errstate(invalid="ignore"):
        terms = np.where(np.isneginf(log_p), -np.inf, alpha * log_p + (1 - alpha) * log_q)
    return special.logsumexp(terms, axis=-1) / (alpha - 1)


def renyi_exponential_family(eta_p, eta_q, log_partition, alpha, in_domain):
    """``[A(η_α) − α A(η_p) − (1 − α) A(η_q)] / (α − 1)``, ``η_α = α η_p + (1 − α) η_q``.

    Parameters
    ----------
    eta_p, eta_q : tuple of ndarray
        Natural parameters of p and q, each a tuple of broadcastable arrays.
    log_partition : callable
        ``A(*eta) -> (...)``.
    alpha : float
        The order of the divergence.
    in_domain : callable
        ``in_domain(*eta) -> bool (...)``: whether η is a natural parameter
        (always so for ``0 < α < 1``, where η_α lies between η_p and η_q).

    Returns
    -------
    ndarray (...)
        Infinite where η_α leaves the domain (the integral diverges).
    """
    eta = tuple(alpha * a + (1 - alpha) * b for a, b in zip(eta_p, eta_q, strict=True))
    valid = in_domain(*eta)
    safe = tuple(np.where(valid, e, a) for e, a in zip(eta, eta_p, strict=True))
    gap = log_partition(*safe) - alpha * log_partition(*eta_p)
    gap = gap - (1 - alpha) * log_partition(*eta_q)
    return np.where(valid, gap / (alpha - 1), np.inf)


def renyi_by_summation(log_density, support_upper, tail=1e-15):
    """``renyi_divergence(phi_p, phi_q, alpha)`` of a discrete family, for ``0 < α < 1``.

    Sums over 0..K with K above both laws' ``1 − tail`` quantiles, which holds
    all but ``tail`` of ``∫ p^α q^(1−α)`` (at most ``α p + (1 − α) q`` per count).
    """

    def renyi_divergence(phi_p, phi_q, alpha):
        def top(flat_p, flat_q):
            return max(support_upper(flat_p, tail).max(), support_upper(flat_q, tail).max())

        return sum_over_counts(
            log_density, phi_p, phi_q, top, partial(renyi_from_log_masses, alpha=alpha)
        )

    return renyi_divergence


def sum_over_counts(log_density, phi_p, phi_q, top, reduce):
    """``reduce(log p, log q)`` over the counts 0..K + 1, rows in blocks.

    Parameters
    ----------
    log_density : callable
        The family's ``log_density(phi, y)``.
    phi_p, phi_q : ndarray (..., M)
        The parameters of p and q.
    top : callable
        ``top(flat_p, flat_q) -> K`` from the rows' parameters (R, M).
    reduce : callable
        ``reduce(log_p, log_q) -> (r,)`` from the log masses (r, K + 2).

    Returns
    -------
    ndarray (...)
    """
    phi_p, phi_q = np.broadcast_arrays(phi_p, phi_q)
    shape = phi_p.shape[:-1]
    flat_p, flat_q = (a.reshape(-1, a.shape[-1]) for a in (phi_p, phi_q))
    out = np.empty(len(flat_p))
    if not len(flat_p):
        return out.reshape(shape)
    y = np.arange(int(top(flat_p, flat_q)) + 2)
    step = max(1, _MAX_CELLS // len(y))
    for start in range(0, len(flat_p), step):
        rows = slice(start, start + step)
        log_p = log_density(flat_p[rows, None, :], y)
        out[rows] = reduce(log_p, log_density(flat_q[rows, None, :], y))
    return out.reshape(shape)


def renyi_by_rules(own_p, own_q, alpha):
    """``D_α`` for ``0 < α < 1`` from a quadrature rule of each law.

    ``∫ p^α q^(1−α) = E_p[g] + E_q[g]`` with ``g = p^α q^(1−α) / (p + q)``,
    which lies in [0, 1] and is as smooth as the densities, so each law's own
    rule integrates it well wherever the two laws lie.

    Parameters
    ----------
    own_p, own_q : tuple of ndarray
        For the rule of p and of q, as `log_rule_term` takes them.
    alpha : float
        The order of the divergence, in (0, 1).

    Returns
    -------
    ndarray (...)
    """
    return np.logaddexp(log_rule_term(*own_p, alpha), log_rule_term(*own_q, alpha)) / (alpha - 1)


def log_rule_term(log_weight, log_p, log_q, alpha):
    """``log E[g]`` by one law's rule, ``g = p^α q^(1−α) / (p + q)`` (`renyi_by_rules`).

    Parameters
    ----------
    log_weight : ndarray (P, ...)
        Log of the rule's weights for its own law (``Σ w f ≈ E f``) at its P
        nodes; normalized here to sum 1 (the rule's mass error then cancels
        where p ≈ q).
    log_p, log_q : ndarray (P, ...)
        Both log densities at the nodes.
    alpha : float
        The order of the divergence, in (0, 1).

    Returns
    -------
    ndarray (...)
    """
    with np.errstate(invalid="ignore"):
        usable = np.isfinite(log_weight) & ~(np.isneginf(log_p) & np.isneginf(log_q))
        log_weight = np.where(usable, log_weight, -np.inf)
        log_weight = log_weight - special.logsumexp(log_weight, axis=0)
        g = alpha * log_p + (1 - alpha) * log_q - np.logaddexp(log_p, log_q)
        terms = np.where(usable & np.isfinite(g), log_weight + g, -np.inf)
    return special.logsumexp(terms, axis=0)

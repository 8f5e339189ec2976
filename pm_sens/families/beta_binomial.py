"""Beta-binomial(n, α, β) with n fixed, held in PyMC's own (α, β).

Its pmf ``C(n, y) B(y + α, n − y + β) / B(α, β)`` on 0..n is computed count
by count from ``p(0) = B(α, n + β)/B(α, β)`` and the ratio

    p(k + 1)/p(k) = (n − k)(k + α) / ((k + 1)(n − k − 1 + β)),

one logarithm per count instead of six log-gamma functions. The Fisher
information in (α, β), with ``ψ′(x) − ψ′(x + m) = Σ_{j<m} 1/(x + j)²``
applied to its trigamma form (as `pm_sens.families.dirichlet_multinomial`'s),
is a sum over the counts without any trigamma:

    I_αα = Σ_{j<n} P(Y > j)/(α + j)² − T,   I_ββ = Σ_{j<n} P(Y < n − j)/(β + j)² − T,
    I_αβ = −T,   T = Σ_{j<n} 1/(α + β + j)².

(α, β) are the leaf parameters PyMC's logp route differentiates, so R-sens2
equals that route's (R-sens does not depend on the parametrization).
"""

import numpy as np
from scipy.special import gammaln

from pm_sens.families import binomial
from pm_sens.families._base import NUMPY, Family, log1p_gap, stack_matrix
from pm_sens.families._renyi import renyi_from_log_masses

#: the pmf below e^−700 (1e-304) is taken as e^−700: NumPy's exp leaves its vector
#: path for results that underflow (5 to 30 times slower), as its log does at 0
_LOG_SMALLEST = -700.0


def _trials(phi, n):
    """The trials as floats against the rows of ``phi`` (...), and the largest.

    Axes along which n is a broadcast (the same for every draw) stay of length
    1: NumPy runs arithmetic on a stride-0 array 30 times slower per value.
    """
    n = np.broadcast_to(np.asarray(n, dtype=float), phi.shape[:-1])
    own = tuple(slice(0, 1) if stride == 0 else slice(None) for stride in n.strides)
    return np.ascontiguousarray(n[own]), int(np.max(n, initial=0))


def _walk(phi, n):
    """Yield, for k = 0, 1, …, max(n), the log pmf at k (...) and whether k <= n.

    The log pmf follows the ratio of the module docstring; past n, where the
    pmf is 0, it goes on finite (each step a ratio of 1e-10), so that no log 0
    or exp of −inf leaves NumPy's vector loops. Each yielded log pmf is the
    next one's buffer: copy what is kept.
    """
    a, b = (np.ascontiguousarray(phi[..., m]) for m in (0, 1))
    n, top = _trials(phi, n)
    log_p = gammaln(n + b) - gammaln(b) + gammaln(a + b) - gammaln(n + a + b)
    yield log_p, n >= 0
    ratio, below = np.empty_like(log_p), np.empty_like(log_p)
    for k in range(top):
        left = n - k
        np.add(a, k, out=ratio)
        ratio *= np.where(left > 0, left / (k + 1), 1e-10)
        np.add(b, np.maximum(left - 1, 0), out=below)
        ratio /= below
        np.log(ratio, out=ratio)
        log_p += ratio
        yield log_p, left > 0


def _log_pmf(phi, n):
    """The log pmf (max(n) + 1, ...) at 0..max(n), −inf past each n."""
    return np.stack([np.where(inside, log_p, -np.inf) for log_p, inside in _walk(phi, n)])


def graph_log_density(xp, y, a, b, n):
    """Log pmf at y ∈ {0, …, n}, −inf elsewhere, in ``xp``.

    ``log C(n, y) + log B(y + α, n − y + β) − log B(α, β)`` as log Γ's.
    """
    inside = (y >= 0) & (y <= n) & xp.equal(xp.floor(y), y)
    y = xp.clip(y, 0, n)
    value = (
        xp.gammaln(n + 1.0)
        - xp.gammaln(y + 1.0)
        - xp.gammaln(n - y + 1.0)
        + xp.gammaln(y + a)
        + xp.gammaln(n - y + b)
        - xp.gammaln(n + a + b)
        - xp.gammaln(a)
        - xp.gammaln(b)
        + xp.gammaln(a + b)
    )
    return xp.where(inside, value, -np.inf)


def log_density(phi, y, n):
    """Log pmf at y ∈ {0, …, n} (`graph_log_density` in NumPy), −inf elsewhere."""
    return graph_log_density(
        NUMPY,
        np.asarray(y, dtype=float),
        phi[..., 0],
        phi[..., 1],
        np.asarray(n, dtype=float),
    )


def pmf_table(phi, n):
    """The pmf of 0..max(n) (max(n) + 1 arrays (...)) and the entropy (...)."""
    pmf, entropy = [], np.zeros(phi.shape[:-1])
    clipped = np.empty(phi.shape[:-1])
    for log_p, inside in _walk(phi, n):
        np.maximum(log_p, _LOG_SMALLEST, out=clipped)
        p = np.exp(clipped)
        p *= inside
        pmf.append(p)
        clipped *= p
        entropy -= clipped
    return tuple(pmf), entropy


def _weighted_tail(phi, n):
    """``Σ_j P(Y > j)/(α + j)²`` (...), ``P(Y > j)`` summed down from the top (0 past n)."""
    pmf = np.exp(_log_pmf(phi, n))
    above = np.cumsum(pmf[:0:-1], 0)[::-1]  # P(Y > j), j = 0..max(n) − 1
    j = np.arange(len(above)).reshape(-1, *(1,) * (pmf.ndim - 1))
    return (above / (phi[..., 0] + j) ** 2).sum(0)


def fisher_information(phi, n):
    """I (..., 2, 2) in (α, β), by the sums of the module docstring.

    ``I_ββ`` is ``I_αα`` of ``n − Y``, a beta-binomial with α and β swapped.
    """
    n, top = _trials(phi, n)
    j = np.arange(top).reshape(-1, *(1,) * n.ndim)
    t = np.where(j < n, 1 / (phi[..., 0] + phi[..., 1] + j) ** 2, 0.0).sum(0)
    i_aa, i_bb = (_weighted_tail(x, n) - t for x in (phi, phi[..., ::-1]))
    return stack_matrix([[i_aa, -t], [-t, i_bb]])


def _log_pmf_gaps(phi_p, phi_q, n):
    """``log q(k) − log p(k)`` (max(n) + 1, ...), from the parameters' differences.

    With ``δα = α_q − α_p``, ``δβ = β_q − β_p``: at 0, ``Σ_{j<n} log1p(δβ/(β + j)) −
    log1p((δα + δβ)/(α + β + j))`` (``p(0) = Π_{j<n} (β + j)/(α + β + j)``); then
    each ratio's, ``log1p((δα (m + β) − (k + α) δβ)/((k + α)(m + β + δβ)))``,
    ``m = n − k − 1``. Exact to rounding for laws however close: the difference
    of two log pmfs of shapes near 1e6 (log Γ near 1e7) lost the last 1e-9.
    Values past n are finite and meaningless (the pmf is 0 there).
    """
    a, b = phi_p[..., 0], phi_p[..., 1]
    da, db = phi_q[..., 0] - a, phi_q[..., 1] - b
    n, top = _trials(phi_p, n)
    gap = np.zeros(np.broadcast_shapes(a.shape, n.shape))
    for j in range(top):
        terms = np.log1p(db / (b + j)) - np.log1p((da + db) / (a + b + j))
        gap += np.where(j < n, terms, 0.0)
    gaps = [gap]
    for k in range(top):
        m = np.maximum(n - k - 1, 0)
        gaps.append(gaps[-1] + np.log1p((da * (m + b) - (k + a) * db) / ((k + a) * (m + b + db))))
    return np.stack(gaps)


def kl_divergence(phi_p, phi_q, n):
    """KL(p ‖ q) as ``Σ_k p_k g(q_k/p_k − 1)``, ``g(u) = u − log(1 + u)`` (`log1p_gap`)."""
    shape = np.broadcast_shapes(phi_p.shape, phi_q.shape)
    phi_p, phi_q = (np.broadcast_to(x, shape) for x in (phi_p, phi_q))
    log_p = _log_pmf(phi_p, n)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        gap = log1p_gap(np.expm1(_log_pmf_gaps(phi_p, phi_q, n)))
        return np.where(np.isfinite(log_p), np.exp(log_p) * gap, 0.0).sum(0)


def renyi_divergence(phi_p, phi_q, alpha, n):
    """``log Σ_k p_k^α q_k^(1−α) / (α − 1)`` over 0..n (`renyi_from_log_masses`)."""
    shape = np.broadcast_shapes(phi_p.shape, phi_q.shape)
    log_p, log_q = (
        np.moveaxis(_log_pmf(np.broadcast_to(x, shape), n), 0, -1) for x in (phi_p, phi_q)
    )
    return renyi_from_log_masses(log_p, log_q, alpha)


FAMILY = Family(
    "beta_binomial",
    "count",
    ("alpha", "beta"),
    fisher_information,
    kl_divergence,
    log_density,
    support_upper=binomial.support_upper,  # no count exceeds the trials
    pmf_table=pmf_table,
    graph_log_density=graph_log_density,
    renyi_divergence=renyi_divergence,
)

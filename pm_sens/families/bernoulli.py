"""Bernoulli(p).

The moment-matched family may carry ``1 − p`` as a second column (a value, not
a parameter: it has no derivative), averaged over the draws like p itself: near
p = 1 it keeps the digits that ``1 − p̄`` would round away (a logit of 40 gives
p̄ = 1.0 but 1 − p̄ = 4e-18). With one column, ``1 − p`` is computed.
"""

import numpy as np
from scipy import special

from pm_sens.families._base import (
    NUMPY,
    Family,
    clip_probability,
    diagonal_factors,
    expanded,
    log1p_gap,
    outer,
    softplus,
)
from pm_sens.families._renyi import renyi_from_log_masses


def probabilities(phi):
    """``(p, 1 − p)``, the second from its own column where there is one."""
    return _probabilities(np, *(phi[..., m] for m in range(phi.shape[-1])))


def _probabilities(xp, p, q=None):
    """`probabilities` of the columns, in the array namespace ``xp``."""
    q = 1 - p if q is None else q
    return clip_probability(p, xp), xp.maximum(q, np.finfo(float).tiny)


def _scale(xp, *columns):
    """``1/sqrt(p(1−p))``."""
    p, q = _probabilities(xp, *columns)
    return 1 / xp.sqrt(p * q)


def fisher_information(phi):
    """Fisher information of p: ``1/(p(1−p))``."""
    return (fisher_factors(phi, [0])[0] ** 2)[..., None]


fisher_factors = diagonal_factors(_scale)


def kl_divergence(phi_p, phi_q):
    """KL between Bernoulli laws: ``p₁ g(d/p₁) + q₁ g(−d/q₁)``, q = 1 − p.

    ``d = p₂ − p₁`` is taken from the smaller side's column, exact near p = 1.
    """
    (p1, q1), (p2, q2) = probabilities(phi_p), probabilities(phi_q)
    d = np.where(p1 <= q1, p2 - p1, q1 - q2)
    return p1 * log1p_gap(d / p1) + q1 * log1p_gap(-d / q1)


def log_density(phi, y):
    """Log pmf at y ∈ {0, 1} (−inf elsewhere)."""
    p, q = probabilities(phi)
    with np.errstate(divide="ignore"):
        return np.where(y == 1, np.log(p), np.where(y == 0, np.log(q), -np.inf))


def support_upper(phi, tail):
    """The support is {0, 1}."""
    return np.ones(phi.shape[:-1], dtype=int)


def pmf_table(phi):
    """``(1 − p, p)`` and the entropy ``−p log p − (1 − p) log(1 − p)``."""
    p, q = probabilities(phi)
    return (q, p), special.entr(p) + special.entr(q)


def graph_pmf_table(xp, *columns):
    """`pmf_table` in the namespace ``xp`` (p and q kept off 0, so ``p log p`` is 0 there)."""
    p, q = _probabilities(xp, *columns)
    return (q, p), -(p * xp.log(p) + q * xp.log(q))


def graph_log_pmf_table(xp, *columns):
    """``(log(1 − p), log p)`` in the namespace ``xp``, as `log_density` takes them."""
    p, q = _probabilities(xp, *columns)
    return xp.log(q), xp.log(p)


def renyi_divergence(phi_p, phi_q, alpha):
    """Rényi divergence of order α over {0, 1}."""
    return renyi_from_log_masses(
        _log_masses(probabilities(phi_p)), _log_masses(probabilities(phi_q)), alpha
    )


def _log_masses(p_and_q):
    with np.errstate(divide="ignore"):
        return np.log(np.stack(p_and_q, -1))


FAMILY = Family(
    "bernoulli",
    "binary",
    ("p",),
    fisher_information,
    kl_divergence,
    log_density,
    support_upper=support_upper,
    pmf_table=pmf_table,
    graph_pmf_table=graph_pmf_table,
    graph_log_pmf_table=graph_log_pmf_table,
    fisher_factors=fisher_factors,
    renyi_divergence=renyi_divergence,
)


# Per-draw Bernoulli on the logit η: p = σ(η) rounds to 1 from η ≈ 37 on, while
# the information σ(η)σ(−η) and every quantity below stay exact to |η| ≈ 700.


def _sigmoid(eta):
    """``σ(η)`` from ``exp(−|η|)``, exact in relative terms on both tails."""
    small = np.exp(-np.abs(eta))
    return np.where(eta >= 0, 1 / (1 + small), small / (1 + small))


def fisher_information_logit(phi):
    """Fisher information of the logit: ``σ(η)σ(−η)``."""
    eta = phi[..., :1]
    return (_sigmoid(eta) * _sigmoid(-eta))[..., None]


def _logit_scale(xp, eta):
    """``sqrt(σ(η)σ(−η)) = 1/(2 cosh(η/2))``, 0 once cosh overflows (|η| > 1420)."""
    with np.errstate(over="ignore"):
        return 0.5 / xp.cosh(eta * 0.5)


fisher_factors_logit = diagonal_factors(_logit_scale)


def whitened_hessian_logit(phi, jac, hess):
    """``∂²p/sqrt(pq) = sqrt(pq) (∂²η + (q − p) ∂η ∂ηᵀ)`` with ``p = σ(η)``."""
    eta = phi[..., 0]
    scale = _logit_scale(np, eta)[..., None, None]
    return [scale * (hess[0] + np.tanh(-eta / 2)[..., None, None] * outer(jac[0]))], None


def kl_divergence_logit(phi_p, phi_q):
    """KL between Bernoulli laws given by logits.

    Near each other (``|η₂ − η₁| < 1``) as `kl_divergence`, with
    ``p₂ − p₁ = expm1(η₂ − η₁) σ(η₁) σ(−η₂)`` and both tails' masses exact;
    farther apart from the log masses, ``log p = −softplus(−η)``:
    ``p₁ (softplus(−η₂) − softplus(−η₁)) + q₁ (softplus(η₂) − softplus(η₁))``,
    finite for any two logits (``p₂`` never rounds to 1).
    """
    eta1, eta2 = phi_p[..., 0], phi_q[..., 0]
    p1, q1 = _sigmoid(eta1), _sigmoid(-eta1)
    d = np.expm1(eta2 - eta1) * p1 * _sigmoid(-eta2)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        near = np.where(p1 > 0, p1 * log1p_gap(d / p1), 0.0) + np.where(
            q1 > 0, q1 * log1p_gap(-d / q1), 0.0
        )
    far = p1 * (softplus(-eta2) - softplus(-eta1)) + q1 * (softplus(eta2) - softplus(eta1))
    return np.where(np.abs(eta2 - eta1) < 1, near, far)


def graph_log_density_logit(xp, y, eta):
    """Log pmf at y ∈ {0, 1}, ``−softplus((1 − 2y) η)`` (−inf elsewhere), in ``xp``."""
    inside = xp.equal(y, 0) | xp.equal(y, 1)
    return xp.where(inside, -xp.softplus((1 - 2 * y) * eta), -np.inf)


def log_density_logit(phi, y):
    """Log pmf at y ∈ {0, 1} (`graph_log_density_logit` in NumPy)."""
    return graph_log_density_logit(NUMPY, np.asarray(y, dtype=float), phi[..., 0])


def pmf_table_logit(phi):
    """``(σ(−η), σ(η))`` and the entropy ``log(1 + e) + |η| e/(1 + e)``, ``e = exp(−|η|)``.

    ``σ(η) = 1/(1 + e^{−η})`` is exact in relative terms on both tails (down to
    the smallest normal float, where ``e^{−η}`` overflows and σ is 0), and the
    entropy a sum of two positive terms (no cancellation for large ``|η|``;
    the smaller probability is ``e/(1 + e)``). ``|η|`` is bounded at 800, beyond
    which ``e = 0``: an infinite logit gets entropy 0, not ``∞ · 0``.
    """
    eta = phi[..., 0]
    with np.errstate(over="ignore"):
        q = np.exp(eta)  # becomes σ(−η) = 1/(1 + e^η)
        p = np.negative(eta)
        np.exp(p, out=p)  # becomes σ(η)
    e = np.minimum(p, q)
    for x in (p, q):
        x += 1
        np.reciprocal(x, out=x)
    entropy = np.minimum(np.abs(eta), 800.0)
    entropy *= np.minimum(p, q)
    entropy += np.log1p(e)
    return (q, p), entropy


def graph_pmf_table_logit(xp, eta):
    """`pmf_table_logit` in the namespace ``xp``, by the same steps without writing in place."""
    e_plus, e_minus = xp.exp(eta), xp.exp(-eta)
    q, p = 1 / (1 + e_plus), 1 / (1 + e_minus)
    entropy = xp.minimum(xp.abs(eta), 800.0) * xp.minimum(p, q)
    return (q, p), entropy + xp.log1p(xp.minimum(e_plus, e_minus))


def graph_log_pmf_table_logit(xp, eta):
    """``(−softplus(η), −softplus(−η))`` in the namespace ``xp``, exact on both tails."""
    tail = xp.log1p(xp.exp(-xp.abs(eta)))
    return -(xp.maximum(eta, 0) + tail), -(xp.maximum(-eta, 0) + tail)


def renyi_divergence_logit(phi_p, phi_q, alpha):
    """Rényi divergence of order α from the log masses ``−softplus(∓η)``, exact in the tails."""
    return renyi_from_log_masses(_log_masses_logit(phi_p), _log_masses_logit(phi_q), alpha)


def _log_masses_logit(phi):
    eta = phi[..., 0]
    return np.stack([-softplus(-eta), -softplus(eta)], -1)


def to_probability(phi, derivatives=None, trailing=0):
    """η → (p, 1 − p) = (σ(η), σ(−η)), both exact; ``∂p = σ(η)σ(−η) ∂η``."""
    eta = phi[..., 0]
    p, q = _sigmoid(eta), _sigmoid(-eta)
    mapped = np.stack([p, q], -1)
    if derivatives is None:
        return mapped, None
    (d_eta,) = derivatives
    d_p = None if d_eta is None else expanded(p * q, trailing) * d_eta
    return mapped, [d_p, None]


FAMILY_LOGIT = Family(
    "bernoulli",
    "binary",
    ("logit_p",),
    fisher_information_logit,
    kl_divergence_logit,
    log_density_logit,
    support_upper=support_upper,
    pmf_table=pmf_table_logit,
    graph_pmf_table=graph_pmf_table_logit,
    graph_log_pmf_table=graph_log_pmf_table_logit,
    graph_log_density=graph_log_density_logit,
    fisher_factors=fisher_factors_logit,
    whitened_hessian=whitened_hessian_logit,
    renyi_divergence=renyi_divergence_logit,
    mean_variance=(to_probability, FAMILY),
)

"""Normal(μ, σ) censored at fixed bounds l < u (Tobit), in (μ, σ).

With ``a = (l − μ)/σ``, ``b = (u − μ)/σ``, the law has masses ``Φ(a)`` at l and
``1 − Φ(b)`` at u and the Normal density between. Everything follows from the
standard normal's partial moments ``M_k = ∫_a^b z^k φ(z) dz``
(``M_0 = Φ(b) − Φ(a)``, ``M_1 = φ(a) − φ(b)``,
``M_k = (k−1) M_{k−2} + a^{k−1} φ(a) − b^{k−1} φ(b)``):

- Fisher information, from the interior scores ``(z/σ, (z² − 1)/σ)`` and the
  scores at the masses: ``σ² I = [[M_2, M_3 − M_1], [M_3 − M_1, M_4 − 2M_2 + M_0]]
  + φ(a)²/Φ(a) [[1, a], [a, a²]] + φ(b)²/(1 − Φ(b)) [[1, b], [b, b²]]``;
- KL and entropy: the masses' terms plus the interior expectation of a
  quadratic in z.
"""

import numpy as np
from scipy import special

from pm_sens.families._base import (
    Family,
    log1p_gap,
    point_mass_entropy,
    point_mass_kl,
    point_mass_renyi_terms,
    stack_matrix,
)

LOG_ROOT_2PI = 0.5 * np.log(2 * np.pi)


def standardized(phi, lower, upper):
    """μ, σ and the standardized bounds ``a = (l − μ)/σ``, ``b = (u − μ)/σ``."""
    mu, sigma = phi[..., 0], phi[..., 1]
    with np.errstate(invalid="ignore"):
        return mu, sigma, (lower - mu) / sigma, (upper - mu) / sigma


def log_pdf(z):
    """The standard normal's log density."""
    return -0.5 * z**2 - LOG_ROOT_2PI


def _masses(a, b):
    """Log Φ(a) and log(1 − Φ(b)) (−inf at an infinite bound)."""
    return special.log_ndtr(a), special.log_ndtr(-b)


def tail_term(z, power, log_scale=0.0):
    """``z^power φ(z) / e^log_scale``, 0 at an infinite bound."""
    finite = np.isfinite(z)
    safe = np.where(finite, z, 0.0)
    return np.where(finite, safe**power * np.exp(log_pdf(safe) - log_scale), 0.0)


def partial_moments(a, b, order=4, normalized=False):
    """``M_0 … M_order`` of the standard normal over (a, b), stacked on a last axis.

    ``normalized``: each divided by ``M_0`` (the moments of the standard normal
    truncated to (a, b)), with ``M_0`` taken in log space from the tail nearer
    to the interval, so an interval far in a tail keeps its precision.
    """
    if normalized:
        log_scale = log_ndtr_gap(a, b)
        moments = [np.ones_like(log_scale)]
    else:
        log_scale = 0.0
        moments = [special.ndtr(b) - special.ndtr(a)]
    moments.append(tail_term(a, 0, log_scale) - tail_term(b, 0, log_scale))
    for k in range(2, order + 1):
        moments.append(
            (k - 1) * moments[k - 2]
            + tail_term(a, k - 1, log_scale)
            - tail_term(b, k - 1, log_scale)
        )
    return np.stack(moments, -1)


def _mass_information(z, log_mass):
    """``φ(z)²/P (1, z, z²)``: a mass P at a standardized bound z (0 if none).

    The scores there are ``∓φ(z)/(σP) (1, z)``.
    """
    finite = np.isfinite(z) & np.isfinite(log_mass)
    safe = np.where(finite, z, 0.0)
    weight = np.where(finite, np.exp(2 * log_pdf(safe) - np.where(finite, log_mass, 0.0)), 0.0)
    return weight, weight * safe, weight * safe**2


def fisher_information(phi, lower, upper):
    """Fisher information of (μ, σ), (..., 2, 2)."""
    _, sigma, a, b = standardized(phi, lower, upper)
    m = partial_moments(a, b)
    low_mass, high_mass = _masses(a, b)
    wa, wa1, wa2 = _mass_information(a, low_mass)
    wb, wb1, wb2 = _mass_information(b, high_mass)
    s2 = sigma**2
    mu_mu = (m[..., 2] + wa + wb) / s2
    mu_sigma = (m[..., 3] - m[..., 1] + wa1 + wb1) / s2
    sigma_sigma = (m[..., 4] - 2 * m[..., 2] + m[..., 0] + wa2 + wb2) / s2
    return stack_matrix([[mu_mu, mu_sigma], [mu_sigma, sigma_sigma]])


def log_density(phi, y, lower, upper):
    """Log mass at a bound, log density between."""
    mu, sigma, a, b = standardized(phi, lower, upper)
    low_mass, high_mass = _masses(a, b)
    y = np.asarray(y, dtype=float)
    interior = log_pdf((y - mu) / sigma) - np.log(sigma)
    return np.where(y <= lower, low_mass, np.where(y >= upper, high_mass, interior))


def kl_divergence(phi_p, phi_q, lower, upper):
    """KL(p ‖ q) for the same bounds: the masses' terms and the interior's.

    Between the bounds ``log p/q = −log r + ((r z + d)² − z²)/2`` with
    ``r = σ_p/σ_q``, ``d = (μ_p − μ_q)/σ_q`` and z standardized under p.
    """
    mu_p, sigma_p, a_p, b_p = standardized(phi_p, lower, upper)
    mu_q, sigma_q, a_q, b_q = standardized(phi_q, lower, upper)
    m = partial_moments(a_p, b_p, order=2)
    r2_minus_1 = np.expm1(2 * (np.log(sigma_p) - np.log(sigma_q)))
    r, d = sigma_p / sigma_q, (mu_p - mu_q) / sigma_q
    # −log r · M0 + (r² − 1) M2/2 = M0 g(r² − 1)/2 + (r² − 1)(M2 − M0)/2
    interior = (
        m[..., 0] * log1p_gap(r2_minus_1) / 2
        + r2_minus_1 * (m[..., 2] - m[..., 0]) / 2
        + r * d * m[..., 1]
        + d**2 * m[..., 0] / 2
    )
    return interior + point_mass_kl(_masses(a_p, b_p), _masses(a_q, b_q))


def renyi_divergence(phi_p, phi_q, alpha, lower, upper):
    """Rényi divergence for the same bounds: the masses' terms and the interior's."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        terms = [log_mixed_interior(phi_p, phi_q, alpha, lower, upper)]
        terms += point_mass_renyi_terms(
            _masses(*standardized(phi_p, lower, upper)[2:]),
            _masses(*standardized(phi_q, lower, upper)[2:]),
            alpha,
        )
        return np.logaddexp.reduce(np.stack(np.broadcast_arrays(*terms)), axis=0) / (alpha - 1)


def log_mixed_interior(phi_p, phi_q, alpha, lower, upper):
    """``log ∫_l^u p^α q^(1−α) dy`` for the Normal densities p and q (not truncated).

    ``p^α q^(1−α) = exp(−P y²/2 + B y − C/2 + K)`` with
    ``P = α/σ_p² + (1−α)/σ_q²``, ``B = α μ_p/σ_p² + (1−α) μ_q/σ_q²``,
    ``C = α μ_p²/σ_p² + (1−α) μ_q²/σ_q²``, ``K = −α log σ_p − (1−α) log σ_q − log √(2π)``:
    a Normal's mass over (l, u) where ``P > 0``; where ``P <= 0`` (α > 1, q much
    narrower) Dawson's integral over a finite interval, infinite over an unbounded one.
    """
    (mu_p, sigma_p), (mu_q, sigma_q) = (
        (phi_p[..., 0], phi_p[..., 1]),
        (phi_q[..., 0], phi_q[..., 1]),
    )
    w_p, w_q = alpha / sigma_p**2, (1 - alpha) / sigma_q**2
    precision = w_p + w_q
    b_term, c_term = w_p * mu_p + w_q * mu_q, w_p * mu_p**2 + w_q * mu_q**2
    log_k = -alpha * np.log(sigma_p) - (1 - alpha) * np.log(sigma_q) - LOG_ROOT_2PI
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        center = b_term / precision
        log_front = b_term * center / 2 - c_term / 2 + log_k
        root = np.sqrt(np.abs(precision))
        low, high = root * (lower - center), root * (upper - center)
        return np.where(
            precision > 0,
            log_front + 0.5 * np.log(2 * np.pi) - np.log(root) + log_ndtr_gap(low, high),
            # t = y·sqrt(|P|/2): the exponent is t² plus a constant
            log_front
            + 0.5 * np.log(2.0)
            - np.log(root)
            + _log_dawson_gap(low / np.sqrt(2), high / np.sqrt(2)),
        )


def log_ndtr_gap(a, b):
    """``log(Φ(b) − Φ(a))``, a < b, from the tail nearer to the interval."""
    upper_tail = a > 0
    a, b = np.where(upper_tail, -b, a), np.where(upper_tail, -a, b)
    log_b = special.log_ndtr(b)
    return log_b + np.log1p(-np.exp(special.log_ndtr(a) - log_b))


#: an infinite bound stands in this far beyond 0 and the other bound, standardized:
#: the normal's density (e^{−800}) and tail mass there are 0 in float64, and so are
#: their derivatives
_FAR = 40.0


def graph_bounds(xp, mu, sigma, lower, upper):
    """The standardized bounds ``(a, b)``, in the namespace ``xp``; an infinite one at `_FAR`.

    Beyond the other bound too: a location hundreds of scales above a finite
    upper bound keeps a < b.
    """
    z_low, z_high = ((xp.where(xp.isinf(x), 0.0, x) - mu) / sigma for x in (lower, upper))
    a = xp.where(xp.isinf(lower), xp.minimum(z_high, 0.0) - _FAR, z_low)
    b = xp.where(xp.isinf(upper), xp.maximum(z_low, 0.0) + _FAR, z_high)
    return a, b


def graph_log_tail(xp, z):
    """``log(1 − Φ(z))`` for z >= 0, by the scaled complementary error function."""
    return xp.log(xp.erfcx(z / np.sqrt(2)) / 2) - z**2 / 2


def graph_log_mass(xp, a, b):
    """``log Z = log(Φ(b) − Φ(a))``, a < b, from the tail nearer to the interval.

    In the namespace ``xp`` (one with ``erfcx`` and ``erfc``, as PyTensor's).
    Each branch is computed from stand-ins where it is not taken, so that
    neither its value nor its derivative is nan there.
    """
    low_tail, high_tail = a >= 0, b <= 0
    tail = low_tail | high_tail
    near = xp.where(tail, xp.where(high_tail, -b, a), 0.0)
    far = xp.where(tail, xp.where(high_tail, -a, b), 1.0)
    log_near = graph_log_tail(xp, near)
    # log(1 − e^d), d <= 0, in the form whose derivatives stay finite down to d
    # = −800 (PyTensor's log1mexp's second derivative is inf/inf there)
    d = graph_log_tail(xp, far) - log_near
    in_tail = log_near + xp.where(d < -np.log(2), xp.log1p(-xp.exp(d)), xp.log(-xp.expm1(d)))
    a_, b_ = xp.where(tail, -1.0, a), xp.where(tail, 1.0, b)
    central = xp.log1p(-(xp.erfc(-a_ / np.sqrt(2)) + xp.erfc(b_ / np.sqrt(2))) / 2)
    return xp.where(tail, in_tail, central)


def graph_log_ndtr(xp, z):
    """``log Φ(z)`` in the namespace ``xp`` (one with ``erfcx`` and ``erfc``).

    Below 0 from the lower tail's scaled error function, above from
    ``log1p``; each branch computed from a stand-in where it is not taken.
    """
    below = z < 0
    tail = graph_log_tail(xp, xp.where(below, -z, 0.0))
    return xp.where(below, tail, xp.log1p(-xp.erfc(xp.where(below, 0.0, z) / np.sqrt(2)) / 2))


def graph_log_density(xp, y, mu, sigma, lower, upper):
    """`log_density` in the namespace ``xp`` (one with ``erfcx`` and ``erfc``).

    An infinite bound's mass is taken at its stand-in (`graph_bounds`), never
    at a y (y <= −inf is false).
    """
    a, b = graph_bounds(xp, mu, sigma, lower, upper)
    interior = log_pdf((y - mu) / sigma) - xp.log(sigma)
    high = xp.where(y >= upper, graph_log_ndtr(xp, -b), interior)
    return xp.where(y <= lower, graph_log_ndtr(xp, a), high)


def _log_dawson_gap(a, b):
    """``log ∫_a^b e^{t²} dt``, a < b; infinite for an unbounded interval.

    ``e^{b²} F(b) − e^{a²} F(a)`` with F Dawson's integral.
    """
    finite = np.isfinite(a) & np.isfinite(b)
    a, b = np.where(finite, a, 0.0), np.where(finite, b, 1.0)
    fa, fb = special.dawsn(a), special.dawsn(b)
    top = np.maximum(a**2, b**2)
    value = np.exp(b**2 - top) * fb - np.exp(a**2 - top) * fa
    return np.where(finite, top + np.log(value), np.inf)


def entropy(phi, lower, upper):
    """``−E[log p]``: the masses enter with their log mass."""
    _, sigma, a, b = standardized(phi, lower, upper)
    m = partial_moments(a, b, order=2)
    total = m[..., 0] * (np.log(sigma) + LOG_ROOT_2PI) + m[..., 2] / 2
    return total + point_mass_entropy(_masses(a, b))


FAMILY = Family(
    "censored_normal",
    "real",
    ("mu", "sigma"),
    fisher_information,
    kl_divergence,
    log_density,
    entropy=entropy,
    graph_log_density=graph_log_density,
    renyi_divergence=renyi_divergence,
)

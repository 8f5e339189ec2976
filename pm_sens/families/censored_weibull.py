"""Weibull(shape k, scale λ) censored at fixed bounds 0 <= l < u, in PyMC's (alpha, beta).

With ``u = (y/λ)^k``, an Exponential(1) variable, the bounds become
``a = (l/λ)^k`` and ``b = (u/λ)^k``: masses ``1 − e^{−a}`` at l and ``e^{−b}``
at u, the Weibull density between. The scores are ``∂_k log p = (1 + (1 − u) log u)/k``
and ``∂_λ log p = (k/λ)(u − 1)`` between the bounds, and the masses' scores are
those of a and b (``∂_k a = a log a/k``, ``∂_λ a = −k a/λ``). Every expectation
between the bounds is then a sum of the partial log-moments
``F_jn(a, b) = ∫_a^b u^n (log u)^j e^{−u} du`` (j, n ≤ 2), and of
``∫_a^b u^r e^{−u} du`` (an incomplete gamma function) for the KL's cross term.
"""

import numpy as np
from scipy import special

from pm_sens.families._base import (
    Family,
    point_mass_entropy,
    point_mass_kl,
    point_mass_renyi_terms,
    stack_matrix,
)
from pm_sens.families._renyi import log_rule_term

#: below it the partial log-moments are power series in z, above it the whole
#: integral less its tail (a Gauss–Laguerre rule in ``u − z``)
_SERIES_UP_TO = 3.0
#: terms of the series: z^m/m! < 1e-20 at m = 40 for z <= 3
_SERIES_TERMS = 40
_TAIL_NODES, _TAIL_WEIGHTS = np.polynomial.laguerre.laggauss(40)
#: the Rényi divergence's rule between the bounds: tanh-sinh in each law's
#: probability v between them, ``v = expit(π sinh t)`` on a grid of t (its nodes
#: crowd both ends, where densities of different shapes meet as powers of u,
#: and reach far into an unbounded tail)
_T = np.linspace(-3.5, 3.5, 113)
_S = np.pi * np.sinh(_T)
#: 1 − v, and the log weights ``log(Δt dv/dt)``
_V_COMPLEMENT = special.expit(-_S)
_V_LOG_WEIGHTS = (
    np.log((_T[1] - _T[0]) * np.pi * np.cosh(_T)) + special.log_expit(_S) + special.log_expit(-_S)
)


def _whole_log_moments():
    """``∫_0^∞ u^n (log u)^j e^{−u} du = Γ^{(j)}(n + 1)``, (3, 3) indexed [j, n]."""
    n = np.arange(3.0)
    gamma, psi, trigamma = (
        special.gamma(n + 1),
        special.digamma(n + 1),
        special.polygamma(1, n + 1),
    )
    return np.stack([gamma, gamma * psi, gamma * (psi**2 + trigamma)])


_WHOLE = _whole_log_moments()


def _series(z):
    """``F_jn(0, z)`` by the power series of e^{−u}, (..., 3, 3); accurate for small z.

    ``∫_0^z u^p (log u)^j du = z^{p+1} Σ_i (−1)^i j!/(j − i)! (log z)^{j−i}/(p + 1)^{i+1}``.
    """
    log_z = np.log(z)[..., None, None]
    j = np.arange(3.0)[:, None]
    total = np.zeros(z.shape + (3, 3))
    factor = 1.0  # (−1)^m/m!
    for m in range(_SERIES_TERMS):
        p1 = np.arange(3.0) + m + 1  # p + 1 for n = 0, 1, 2
        logs = [np.ones_like(log_z), log_z / p1 - 1 / p1**2]
        logs.append(log_z**2 / p1 - 2 * log_z / p1**2 + 2 / p1**3)
        power = factor * z[..., None, None] ** p1 / np.where(j == 0, p1, 1.0)
        total = total + power * np.concatenate(np.broadcast_arrays(*logs), -2)
        factor = -factor / (m + 1)
    return total


def _tail(z):
    """``F_jn(z, ∞) = e^{−z} ∫_0^∞ (z + t)^n (log(z + t))^j e^{−t} dt`` (Gauss–Laguerre)."""
    u = z[..., None] + _TAIL_NODES
    log_u = np.log(u)
    powers = np.stack([np.ones_like(u), u, u**2], -2)  # (..., n, node)
    logs = np.stack([np.ones_like(u), log_u, log_u**2], -2)  # (..., j, node)
    summed = np.einsum("...jq,...nq,q->...jn", logs, powers, _TAIL_WEIGHTS)
    return np.exp(-z)[..., None, None] * summed


def log_moments(z):
    """``F_jn(0, z) = ∫_0^z u^n (log u)^j e^{−u} du`` for j, n ≤ 2, (..., 3, 3) [j, n].

    0 at z = 0, ``Γ^{(j)}(n + 1)`` at z = ∞; each value by the power series
    or by the tail, whichever suits its z.
    """
    z = np.asarray(z, dtype=float)
    out = np.zeros(z.shape + (3, 3))
    small = (z > 0) & (z <= _SERIES_UP_TO)
    large = z > _SERIES_UP_TO
    out[small] = _series(z[small])
    out[large] = _WHOLE
    finite = large & np.isfinite(z)
    out[finite] -= _tail(z[finite])
    return out


#: Ein's series ``Σ_{m>=1} (−1)^{m+1} z^m/(m m!)`` to m = 24 (2^24/(24 · 24!) < 1e-18)
_EIN_ORDERS = np.arange(1, 25)
_EIN_COEFFICIENTS = -((-1.0) ** _EIN_ORDERS) / (_EIN_ORDERS * special.factorial(_EIN_ORDERS))


def ein_series(z):
    """``Ein(z) = ∫_0^z (1 − e^{−t})/t dt`` by its series (Horner's rule), for 0 <= z <= 2.

    Arithmetic alone: the same for NumPy arrays and graph variables.
    """
    total = 0.0 * z
    for coefficient in _EIN_COEFFICIENTS[::-1]:
        total = (total + coefficient) * z
    return total


def _exponential_integral_part(z):
    """``Ein(z) = ∫_0^z (1 − e^{−t})/t dt``: its series up to 2, ``E1(z) + γ + log z`` beyond.

    ``E1(z) = e^{−z} ∫_0^∞ e^{−t}/(z + t) dt`` by the tail's Gauss–Laguerre rule
    (within 1e-13 of SciPy's ``exp1`` for z > 2, whose per-value evaluation costs
    more than the rule's 40 nodes).
    """
    out = np.empty_like(z)
    small = z <= 2
    out[small] = ein_series(z[small])
    outer = z[~small]
    exp1 = np.exp(-outer) * ((1 / (outer[:, None] + _TAIL_NODES)) @ _TAIL_WEIGHTS)
    out[~small] = exp1 + np.euler_gamma + np.log(outer)
    return out


def _first_moments(z):
    """``F_00, F_10, F_01`` at ``(0, z)`` from elementary functions (entropy and KL).

    ``F_00 = 1 − e^{−z}``, ``F_01 = P(2, z) = 1 − e^{−z} − z e^{−z}``, and
    ``F_10 = ∫_0^z log u e^{−u} du = (1 − e^{−z}) log z − Ein(z)``, which stays
    accurate as z → 0. Computed where ``0 < z < ∞`` alone (a right-censored
    law's missing lower bound is 0 at every cell, an uncensored row's upper ∞).
    """
    z = np.asarray(z, dtype=float)
    beyond = np.isposinf(z)
    at_zero = np.where(np.isnan(z), np.nan, 0.0)  # nan where z is: an undefined law stays so
    mass, second = np.where(beyond, 1.0, at_zero), np.where(beyond, 1.0, at_zero)
    log_part = np.where(beyond, -np.euler_gamma, at_zero)
    usable = (z > 0) & ~beyond
    if usable.any():
        inner = z[usable]
        inner_mass = -np.expm1(-inner)
        mass[usable] = inner_mass
        log_part[usable] = inner_mass * np.log(inner) - _exponential_integral_part(inner)
        second[usable] = inner_mass - inner * np.exp(-inner)
    return mass, log_part, second


def _bounds(phi, lower, upper):
    """k, λ and the bounds in u: ``a = (l/λ)^k`` (0 without a lower bound), ``b = (u/λ)^k``."""
    k, scale = phi[..., 0], phi[..., 1]
    lower = np.maximum(np.asarray(lower, dtype=float), 0.0)
    upper = np.asarray(upper, dtype=float)
    with np.errstate(divide="ignore", over="ignore"):
        b = (upper / scale) ** k
        if not np.any(lower):  # right-censored alone: no power to take
            return k, scale, np.zeros(np.broadcast_shapes(lower.shape, b.shape)), b
        return k, scale, (lower / scale) ** k, b


def _between(a, b):
    """``F_jn(a, b)``, (..., 3, 3)."""
    a, b = np.broadcast_arrays(a, b)
    return log_moments(b) - log_moments(a)


def _first_between(a, b):
    """``F_00(a, b), F_10(a, b), F_01(a, b)``.

    At ``a = 0`` (no lower bound) they are ``F(0, b)`` itself: not subtracted.
    """
    a, b = np.broadcast_arrays(a, b)
    if not np.any(a):
        return list(_first_moments(b))
    return [high - low for high, low in zip(_first_moments(b), _first_moments(a), strict=True)]


def _log_masses(a, b):
    """Log of the masses ``1 − e^{−a}`` at l and ``e^{−b}`` at u (−inf where none)."""
    with np.errstate(divide="ignore"):
        return np.log(-np.expm1(-a)), -b


def _mass_scores(k, scale, z):
    """``(∂_k z, ∂_λ z)`` for ``z = (bound/λ)^k``, (..., 2); 0 where z is 0 or ∞."""
    usable = np.isfinite(z) & (z > 0)
    safe = np.where(usable, z, 1.0)
    d_k = np.where(usable, safe * np.log(safe) / k, 0.0)
    d_scale = np.where(usable, -k * safe / scale, 0.0)
    return np.stack([d_k, d_scale], -1)


def fisher_information(phi, lower, upper):
    """Fisher information of (k, λ), (..., 2, 2): the interior's and the masses'."""
    k, scale, a, b = _bounds(phi, lower, upper)
    f = _between(a, b)
    g, j, kk = f[..., 0, :], f[..., 1, :], f[..., 2, :]
    shape = g[..., 0] + 2 * (j[..., 0] - j[..., 1]) + kk[..., 0] - 2 * kk[..., 1] + kk[..., 2]
    cross = g[..., 1] - g[..., 0] - j[..., 0] + 2 * j[..., 1] - j[..., 2]
    spread = g[..., 2] - 2 * g[..., 1] + g[..., 0]
    info = stack_matrix(
        [[shape / k**2, cross / scale], [cross / scale, (k / scale) ** 2 * spread]]
    )
    # a mass P with score c ∂z adds P c² ∂z ∂zᵀ: c = e^{−a}/(1 − e^{−a}) at l, −1 at u
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        low = np.where(a > 0, np.exp(-2 * a) / -np.expm1(-a), 0.0)
    high = np.where(np.isfinite(b), np.exp(-b), 0.0)
    for weight, z in ((low, a), (high, b)):
        d = _mass_scores(k, scale, z)
        info = info + weight[..., None, None] * d[..., :, None] * d[..., None, :]
    return info


def _weibull_log_density(phi, y):
    k, scale = phi[..., 0], phi[..., 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        return special.xlogy(k - 1, y / scale) + np.log(k / scale) - (y / scale) ** k


def log_density(phi, y, lower, upper):
    """Log mass at a bound, log density between (`graph_log_density` in NumPy)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return graph_log_density(
            np, np.asarray(y, dtype=float), phi[..., 0], phi[..., 1], lower, upper
        )


def graph_bounds(xp, k, scale, lower, upper):
    """``a = (l/λ)^k`` (0 where l <= 0) and ``b = (u/λ)^k`` (∞ where u is), in ``xp``.

    Each power is taken of a stand-in where its bound is missing, so that its
    derivative in k is not nan there (``0^k`` has none at k < 1).
    """
    has_lower, has_upper = xp.greater(lower, 0.0), ~xp.isinf(upper)
    a = xp.where(has_lower, (xp.where(has_lower, lower, scale) / scale) ** k, 0.0)
    b = xp.where(has_upper, (xp.where(has_upper, upper, scale) / scale) ** k, np.inf)
    return a, b


def graph_log_density(xp, y, k, scale, lower, upper):
    """`log_density` written for any array namespace ``xp``.

    ``log(1 − e^{−a})`` at y <= l, ``−b`` at y >= u, the Weibull's log density
    between: −inf below 0, and at 0 the limit of ``(k − 1) log y`` (0 for k = 1).
    """
    a, b = graph_bounds(xp, k, scale, lower, upper)
    has_lower = xp.greater(lower, 0.0)
    low_mass = xp.where(has_lower, xp.log(-xp.expm1(-xp.where(has_lower, a, 1.0))), -np.inf)
    positive = xp.greater(y, 0.0)
    u = xp.where(positive, y, scale) / scale
    at_zero = xp.where(xp.equal(k, 1.0), 0.0, xp.where(k > 1, -np.inf, np.inf))
    log_power = xp.where(positive, (k - 1) * xp.log(u), xp.where(y < 0, -np.inf, at_zero))
    interior = log_power + xp.log(k / scale) - u**k
    return xp.where(y <= lower, low_mass, xp.where(y >= upper, -b, interior))


def entropy(phi, lower, upper):
    """``−E[log p]``: the masses' ``−P log P`` and the interior's terms.

    Between the bounds ``−log p = −log(k/λ) − (1 − 1/k) log u + u``.
    """
    k, scale, a, b = _bounds(phi, lower, upper)
    mass, log_u, first = _first_between(a, b)
    total = -np.log(k / scale) * mass - (1 - 1 / k) * log_u + first
    masses = _log_masses(a, b)  # no lower bound (a = 0): no mass there
    return total + point_mass_entropy(masses if np.any(a) else masses[1:])


def _gamma_between(r, a, b):
    """``∫_a^b u^r e^{−u} du`` for r > −1."""
    whole = special.gamma(1 + r)
    return whole * (special.gammainc(1 + r, b) - special.gammainc(1 + r, a))


def kl_divergence(phi_p, phi_q, lower, upper):
    """KL(p ‖ q) for the same bounds: the masses' terms and the interior's.

    Between the bounds, in p's ``u``: ``log p/q = log(k_p λ_q/(k_q λ_p)) +
    (1 − k_q/k_p) log u − (k_q − 1) log(λ_p/λ_q) − u + (λ_p/λ_q)^{k_q} u^{k_q/k_p}``.
    """
    k_p, scale_p, a_p, b_p = _bounds(phi_p, lower, upper)
    k_q, scale_q, a_q, b_q = _bounds(phi_q, lower, upper)
    mass, log_u, first = _first_between(a_p, b_p)
    log_ratio = np.log(scale_p / scale_q)
    interior = (
        (np.log(k_p / k_q) - log_ratio - (k_q - 1) * log_ratio) * mass
        + (1 - k_q / k_p) * log_u
        - first
        + np.exp(k_q * log_ratio) * _gamma_between(k_q / k_p, a_p, b_p)
    )
    return interior + point_mass_kl(_log_masses(a_p, b_p), _log_masses(a_q, b_q))


def renyi_divergence(phi_p, phi_q, alpha, lower, upper):
    """Rényi divergence (0 < α < 1) for the same bounds.

    The masses' terms and the interior's ``∫ p^α q^(1−α)``, by each law's rule
    between the bounds (as `pm_sens.families._renyi.renyi_by_rules`) weighted
    by its mass there.
    """
    phi_p, phi_q = np.broadcast_arrays(phi_p, phi_q)
    terms, log_masses = [], []
    for own in (phi_p, phi_q):
        k, scale, a, b = _bounds(own, lower, upper)
        log_masses.append(_log_masses(a, b))
        # the interior's mass e^{−a}(1 − e^{−(b − a)}); its nodes at
        # u = a − log(e^{−(b − a)} + (1 − e^{−(b − a)})(1 − v))
        spread = -np.expm1(-(b - a))
        nodes = (-1, *(1,) * a.ndim)
        u = a - np.log(np.exp(-(b - a)) + spread * _V_COMPLEMENT.reshape(nodes))
        y = scale * u ** (1 / k)
        # the densities, also at nodes that round onto a bound
        log_p, log_q = _weibull_log_density(phi_p, y), _weibull_log_density(phi_q, y)
        log_weight = _V_LOG_WEIGHTS.reshape(nodes) + np.zeros_like(y)
        inside = -a + np.log(spread)
        terms.append(inside + log_rule_term(log_weight, log_p, log_q, alpha))
    terms.extend(point_mass_renyi_terms(*log_masses, alpha))
    return special.logsumexp(np.stack(np.broadcast_arrays(*terms)), axis=0) / (alpha - 1)


FAMILY = Family(
    "censored_weibull",
    "real",
    ("alpha", "beta"),
    fisher_information,
    kl_divergence,
    log_density,
    entropy=entropy,
    graph_log_density=graph_log_density,
    renyi_divergence=renyi_divergence,
    renyi_above_one=False,
)

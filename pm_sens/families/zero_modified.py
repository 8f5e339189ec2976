"""Zero-inflated and hurdle families on a base family f(·|θ).

Counts:

- zero-inflated: ``p(0) = 1 − ψ + ψ f₀``, ``p(k) = ψ f(k)`` for k ≥ 1;
- hurdle: ``p(0) = 1 − ψ``, ``p(k) = ψ f(k)/(1 − f₀)`` for k ≥ 1;

with ``f₀ = f(0|θ)``. Parameters ``(ψ, θ)``, θ in the base family's own
parametrization. With the base's Fisher information ``I_f``, its zero score
``s₀ = ∂ log f₀/∂θ`` and the identities ``Σ_{k≥1} f(k) s(k) = −f₀ s₀`` and
``Σ_{k≥1} f(k) s(k) s(k)ᵀ = I_f − f₀ s₀ s₀ᵀ``, the Fisher information is, for
the zero-inflated family,

``I_ψψ = (1−f₀)²/p₀ + (1−f₀)/ψ``, ``I_ψθ = −f₀ s₀ (1 + ψ(1−f₀)/p₀)``,
``I_θθ = ψ (I_f − f₀ s₀ s₀ᵀ) + ψ² f₀² s₀ s₀ᵀ / p₀``;

for the hurdle family (ψ and θ separate),

``I_ψψ = 1/(ψ(1−ψ))``, ``I_ψθ = 0``, ``I_θθ = ψ/(1−f₀) (I_f − f₀ s₀ s₀ᵀ/(1−f₀))``.

A hurdle on a continuous base law (PyMC's ``HurdleLogNormal``, ``HurdleGamma``;
`continuous_hurdle`): ``y = 0`` with mass ``1 − ψ``, else ``y ~ f`` with weight
ψ (f puts no mass at 0). Densities are with respect to a unit mass at 0 plus
Lebesgue measure on y > 0, so every quantity splits into the Bernoulli
"y > 0" and ψ times the base law's: ``I = diag(1/(ψ(1−ψ)), ψ I_f)``,
``KL = KL_B(ψ₁ ‖ ψ₂) + ψ₁ KL_f``, ``H = H_B(ψ) + ψ H_f``, and the Rényi
divergence from ``∫ p^α q^(1−α) = (1−ψ₁)^α (1−ψ₂)^(1−α) + ψ₁^α ψ₂^(1−α)
e^{(α−1) D_α(f₁ ‖ f₂)}``.
"""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special

from pm_sens.families import bernoulli, negative_binomial, poisson
from pm_sens.families._base import NUMPY, Family, kl_terms, outer
from pm_sens.families._renyi import renyi_by_summation, sum_over_counts


@dataclass(frozen=True)
class CountBase:
    """A base count family with its zero mass and zero score."""

    family: Family
    #: ``zero_log_mass(xp, *θ's columns)``: log f(0|θ), in the namespace ``xp``
    zero_log_mass: Callable
    #: ∂ log f(0|θ)/∂θ, (..., K)
    zero_score: Callable


def _nb_zero_score(theta):
    m, a = theta[..., 0], theta[..., 1]
    return np.stack([-a / (m + a), m / (m + a) - np.log1p(m / a)], -1)


POISSON = CountBase(poisson.FAMILY, lambda xp, m: -m, lambda theta: -np.ones_like(theta[..., :1]))
NEGATIVE_BINOMIAL = CountBase(
    negative_binomial.FAMILY_MEAN_ALPHA,
    lambda xp, m, a: -a * xp.log1p(m / a),
    _nb_zero_score,
)


def _columns(theta):
    return tuple(np.moveaxis(theta, -1, 0))


def _pieces(base, phi):
    psi, theta = phi[..., 0], phi[..., 1:]
    log_f0 = base.zero_log_mass(np, *_columns(theta))
    return psi, theta, np.exp(log_f0), -np.expm1(log_f0), base.zero_score(theta)


def _assemble(i_psi, i_cross, i_theta):
    k = i_theta.shape[-1]
    info = np.empty((*i_theta.shape[:-2], k + 1, k + 1))
    info[..., 0, 0] = i_psi
    info[..., 0, 1:] = info[..., 1:, 0] = i_cross
    info[..., 1:, 1:] = i_theta
    return info


def _zero_inflated_fisher(base):
    def fisher_information(phi):
        psi, theta, f0, q0, s0 = _pieces(base, phi)
        p0 = 1 - psi * q0
        info_f = base.family.fisher_information(theta)
        grow = (psi**2 * f0**2 / p0)[..., None, None]
        return _assemble(
            q0**2 / p0 + q0 / psi,
            -(f0 * (1 + psi * q0 / p0))[..., None] * s0,
            psi[..., None, None] * (info_f - f0[..., None, None] * outer(s0)) + grow * outer(s0),
        )

    return fisher_information


def _hurdle_fisher(base):
    def fisher_information(phi):
        psi, theta, f0, q0, s0 = _pieces(base, phi)
        info_f = base.family.fisher_information(theta)
        conditional = info_f - (f0 / q0)[..., None, None] * outer(s0)
        # ψ = 1, a zero-truncated law: I_ψψ is infinite, ψ a constant of no derivative
        with np.errstate(divide="ignore"):
            i_psi = 1 / (psi * (1 - psi))
        return _assemble(
            i_psi,
            np.zeros_like(s0),
            (psi / q0)[..., None, None] * conditional,
        )

    return fisher_information


def _graph_log_density(base, hurdle):
    def graph_log_density(xp, y, psi, *columns):
        """Log pmf at the count y (−inf off the counts) in ``xp``, from the base's."""
        zero = xp.equal(y, 0)
        q0 = -xp.expm1(base.zero_log_mass(xp, *columns))
        positive = xp.log(psi) + base.family.graph_log_density(
            xp, xp.where(zero, 1.0, y), *columns
        )
        if hurdle:
            return xp.where(zero, xp.log1p(-psi), positive - xp.log(q0))
        return xp.where(zero, xp.log1p(-psi * q0), positive)

    return graph_log_density


def _log_density(graph_log_density):
    def log_density(phi, y):
        """Log pmf at the count y (the family's ``graph_log_density`` in NumPy)."""
        y = np.asarray(y, dtype=float)
        with np.errstate(divide="ignore"):  # ψ = 0 or 1: a zero mass
            return graph_log_density(NUMPY, y, phi[..., 0], *_columns(phi[..., 1:]))

    return log_density


def _support_upper(base, hurdle):
    def support_upper(phi, tail):
        # the mass above K is ψ times the base's (over 1 − f₀ for a hurdle)
        _, theta, _, q0, _ = _pieces(base, phi)
        return base.family.support_upper(theta, tail * (q0 if hurdle else 1.0))

    return support_upper


def _support_window(base, hurdle):
    def support_window(low, high, tail):
        # from 0 (the zero's own mass) to the base's upper end over θ's range, with
        # the tail as in support_upper at the smallest 1 − f₀ (at θ's low end: f₀
        # falls as the mean or the NB's α grows)
        _, _, _, q0, _ = _pieces(base, low)
        _, upper = base.family.support_window(
            low[..., 1:], high[..., 1:], tail * (q0 if hurdle else 1.0)
        )
        return np.zeros_like(upper), upper

    return support_window


def _kl_divergence(log_density, support_upper):
    def kl_divergence(phi_p, phi_q):
        """KL summed over the support of p, as ``E_p[g(q/p − 1)]`` (every term ≥ 0)."""
        return sum_over_counts(
            log_density,
            phi_p,
            phi_q,
            lambda flat_p, _: support_upper(flat_p, 1e-15).max(),
            kl_terms,
        )

    return kl_divergence


def _pmf_recursion(base, hurdle):
    def pmf_recursion(phi):
        # ψ times the base on y >= 1 (over 1 − f₀ for a hurdle); the rest at 0
        psi, theta, _, q0, _ = _pieces(base, phi)
        a, b, log_base, _, _ = base.family.pmf_recursion(theta)
        if hurdle:
            return a, b, log_base, 1 - psi, psi / q0
        return a, b, log_base, 1 - psi * q0, psi

    return pmf_recursion


def zero_modified(base, name, *, hurdle):
    """The zero-inflated (``hurdle=False``) or hurdle family on ``base``."""
    graph_log_density = _graph_log_density(base, hurdle)
    log_density = _log_density(graph_log_density)
    support_upper = _support_upper(base, hurdle)
    return Family(
        name,
        "count",
        ("psi", *base.family.parameters),
        _hurdle_fisher(base) if hurdle else _zero_inflated_fisher(base),
        _kl_divergence(log_density, support_upper),
        log_density,
        support_upper=support_upper,
        support_window=_support_window(base, hurdle),
        pmf_recursion=_pmf_recursion(base, hurdle),
        graph_log_density=graph_log_density,
        renyi_divergence=renyi_by_summation(log_density, support_upper),
        renyi_above_one=False,
    )


def continuous_hurdle(base, name):
    """The hurdle family on a continuous ``base`` family: parameters ``(ψ, *base's)``."""

    def split(phi):
        return phi[..., 0], phi[..., 1:]

    def fisher_information(phi):
        psi, theta = split(phi)
        with np.errstate(divide="ignore"):  # ψ = 1, a constant: of no derivative
            i_psi = 1 / (psi * (1 - psi))
        i_theta = psi[..., None, None] * base.fisher_information(theta)
        return _assemble(i_psi, np.zeros(i_theta.shape[:-1]), i_theta)

    def kl_divergence(phi_p, phi_q):
        (psi_p, theta_p), (psi_q, theta_q) = split(phi_p), split(phi_q)
        positive = bernoulli.kl_divergence(psi_p[..., None], psi_q[..., None])
        return positive + psi_p * base.kl_divergence(theta_p, theta_q)

    def renyi_divergence(phi_p, phi_q, alpha):
        (psi_p, theta_p), (psi_q, theta_q) = split(phi_p), split(phi_q)
        with np.errstate(divide="ignore", invalid="ignore"):
            zero = alpha * np.log1p(-psi_p) + (1 - alpha) * np.log1p(-psi_q)
            positive = alpha * np.log(psi_p) + (1 - alpha) * np.log(psi_q)
            positive = positive + (alpha - 1) * base.renyi_divergence(theta_p, theta_q, alpha)
        return np.logaddexp(zero, positive) / (alpha - 1)

    def log_density(phi, y):
        psi, theta = split(phi)
        y = np.asarray(y)
        with np.errstate(divide="ignore", invalid="ignore"):
            positive = np.log(psi) + base.log_density(theta, np.where(y > 0, y, 1.0))
            return np.where(y == 0, np.log1p(-psi), np.where(y > 0, positive, -np.inf))

    def graph_log_density(xp, y, psi, *columns):
        """`log_density` in ``xp`` from the base's: ``log(1 − ψ)`` at 0, −inf below."""
        positive = xp.greater(y, 0.0)
        at = xp.where(positive, y, 1.0)
        inside = xp.log(psi) + base.graph_log_density(xp, at, *columns)
        return xp.where(xp.equal(y, 0.0), xp.log1p(-psi), xp.where(positive, inside, -np.inf))

    def entropy(phi):
        psi, theta = split(phi)
        return special.entr(psi) + special.entr(1 - psi) + psi * base.entropy(theta)

    return Family(
        name,
        "real",
        ("psi", *base.parameters),
        fisher_information,
        kl_divergence,
        log_density,
        entropy,
        graph_log_density=None if base.graph_log_density is None else graph_log_density,
        renyi_divergence=renyi_divergence,
        renyi_above_one=base.renyi_above_one,
    )

"""Closed-form likelihoods built on a base law: zero-modified and censored laws.

Each recognizer takes an observed variable and returns its `Likelihood` and
parameters, or None when the variable is not of its form (then PyMC's logp
serves it, `pm_sens.graph.likelihoods.generic.likelihood`).
"""

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.censored import CensoredRV
from pymc.distributions.continuous import WeibullBetaRV
from pymc.distributions.distribution import DiracDeltaRV
from pymc.distributions.mixture import MixtureRV, _HurdleRV
from pymc.distributions.truncated import TruncatedRV
from pytensor.graph.basic import Constant
from pytensor.tensor.random import basic as rv
from pytensor.tensor.special import xlogy

from pm_sens import families
from pm_sens.families import censored_normal, censored_weibull
from pm_sens.graph.compile.special import scaled_exp1
from pm_sens.graph.likelihoods.closed_forms import LIKELIHOODS, Likelihood, is_constant
from pm_sens.graph.model.queries import censored_parts

#: zero-modified families with closed forms: (hurdle?, base op) -> family
_ZERO_MODIFIED = {
    (False, rv.PoissonRV): families.ZERO_INFLATED_POISSON,
    (False, rv.NegBinomialRV): families.ZERO_INFLATED_NEGATIVE_BINOMIAL,
    (True, rv.PoissonRV): families.HURDLE_POISSON,
    (True, rv.NegBinomialRV): families.HURDLE_NEGATIVE_BINOMIAL,
}

#: hurdles on a continuous base law with closed forms: base op -> family
_CONTINUOUS_HURDLES = {
    rv.LogNormalRV: families.HURDLE_LOGNORMAL,
    rv.GammaRV: families.HURDLE_GAMMA,
}


def _zero_log_mass(base, params):
    """Log f(0) of the base count law, symbolically (Poisson: −μ; NB(n, p): n log p)."""
    if base is rv.PoissonRV:
        return -params[0]
    n, p = params
    return n * pt.log(p)


def _zero_modified_moments(base, hurdle):
    base_likelihood = LIKELIHOODS[base]

    def moments(psi, *params):
        mean, variance = base_likelihood.moments(*params)
        if not hurdle:  # mixture of 0 and the base law
            return psi * mean, psi * variance + psi * (1 - psi) * mean**2
        positive = -pt.expm1(_zero_log_mass(base, params))
        new_mean = psi * mean / positive
        return new_mean, psi * (variance + mean**2) / positive - new_mean**2

    return moments


def zero_modified_likelihood(observed):
    """The closed-form zero-inflated or hurdle law, if it is one.

    Recognizes PyMC's ``ZeroInflatedPoisson``, ``ZeroInflatedNegativeBinomial``,
    ``HurdlePoisson`` and ``HurdleNegativeBinomial`` (a mixture of a point mass
    at 0 and the count law, truncated below at 1 for a hurdle),
    ``HurdleLogNormal`` and ``HurdleGamma`` (a point mass at 0 and the
    continuous law), and the zero-truncated count law
    (`zero_truncated_likelihood`). Returns the `Likelihood` and its parameters
    ``[ψ, *PyMC's base parameters]``, or None.
    """
    op = observed.owner.op
    if isinstance(op, TruncatedRV):
        return zero_truncated_likelihood(observed)
    if not isinstance(op, MixtureRV | _HurdleRV):
        return None
    weights, *components = op.dist_params(observed.owner)
    if len(components) != 2 or not isinstance(components[0].owner.op, DiracDeltaRV):
        return None
    hurdle = isinstance(op, _HurdleRV)
    node = components[1].owner
    if hurdle and type(node.op) in _CONTINUOUS_HURDLES:
        base = type(node.op)
        return _continuous_hurdle(base), [weights[..., 1], *node.op.dist_params(node)]
    if hurdle:
        if not isinstance(node.op, TruncatedRV):
            return None
        base, params = type(node.op.base_rv_op), node.inputs[2:-2]
    else:
        base, params = type(node.op), node.op.dist_params(node)
    family = _ZERO_MODIFIED.get((hurdle, base))
    if family is None:
        return None
    return _zero_modified(family.name, base, hurdle), [weights[..., 1], *params]


def zero_truncated_likelihood(observed):
    """``pm.Truncated`` of a Poisson or negative binomial at ``lower=1``, if it is one.

    The zero-truncated count law is the hurdle law with ``ψ = 1`` (no zeros):
    its Fisher information in the base parameters is finite there, and ψ, a
    constant, enters no derivative. Returns the `Likelihood` and its parameters
    ``[1, *PyMC's base parameters]``, or None.
    """
    node = observed.owner
    *params, lower, upper = node.inputs[2:]
    base = type(node.op.base_rv_op)
    family = _ZERO_MODIFIED.get((True, base))
    if family is None or not all(isinstance(b, Constant) for b in (lower, upper)):
        return None
    if not (np.all(lower.data == 1) and np.all(np.isposinf(upper.data))):
        return None
    name = family.name.replace("hurdle", "zero_truncated")
    return _zero_modified(name, base, hurdle=True), [pt.constant(1.0), *params]


def _zero_modified(name, base, hurdle):
    """The `Likelihood` of a zero-modified law on the count law ``base``, parameters (ψ, θ)."""
    base_likelihood = LIKELIHOODS[base]
    return Likelihood(
        name,
        "count",
        ("psi", *base_likelihood.parameter_names),
        _ZERO_MODIFIED[(hurdle, base)],
        lambda psi, *p: [psi, *base_likelihood.draw_parameters(*p)],
        _zero_modified_moments(base, hurdle),
    )


def _continuous_hurdle(base):
    """The `Likelihood` of a hurdle on the continuous law ``base``, parameters (ψ, θ).

    Its entropy in the graph where the base law has one: ``H_B(ψ) + ψ H_f``
    (`pm_sens.families.zero_modified`).
    """
    base_likelihood = LIKELIHOODS[base]

    def moments(psi, *params):
        mean, variance = base_likelihood.moments(*params)
        new_mean = psi * mean
        return new_mean, psi * (variance + mean**2) - new_mean**2

    def entropy(psi, *params):
        positive = -xlogy(psi, psi) - xlogy(1 - psi, 1 - psi)
        return positive + psi * base_likelihood.entropy(*params)

    return Likelihood(
        f"hurdle_{base_likelihood.name}",
        "real",
        ("psi", *base_likelihood.parameter_names),
        _CONTINUOUS_HURDLES[base],
        lambda psi, *p: [psi, *base_likelihood.draw_parameters(*p)],
        moments,
        entropy=None if base_likelihood.entropy is None else entropy,
    )


def _censored_normal_moments(mu, sigma, lower, upper):
    """Mean and variance of Normal(μ, σ) censored at constant bounds (l, u)."""
    parts = []
    for bound in (lower, upper):
        # an infinite bound holds no mass; computing with a finite stand-in keeps
        # the derivatives finite (0 · inf would give nan)
        infinite = pt.isinf(bound)
        safe = pt.switch(infinite, 0.0, bound)
        z = (safe - mu) / sigma
        density = pt.exp(-(z**2) / 2) / np.sqrt(2 * np.pi)
        cdf = pt.switch(infinite, pt.gt(bound, 0) * 1.0, 0.5 * pt.erfc(-z / np.sqrt(2)))
        parts.append((safe, z, pt.switch(infinite, 0.0, density), cdf))
    (low, a, density_a, cdf_a), (high, b, density_b, cdf_b) = parts
    m0 = cdf_b - cdf_a
    m1 = density_a - density_b
    m2 = m0 + a * density_a - b * density_b
    mean = low * cdf_a + high * (1 - cdf_b) + mu * m0 + sigma * m1
    square = (
        low**2 * cdf_a + high**2 * (1 - cdf_b) + mu**2 * m0 + 2 * mu * sigma * m1 + sigma**2 * m2
    )
    return mean, square - mean**2


def _censored_normal_entropy(mu, sigma, lower, upper):
    """``Z (log σ + log √(2π)) + M_2/2 − Σ P log P`` over the masses P at the bounds.

    ``Z = Φ(b) − Φ(a)`` and ``M_2 = Z + a φ(a) − b φ(b)``, the standard normal's
    partial moments over the standardized bounds (`families.censored_normal`);
    an infinite bound at its stand-in, where its mass and density are 0.
    """
    a, b = censored_normal.graph_bounds(pt, mu, sigma, lower, upper)
    mass = pt.exp(censored_normal.graph_log_mass(pt, a, b))
    density_a, density_b = (pt.exp(censored_normal.log_pdf(z)) for z in (a, b))
    second = mass + a * density_a - b * density_b
    log_masses = [censored_normal.graph_log_ndtr(pt, z) for z in (a, -b)]
    total = mass * (pt.log(sigma) + censored_normal.LOG_ROOT_2PI) + second / 2
    return total - sum(pt.exp(log_mass) * log_mass for log_mass in log_masses)


def _exponential_integral_part(z):
    """``Ein(z) = ∫_0^z (1 − e^{−t})/t dt`` for z > 0.

    Its series up to 2, ``E₁(z) + γ + log z`` beyond, as `families.censored_weibull`'s,
    with E₁ from ``e^z E₁(z)`` (`pm_sens.graph.compile.special`); each branch from a
    stand-in where it is not taken.
    """
    small = z <= 2
    near, far = pt.where(small, z, 1.0), pt.where(small, 3.0, z)
    beyond = pt.exp(-far) * scaled_exp1(far) + np.euler_gamma + pt.log(far)
    return pt.where(small, censored_weibull.ein_series(near), beyond)


def _first_moments(z):
    """``∫_0^z u^n (log u)^j e^{−u} du`` for (j, n) = (0, 0), (1, 0), (0, 1).

    ``1 − e^{−z}``, ``(1 − e^{−z}) log z − Ein(z)`` and ``1 − e^{−z} − z e^{−z}``
    (`families.censored_weibull._first_moments`): 0 at z = 0 (nan where z is),
    ``1, −γ, 1`` at z = ∞.
    """
    usable = (z > 0) & ~pt.isinf(z)
    inner = pt.where(usable, z, 1.0)
    mass = -pt.expm1(-inner)
    parts = (
        mass,
        mass * pt.log(inner) - _exponential_integral_part(inner),
        mass - inner * pt.exp(-inner),
    )
    return [
        pt.where(pt.isinf(z), at_infinity, pt.where(usable, part, 0.0 * z))
        for part, at_infinity in zip(parts, (1.0, -np.euler_gamma, 1.0), strict=True)
    ]


def _censored_weibull_entropy(alpha, beta, lower, upper):
    """The censored Weibull's entropy ``−E[log p]`` (`families.censored_weibull.entropy`).

    Between the bounds ``−log(k/λ) F_00 − (1 − 1/k) F_10 + F_01`` (in u = (y/λ)^k,
    the partial moments from a to b), and ``−P log P`` at each mass: ``1 − e^{−a}``
    at l, ``e^{−b}`` at u.

    A lower bound that is a constant <= 0 everywhere (a right-censored law) adds
    neither moments nor a mass.
    """
    a, b = censored_weibull.graph_bounds(pt, alpha, beta, lower, upper)
    finite_b = pt.where(pt.isinf(b), 0.0, b)
    masses = finite_b * pt.exp(-finite_b)  # −P log P at u
    moments = _first_moments(b)
    lower_value = _constant_value(lower)
    if lower_value is None or np.any(lower_value > 0):
        moments = [high - low for high, low in zip(moments, _first_moments(a), strict=True)]
        low = -pt.expm1(-a)
        masses = masses - xlogy(low, low)
    mass, log_u, first = moments
    return -pt.log(alpha / beta) * mass - (1 - 1 / alpha) * log_u + first + masses


def _constant_value(var):
    """The value of ``var`` if it is computed from constants alone, else None.

    A constant's own data where it is one (``eval`` compiles a function, a C
    compile on an empty cache); an expression of constants evaluated.
    """
    if isinstance(var, Constant):
        return np.asarray(var.data)
    return np.asarray(var.eval()) if is_constant(var) else None


def _censored_weibull_moments(alpha, beta, lower, upper):
    """Mean and variance of Weibull(k = α, λ = β) censored at constant bounds (l, u).

    With ``a = (l/λ)^k``, ``b = (u/λ)^k``: ``E[y^m] = l^m (1 − e^{−a}) + u^m e^{−b}
    + λ^m Γ(1 + m/k) (P(1 + m/k, b) − P(1 + m/k, a))``, P the regularized lower
    incomplete gamma function. A missing bound (l <= 0, u = ∞) is computed at
    u = λ and then left out: ``(0/λ)^k`` has an infinite derivative for k < 1.
    """
    lower_value = _constant_value(lower)
    bounds = [(upper, pt.isinf(upper), True)]
    if lower_value is None or np.any(lower_value > 0):
        bounds.append((lower, pt.le(lower, 0), False))
    raw = []
    for m in (1, 2):
        s = 1 + m / alpha
        whole = beta**m * pt.exp(pt.gammaln(s))  # E[y^m] of the law uncensored
        moment = 0.0
        for bound, missing, is_upper in bounds:
            safe = pt.switch(missing, beta, bound)
            z = (safe / beta) ** alpha
            # the mass at the bound, and the interior's moment up to it (with a sign)
            if is_upper:
                part = safe**m * pt.exp(-z) + whole * pt.gammainc(s, z)
            else:
                part = -(safe**m) * pt.expm1(-z) - whole * pt.gammainc(s, z)
            moment = moment + pt.switch(missing, whole if is_upper else 0.0, part)
        raw.append(moment)
    mean, square = raw
    return mean, square - mean**2


#: censored laws with closed forms: base op -> (family, moments and entropy in the graph)
_CENSORED = {
    rv.NormalRV: (families.CENSORED_NORMAL, _censored_normal_moments, _censored_normal_entropy),
    WeibullBetaRV: (
        families.CENSORED_WEIBULL,
        _censored_weibull_moments,
        _censored_weibull_entropy,
    ),
}


def censored_likelihood(observed):
    """The closed-form censored Normal (Tobit) or Weibull, if ``observed`` is one.

    ``pm.Censored(pm.Normal.dist(mu, sigma), lower, upper)`` or
    ``pm.Censored(pm.Weibull.dist(alpha, beta), lower, upper)`` with bounds
    that are constants (a bound held in a ``pm.Data`` container goes through
    PyMC's logp instead, where it may be an input). Returns the `Likelihood`
    and its parameters ``[*PyMC's base parameters, lower, upper]``, or None.
    """
    op = observed.owner.op
    if not isinstance(op, CensoredRV):
        return None
    base, lower, upper = censored_parts(observed)
    if type(base.owner.op) not in _CENSORED:
        return None
    if not (is_constant(lower) and is_constant(upper)):
        return None
    family, moments, entropy = _CENSORED[type(base.owner.op)]
    params = base.owner.op.dist_params(base.owner)
    likelihood = Likelihood(
        family.name,
        "real",
        (*family.parameters, "lower", "upper"),
        family,
        lambda *p: list(p[:2]),
        moments,
        fixed=lambda *p: {"lower": p[2], "upper": p[3]},
        matched_fixed=False,
        entropy=entropy,
        entropy_on_cpu=False,
    )
    return likelihood, [*params, lower, upper]

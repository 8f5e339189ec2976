"""Symbolic views of PyMC likelihoods: per-draw parameters and moments.

For each supported likelihood, a :class:`Likelihood` maps PyMC's own parameters
(in the order of ``op.dist_params``) to

- ``draw_parameters``: the family's parameters in the mean–variance
  parametrization whose Fisher information ``draw_family`` gives;
- ``moments``: the per-draw predictive mean (or class probabilities) and
  variance, averaged over draws for the moment-matched predictive.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytensor.scalar as ps
import pytensor.scalar.math as ps_math
import pytensor.tensor as pt
from pymc.distributions.continuous import TruncatedNormalRV, WaldRV, WeibullBetaRV
from pytensor.graph.basic import Constant
from pytensor.graph.traversal import graph_inputs
from pytensor.tensor.random import basic as rv

from pm_sens import families
from pm_sens.families import Family
from pm_sens.families._base import graph_log_beta
from pm_sens.graph.compile.nodes import is_elemwise
from pm_sens.graph.compile.special import scaled_exp1
from pm_sens.graph.likelihoods import truncated_normal


@dataclass(frozen=True)
class Likelihood:
    """How pm_sens reads one PyMC likelihood."""

    name: str
    support: str
    parameter_names: tuple[str, ...]
    draw_family: Family
    draw_parameters: Callable
    moments: Callable
    fixed: Callable = field(default=lambda *params: {})
    #: whether the fixed parameters also describe the moment-matched family
    #: (Binomial n) or only the per-draw one (censoring bounds)
    matched_fixed: bool = True
    #: user-facing parameter name -> (PyMC parameter it sets, function of all given parameters)
    aliases: dict = field(default_factory=dict)
    #: E[y] per draw when it differs from the first moment above (Binomial: n·p)
    mean: Callable | None = None
    #: Var[y] per draw when it differs from the second moment above
    variance: Callable | None = None
    #: how the Fisher information, entropies and densities are computed
    route: str = "closed form"
    #: the `GenericLikelihood` of a likelihood without closed forms: its mean,
    #: variance and their derivatives come from it (by summation or quadrature)
    generic: object = None
    #: 1 − p per draw, computed without rounding near p = 1 (Bernoulli, Binomial):
    #: a second moment column (a value, not differentiated) for the matched family
    complement: Callable | None = None
    #: the per-draw entropy of y, where it is a log of the scale: computed in the
    #: graph, rewrites simplify it (σ = exp(η) gives log σ = η). The draw
    #: family's ``entropy`` is the reference it is tested against.
    entropy: Callable | None = None
    #: whether the CPU backend takes ``entropy`` from the graph too: not where
    #: NumPy runs its graph form at more than the family's cost (a censored law's:
    #: each bound's terms on every cell, where the family computes them only
    #: where the bound is finite; the Weibull's ``E₁`` by SciPy, which a select
    #: cannot mask)
    entropy_on_cpu: bool = True
    #: the moment-matched family's name when it is not the support's default
    moment_family: str | None = None
    #: ``(σ², 1/ν)`` per draw, for a Student-t match (`families.studentt`)
    heavy_tails: Callable | None = None
    #: PyMC parameters read as fixed that must be constants (no model variable,
    #: no data container) for these closed forms; otherwise PyMC's logp serves
    constant: tuple[str, ...] = ()
    #: PyMC's defaults of parameters a `Predictive` may leave out (the Wald's shift)
    defaults: dict = field(default_factory=dict)


def _sigmoid_argument(p):
    """``t`` where ``p`` is ``sigmoid(t)`` in the graph (perhaps broadcast), else None.

    PyMC writes ``Bernoulli(logit_p=t)`` and ``NegativeBinomial(mu, alpha)`` with
    ``p = sigmoid(t)``; working with t keeps what p rounds away (p = 1 from t ≈ 37).
    """
    broadcast_with = []
    while p.owner is not None and is_elemwise(p.owner, ps.Second):
        broadcast_with.append(p.owner.inputs[0])
        p = p.owner.inputs[1]
    if p.owner is None or not is_elemwise(p.owner, ps_math.Sigmoid):
        return None
    t = p.owner.inputs[0]
    for other in reversed(broadcast_with):
        t = pt.second(other, t)
    return t


def _logit(p):
    """``log(p/(1−p))``, read off the graph where p is a sigmoid."""
    t = _sigmoid_argument(p)
    if t is not None:
        return t
    # a probability that rounds to 0 or 1 has zero derivative: clipping keeps it finite
    p = pt.clip(p, np.finfo(float).tiny, 1 - np.finfo(float).epsneg)
    return pt.log(p) - pt.log1p(-p)


def _probability(p):
    """p, as ``1 − σ(−t)`` for ``t > 0`` where p is ``σ(t)``.

    The same value, and a derivative ``σ(−t)(1 − σ(−t)) ∂t`` that stays exact
    where p rounds to 1 (σ's own there, ``p(1 − p) ∂t``, is 0).
    """
    t = _sigmoid_argument(p)
    return p if t is None else pt.switch(t > 0, 1 - pt.sigmoid(-t), p)


def _complement(p):
    """``1 − p``, as ``sigmoid(−t)`` where p is ``sigmoid(t)``."""
    t = _sigmoid_argument(p)
    return 1 - p if t is None else pt.sigmoid(-t)


def _odds_against(p):
    """``(1−p)/p``, as ``exp(−t)`` where p is ``sigmoid(t)``."""
    t = _sigmoid_argument(p)
    return (1 - p) / p if t is None else pt.exp(-t)


#: ``½ log(2πe)``, the Normal entropy's constant
_HALF_LOG_2PI_E = 0.5 * np.log(2 * np.pi * np.e)


def _normal_entropy(mu, sigma):
    return pt.log(sigma) + _HALF_LOG_2PI_E


def _normal(mu, sigma):
    return [mu, sigma**2]


def _studentt_draw(nu, mu, sigma):
    return [mu, sigma**2, nu]


def _studentt_moments(nu, mu, sigma):
    # the variance is infinite for nu <= 2 (the formula would turn negative)
    return mu, pt.switch(nu > 2, sigma**2 * nu / (nu - 2), np.inf)


def _studentt_entropy(nu, mu, sigma):
    """``(ν+1)/2 [ψ((ν+1)/2) − ψ(ν/2)] + ½ log ν + log B(ν/2, ½) + log σ``."""
    half, half1 = nu / 2, (nu + 1) / 2
    # log B(ν/2, ½), with log Γ(½) = ½ log π: a Python 0.5 in the graph is a float32 constant
    log_beta = pt.gammaln(half) - pt.gammaln(half1) + 0.5 * np.log(np.pi)
    return half1 * (pt.psi(half1) - pt.psi(half)) + 0.5 * pt.log(nu) + log_beta + pt.log(sigma)


def _studentt_tails(nu, mu, sigma):
    return sigma**2, 1 / nu


def _laplace(mu, b):
    return [mu, 2 * b**2]


def _lognormal(mu, sigma):
    s = sigma**2
    return [pt.exp(mu + s / 2), pt.expm1(s) * pt.exp(2 * mu + s)]


def _gamma(alpha, scale):
    return [alpha * scale, alpha * scale**2]


def _gamma_draw(alpha, scale):
    return [alpha * scale, alpha]


def _weibull(alpha, beta):
    mean_factor = pt.gammaln(1 + 1 / alpha)
    spread = pt.exp(pt.gammaln(1 + 2 / alpha)) - pt.exp(2 * mean_factor)
    return [beta * pt.exp(mean_factor), beta**2 * spread]


def _gumbel(mu, beta):
    return [mu + np.euler_gamma * beta, (np.pi * beta) ** 2 / 6]


def _logistic(mu, s):
    return [mu, (np.pi * s) ** 2 / 3]


def _wald(mu, lam, alpha):
    return [mu + alpha, mu**3 / lam]


def _wald_entropy(mu, lam, alpha):
    """``½ log(2π/λ) + ½ + (3/2) E[log y]``, ``E[log y] = log μ − e^{2λ/μ} E₁(2λ/μ)``."""
    mean_log = pt.log(mu) - scaled_exp1(2 * lam / mu)
    return _HALF_LOG_2PI_E - 0.5 * pt.log(lam) + 1.5 * mean_log


def _beta(a, b):
    total = a + b
    return [a / total, a * b / (total**2 * (total + 1))]


def _beta_entropy(a, b):
    """``log B(a, b) − (a−1)ψ(a) − (b−1)ψ(b) + (a+b−2)ψ(a+b)``."""
    return (
        graph_log_beta(pt, a, b)
        - (a - 1) * pt.psi(a)
        - (b - 1) * pt.psi(b)
        + (a + b - 2) * pt.psi(a + b)
    )


def _negative_binomial_draw(n, p):
    return [n * _odds_against(p), n]


def _negative_binomial_moments(n, p):
    odds = _odds_against(p)
    mean = n * odds
    return mean, mean * (1 + odds)


def _beta_binomial_moments(n, a, b):
    total = a + b
    mean = n * a / total
    return mean, mean * b * (total + n) / (total * (total + 1))


def _category_mean(p):
    """The expected category ``Σ_k k p_k`` (meaningful for ordered outcomes)."""
    return (p * pt.arange(p.shape[-1])).sum(-1)


def _category_variance(p):
    levels = pt.arange(p.shape[-1])
    return (p * levels**2).sum(-1) - _category_mean(p) ** 2


def _mean_only(parameter):
    return lambda *params: (params[parameter], None)


def _mean_and_variance(draw_parameters):
    return lambda *params: tuple(draw_parameters(*params))


LIKELIHOODS: dict[type, Likelihood] = {
    rv.NormalRV: Likelihood(
        "normal",
        "real",
        ("mu", "sigma"),
        families.NORMAL_MEAN_SD,
        lambda mu, sigma: [mu, sigma],
        _mean_and_variance(_normal),
        entropy=_normal_entropy,
    ),
    rv.StudentTRV: Likelihood(
        "studentt",
        "real",
        ("nu", "mu", "sigma"),
        families.STUDENTT,
        _studentt_draw,
        _studentt_moments,
        moment_family="studentt",
        heavy_tails=_studentt_tails,
        entropy=_studentt_entropy,
    ),
    rv.LaplaceRV: Likelihood(
        "laplace",
        "real",
        ("mu", "b"),
        families.MOMENT_FAMILIES["laplace"],
        _laplace,
        _mean_and_variance(_laplace),
        entropy=lambda mu, b: 1 + pt.log(2 * b),
    ),
    rv.LogNormalRV: Likelihood(
        "lognormal",
        "positive",
        ("mu", "sigma"),
        families.MOMENT_FAMILIES["lognormal"],
        _lognormal,
        _mean_and_variance(_lognormal),
        entropy=lambda mu, sigma: mu + _normal_entropy(mu, sigma),
    ),
    rv.GammaRV: Likelihood(
        "gamma",
        "positive",
        ("alpha", "scale"),
        families.GAMMA_MEAN_SHAPE,
        _gamma_draw,
        _mean_and_variance(_gamma),
        aliases={"beta": ("scale", lambda p: 1 / p["beta"])},
        # a + log θ + log Γ(a) + (1 − a) ψ(a), of shape a and scale θ
        entropy=lambda alpha, scale: (
            alpha + pt.log(scale) + pt.gammaln(alpha) + (1 - alpha) * pt.psi(alpha)
        ),
    ),
    rv.ExponentialRV: Likelihood(
        "exponential",
        "positive",
        ("scale",),
        families.MOMENT_FAMILIES["exponential"],
        lambda scale: [scale],
        lambda scale: (scale, scale**2),
        aliases={"lam": ("scale", lambda p: 1 / p["lam"])},
        entropy=lambda scale: 1 + pt.log(scale),
    ),
    WeibullBetaRV: Likelihood(
        "weibull",
        "positive",
        ("alpha", "beta"),
        families.WEIBULL,
        lambda alpha, beta: [alpha, beta],
        _mean_and_variance(_weibull),
        entropy=lambda alpha, beta: np.euler_gamma * (1 - 1 / alpha) + pt.log(beta / alpha) + 1,
    ),
    rv.GumbelRV: Likelihood(
        "gumbel",
        "real",
        ("mu", "beta"),
        families.GUMBEL,
        lambda mu, beta: [mu, beta],
        _mean_and_variance(_gumbel),
        entropy=lambda mu, beta: pt.log(beta) + np.euler_gamma + 1,
    ),
    rv.LogisticRV: Likelihood(
        "logistic",
        "real",
        ("mu", "s"),
        families.LOGISTIC,
        lambda mu, s: [mu, s],
        _mean_and_variance(_logistic),
        entropy=lambda mu, s: pt.log(s) + 2,
    ),
    TruncatedNormalRV: Likelihood(
        "truncated_normal",
        "real",
        ("mu", "sigma", "lower", "upper"),
        families.TRUNCATED_NORMAL,
        lambda mu, sigma, lower, upper: [mu, sigma],
        _mean_and_variance(truncated_normal.moments),
        fixed=lambda mu, sigma, lower, upper: {"lower": lower, "upper": upper},
        entropy=truncated_normal.entropy,
        matched_fixed=False,
        constant=("lower", "upper"),
        defaults={"lower": -np.inf, "upper": np.inf},
    ),
    WaldRV: Likelihood(
        "wald",
        "positive",
        ("mu", "lam", "alpha"),
        families.WALD,
        lambda mu, lam, alpha: [mu, lam],
        _mean_and_variance(_wald),
        fixed=lambda mu, lam, alpha: {"shift": alpha},
        matched_fixed=False,
        aliases={"phi": ("lam", lambda p: p["mu"] * p["phi"])},
        entropy=_wald_entropy,
        constant=("alpha",),
        defaults={"alpha": 0.0},
    ),
    rv.BetaRV: Likelihood(
        "beta",
        "unit",
        ("alpha", "beta"),
        families.MOMENT_FAMILIES["beta"],
        _beta,
        _mean_and_variance(_beta),
        entropy=_beta_entropy,
    ),
    rv.BernoulliRV: Likelihood(
        "bernoulli",
        "binary",
        ("p",),
        families.BERNOULLI_LOGIT,
        lambda p: [_logit(p)],
        lambda p: (_probability(p), None),
        aliases={"logit_p": ("p", lambda p: pt.sigmoid(p["logit_p"]))},
        complement=_complement,
    ),
    rv.BinomialRV: Likelihood(
        "binomial",
        "binomial",
        ("n", "p"),
        families.BINOMIAL_LOGIT,
        lambda n, p: [_logit(p)],
        lambda n, p: (_probability(p), None),
        fixed=lambda n, p: {"n": n},
        mean=lambda n, p: n * p,
        complement=lambda n, p: _complement(p),
    ),
    rv.BetaBinomialRV: Likelihood(
        "beta_binomial",
        "count",
        ("n", "alpha", "beta"),
        families.BETA_BINOMIAL,
        lambda n, a, b: [a, b],
        _beta_binomial_moments,
        fixed=lambda n, a, b: {"n": n},
        matched_fixed=False,
    ),
    rv.CategoricalRV: Likelihood(
        "categorical",
        "categorical",
        ("p",),
        families.MOMENT_FAMILIES["categorical"],
        lambda p: [p],
        _mean_only(0),
        mean=_category_mean,
        variance=_category_variance,
    ),
    rv.PoissonRV: Likelihood(
        "poisson",
        "count",
        ("mu",),
        families.MOMENT_FAMILIES["poisson"],
        lambda mu: [mu],
        lambda mu: (mu, mu),
    ),
    rv.NegBinomialRV: Likelihood(
        "negative_binomial",
        "count",
        ("n", "p"),
        families.NEGATIVE_BINOMIAL_MEAN_ALPHA,
        _negative_binomial_draw,
        _negative_binomial_moments,
        aliases={
            "alpha": ("n", lambda p: p["alpha"]),
            "mu": ("p", lambda p: p["alpha"] / (p["mu"] + p["alpha"])),
        },
    ),
}

LIKELIHOODS_BY_NAME = {lik.name: lik for lik in LIKELIHOODS.values()}


def is_constant(var):
    """Whether ``var`` is computed from constants alone (no model variable or container)."""
    return all(isinstance(v, Constant) for v in graph_inputs([var]))


def closed_form_likelihood(observed):
    """The closed-form `Likelihood` of the op of ``observed`` and its parameters, or None.

    None where the op has none, or where a parameter its closed forms hold fixed
    (`Likelihood.constant`: truncation bounds, the Wald's shift) is not a constant.
    """
    likelihood = LIKELIHOODS.get(type(observed.owner.op))
    if likelihood is None:
        return None
    params = observed.owner.op.dist_params(observed.owner)
    named = dict(zip(likelihood.parameter_names, params, strict=True))
    if not all(is_constant(named[name]) for name in likelihood.constant):
        return None
    return likelihood, params


#: supports whose outcome is a vector per point (`pm_sens.graph.likelihoods.multivariate`)
VECTOR_SUPPORTS = ("multivariate", "multinomial", "simplex")

_CLASS_PROBABILITY = re.compile(r"p\[(\d+)\]")


def statistic_names(likelihood, parameter_names):
    """Valid names of a per-draw predictive statistic (see `statistic_expression`)."""
    names = ["mean", "variance"]
    names += list(parameter_names)
    if likelihood.support == "categorical":
        names.append("p[k]")
    return names


def check_statistic(likelihood, parameter_names, name):
    """Raise unless ``name`` is a statistic of this likelihood; return it."""
    if likelihood.support in VECTOR_SUPPORTS:
        if name == "mean":
            return name  # a vector per point: one statistic per outcome (an "outcome" dim)
        raise ValueError(
            f"statistic={name!r} is not valid for the {likelihood.name} likelihood, whose "
            "outcome is a vector per point; valid: ['mean'] (each outcome's mean, an "
            "'outcome' dim)"
        )
    valid = statistic_names(likelihood, parameter_names)
    match = _CLASS_PROBABILITY.fullmatch(name) if isinstance(name, str) else None
    if name in valid or (match and "p[k]" in valid):
        return name
    raise ValueError(
        f"statistic={name!r} is not valid for a {likelihood.name} likelihood; valid: {valid}"
    )


def statistic_expression(likelihood, parameter_names, params, name):
    """A per-draw predictive statistic as an expression of the likelihood's parameters.

    ``"mean"`` is E[y] (for a categorical likelihood the expected category
    ``Σ k p_k``, meaningful when the categories are ordered), ``"variance"``
    Var[y], a parameter name that parameter, and ``"p[k]"`` a categorical class
    probability. ``"entropy"``, for the measures' own use where the likelihood
    has a symbolic `Likelihood.entropy`, is the entropy of y.
    """
    if name == "entropy":
        return likelihood.entropy(*params)
    if name == "mean":
        return (likelihood.mean or (lambda *p: likelihood.moments(*p)[0]))(*params)
    if name == "variance":
        return (likelihood.variance or (lambda *p: likelihood.moments(*p)[1]))(*params)
    match = _CLASS_PROBABILITY.fullmatch(name)
    if match:
        return params[0][..., int(match.group(1))]
    return params[list(parameter_names).index(name)]


def default_moment_family(likelihood) -> Family:
    """The family ``mode="moment"`` matches the likelihood's mixture to by default."""
    name = likelihood.moment_family or families.DEFAULT_MOMENT_FAMILY[likelihood.support]
    return families.get_moment_family(name)

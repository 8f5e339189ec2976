"""A vector outcome per point: a multivariate family's parameters as one array per point.

The engine differentiates per-point scalar components; a multivariate Normal's
are its K means and the covariance's lower triangle (`pm_sens.families.mvnormal`),
a Dirichlet's (and a Dirichlet-multinomial's) its K means and variance scale
(`pm_sens.families.dirichlet`), stacked here into one (points, M) array that
the engine splits like a categorical likelihood's class probabilities.
"""

import pytensor.tensor as pt
from pymc.distributions.multivariate import DirichletMultinomialRV
from pytensor.tensor.random.basic import DirichletRV, MultinomialRV, MvNormalRV

from pm_sens import families
from pm_sens.graph.likelihoods.closed_forms import Likelihood


def mvnormal_components(mu, cov):
    """A multivariate Normal's parameters per point as one array (points, M).

    The K means, then the covariance's lower triangle row by row
    (`pm_sens.families.mvnormal`); a covariance shared by the points is
    broadcast to each.
    """
    k = mu.type.shape[-1] or cov.type.shape[-1]
    if k is None:
        raise ValueError(
            "the multivariate Normal's number of outcomes is not known from its graph; give "
            "mu or cov a static last dimension (e.g. observed data with its shape)"
        )
    mu = mu + pt.zeros_like(cov[..., 0])
    cov = cov + pt.zeros_like(mu)[..., None]
    entries = [cov[..., a, b] for a, b in families.mvnormal.outcome_pairs(k)]
    return pt.concatenate([mu, pt.stack(entries, axis=-1)], axis=-1)


def _mvnormal_moments(phi):
    """Per draw, the raw moments the matched family averages: μ, Σ entries, μ_a μ_b."""
    k = families.mvnormal.outcome_count(phi.type.shape[-1])
    products = [phi[..., a] * phi[..., b] for a, b in families.mvnormal.outcome_pairs(k)]
    return pt.concatenate([phi, pt.stack(products, axis=-1)], axis=-1), None


def _mvnormal_mean(phi):
    """The K means (points, K) of the stacked parameters."""
    return phi[..., : families.mvnormal.outcome_count(phi.type.shape[-1])]


#: a multivariate Normal, its parameters stacked per point by `mvnormal_components`
MVNORMAL = Likelihood(
    "mvnormal",
    "multivariate",
    ("phi",),
    families.mvnormal.FAMILY,
    lambda phi: [phi],
    _mvnormal_moments,
    mean=_mvnormal_mean,
)


def with_trials(n, phi):
    """``[phi, n]``: a count vector's parameters (points, M) and its trials as (points, 1)."""
    phi = phi + pt.zeros_like(pt.cast(n, "float64"))[..., None]
    return [phi, pt.cast(n, "float64")[..., None] + pt.zeros_like(phi[..., :1])]


#: a multinomial: the K probabilities per point, the trials held (`with_trials`)
MULTINOMIAL = Likelihood(
    "multinomial",
    "multinomial",
    ("p", "n"),
    families.multinomial.FAMILY,
    lambda p, n: [p],
    lambda p, n: (p, None),
    fixed=lambda p, n: {"n": n[..., 0]},
    mean=lambda p, n: n * p,
)


def simplex_components(alpha):
    """Dirichlet concentrations as means and variance scale (points, K + 1).

    ``m = α/α₀`` and ``v = 1/(1 + α₀)`` (`pm_sens.families.dirichlet`).
    """
    total = alpha.sum(-1, keepdims=True)
    return pt.concatenate([alpha / total, 1 / (1 + total)], axis=-1)


def _simplex_moments(phi, *held):
    """Per draw, the raw moments the matched family averages: m and ``E Σ y_k²``."""
    m, v = phi[..., :-1], phi[..., -1]
    squares = (m**2).sum(-1)
    second = v * (1 - squares) + squares
    return pt.concatenate([m, second[..., None]], axis=-1), None


#: a Dirichlet's proportions, its parameters stacked per point by `simplex_components`
DIRICHLET = Likelihood(
    "dirichlet",
    "simplex",
    ("phi",),
    families.dirichlet.FAMILY,
    lambda phi: [phi],
    _simplex_moments,
    mean=lambda phi: phi[..., :-1],
)


#: a Dirichlet-multinomial: the latent proportions' means and scale, the trials held
DIRICHLET_MULTINOMIAL = Likelihood(
    "dirichlet_multinomial",
    "multinomial",
    ("phi", "n"),
    families.dirichlet_multinomial.FAMILY,
    lambda phi, n: [phi],
    _simplex_moments,
    fixed=lambda phi, n: {"n": n[..., 0]},
    mean=lambda phi, n: n[..., :1] * phi[..., :-1],
    moment_family="dirichlet_multinomial",
)


def vector_outcome(op, rv):
    """``(likelihood, components)`` of an observed vector per point, or None."""
    if rv.type.ndim != 2:
        return None
    if isinstance(op, MvNormalRV):
        return MVNORMAL, lambda params: [mvnormal_components(*params)]
    if isinstance(op, MultinomialRV):
        return MULTINOMIAL, lambda params: with_trials(*params)
    if isinstance(op, DirichletMultinomialRV):
        return DIRICHLET_MULTINOMIAL, lambda params: with_trials(
            params[0], simplex_components(params[1])
        )
    if isinstance(op, DirichletRV):
        return DIRICHLET, lambda params: [simplex_components(*params)]
    return None


def outcome_labels(model, rv, outcome_shape):
    """A vector outcome's labels: the coords of the observed variable's last dim, or 0..K−1."""
    if not outcome_shape:
        return []
    dims = model.named_vars_to_dims.get(rv.name) or ()
    coords = model.coords.get(dims[-1]) if len(dims) == 2 else None
    return list(coords) if coords is not None else list(range(outcome_shape[0]))

"""A vector outcome per point: the multivariate Normal's parameters as one array per point.

The engine differentiates per-point scalar components; a multivariate Normal's
are its K means and the covariance's lower triangle (`pm_sens.families.mvnormal`),
stacked here into one (points, M) array that the engine splits like a
categorical likelihood's class probabilities.
"""

import pytensor.tensor as pt
from pytensor.tensor.random.basic import MultinomialRV, MvNormalRV

from pm_sens import families
from pm_sens.graph.likelihoods import Likelihood


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


def multinomial_components(n, p):
    """A multinomial's probabilities per point (points, K) and its trials as (points, 1)."""
    p = p + pt.zeros_like(pt.cast(n, "float64"))[..., None]
    return [p, pt.cast(n, "float64")[..., None] + pt.zeros_like(p[..., :1])]


#: a multinomial: the K probabilities per point, the trials held (`multinomial_components`)
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


def vector_outcome(op, rv):
    """``(likelihood, components)`` of an observed vector per point, or None."""
    if rv.type.ndim != 2:
        return None
    if isinstance(op, MvNormalRV):
        return MVNORMAL, lambda params: [mvnormal_components(*params)]
    if isinstance(op, MultinomialRV):
        return MULTINOMIAL, lambda params: multinomial_components(*params)
    return None


def outcome_labels(model, rv, outcome_shape):
    """A vector outcome's labels: the coords of the observed variable's last dim, or 0..K−1."""
    if not outcome_shape:
        return []
    dims = model.named_vars_to_dims.get(rv.name) or ()
    coords = model.coords.get(dims[-1]) if len(dims) == 2 else None
    return list(coords) if coords is not None else list(range(outcome_shape[0]))

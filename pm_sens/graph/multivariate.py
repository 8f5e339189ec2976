"""A vector outcome per point: the multivariate Normal's parameters as one array per point.

The engine differentiates per-point scalar components; a multivariate Normal's
are its K means and the covariance's lower triangle (`pm_sens.families.mvnormal`),
stacked here into one (points, M) array that the engine splits like a
categorical likelihood's class probabilities.
"""

import pytensor.tensor as pt

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


#: a multivariate Normal, its parameters stacked per point by `mvnormal_components`
MVNORMAL = Likelihood(
    "mvnormal",
    "multivariate",
    ("phi",),
    families.mvnormal.FAMILY,
    lambda phi: [phi],
    _mvnormal_moments,
)

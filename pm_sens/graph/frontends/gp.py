"""Posterior predictives of PyMC Gaussian processes at new inputs.

Per posterior draw (hyperparameters, and latent values for ``pm.gp.Latent``),
the GP conditional at new inputs ``X*`` has mean μ(x*) and variance v(x*) —
only the diagonal: no N*×N* covariance is ever built. The training-data
Cholesky depends on the draw only, so after draw vectorization it is one
batched factorization per chunk, shared by all points and features.

For a latent GP ``f`` with link ``h``, each draw's predictive mean ``E[h(f*)]``
has closed forms: identity μ; exp ``exp(μ + v/2)``; probit
``Φ(μ/sqrt(1 + v))``; square ``μ² + v``; logistic (and any callable link) by
Gauss–Hermite quadrature.
"""

import numpy as np
import pytensor.tensor as pt
from pymc.gp import Latent, Marginal
from pymc.gp.util import JITTER_DEFAULT, stabilize
from pytensor.tensor.linalg import cho_solve, cholesky, solve_triangular

from pm_sens.graph.model.queries import data_value

LINKS = ("identity", "exp", "probit", "logit", "square")
DEFAULT_LINK = {
    "normal": "identity",
    "poisson": "exp",
    "negative_binomial": "exp",
    "bernoulli": "logit",
    "binomial": "logit",
}
_HERMITE_NODES = 32


def training_inputs(gp, feature_names=None):
    """The GP's training inputs (rows = points), with one ``feature_names`` per column."""
    if not isinstance(gp, Marginal | Latent):
        raise TypeError(
            f"gp={type(gp).__name__} is not supported; give a pm.gp.Marginal, MarginalApprox "
            "or Latent (HSGP needs no special path: use Predictive.from_observed)"
        )
    x_train = np.asarray(data_value(pt.as_tensor_variable(gp.X)))
    if feature_names is not None and len(feature_names) != x_train.shape[1]:
        raise ValueError(
            f"feature_names={feature_names!r} is not valid: the GP's X has "
            f"{x_train.shape[1]} columns; give {x_train.shape[1]} names"
        )
    return x_train


def marginal_conditional(gp, x_new):
    """Mean and variance (noise included) of y* for `pm.gp.Marginal` and its sparse kin."""
    if type(gp) is not Marginal:  # MarginalApprox's own low-rank conditional
        return gp._build_conditional(x_new, True, True, *gp._get_given_vals(None), JITTER_DEFAULT)
    X, y, noise, cov_total, mean_total = gp._get_given_vals(None)
    chol = cholesky(stabilize(cov_total(X), JITTER_DEFAULT) + noise(X))
    mean, var = _conditional(gp, X, x_new, chol, y - mean_total(X))
    return mean, var + noise(x_new, diag=True)


def latent_conditional(gp, x_new):
    """Mean and variance of f* | f for `pm.gp.Latent` (diagonal only)."""
    X, f, cov_total, mean_total = gp._get_given_vals(None)
    chol = cholesky(stabilize(cov_total(X), JITTER_DEFAULT))
    return _conditional(gp, X, x_new, chol, f - mean_total(X))


def _conditional(gp, X, x_new, chol, residual):
    """Mean and variance at ``x_new`` given the training Cholesky factor and residual.

    The mean is ``m(x*) + k(x*, X) K⁻¹ r``: the weights ``K⁻¹ r`` are solved
    once per draw, so the mean (and its derivatives in ``x*``, all that
    Integrated Gradients needs) costs O(N) per new input. Only the variance
    ``k(x*, x*) − ‖L⁻¹ k(X, x*)‖²`` needs a triangular solve per new input
    (PyMC's conditional computes the mean through it too: O(N²)).
    """
    k_new = gp.cov_func(X, x_new)
    weights = cho_solve((chol, True), residual)
    mean = gp.mean_func(x_new) + pt.dot(weights, k_new)
    projected = solve_triangular(chol, k_new, lower=True)
    var = gp.cov_func(x_new, diag=True) - pt.sum(pt.square(projected), 0)
    return mean, var


def _gauss_hermite_mean(function, mean, var):
    nodes, weights = np.polynomial.hermite.hermgauss(_HERMITE_NODES)
    f = mean[..., None] + pt.sqrt(2 * var)[..., None] * nodes
    return pt.sum(function(f) * (weights / np.sqrt(np.pi)), axis=-1)


def link_mean(link, mean, var):
    """``E[h(f)]`` for ``f ~ N(mean, var)``: closed forms, else Gauss–Hermite."""
    if callable(link):
        return _gauss_hermite_mean(link, mean, var)
    if link == "identity":
        return mean
    if link == "exp":
        return pt.exp(mean + var / 2)
    if link == "probit":
        z = mean / pt.sqrt(1 + var)
        return 0.5 * pt.erfc(-z / np.sqrt(2))
    if link == "square":
        return mean**2 + var
    if link == "logit":
        return _gauss_hermite_mean(pt.sigmoid, mean, var)
    raise ValueError(f"link={link!r} is not valid; valid: {list(LINKS)} or a callable")


#: Likelihood parameters a latent GP's predictive takes besides f (``from_gp(**parameters)``).
EXTRA_PARAMETERS = {"normal": {"sigma"}, "binomial": {"n"}, "negative_binomial": {"alpha"}}


def gp_parameters(gp, x_new, likelihood, link, extra):
    """The likelihood parameters of one draw's predictive at ``x_new``."""
    allowed = set() if isinstance(gp, Marginal) else EXTRA_PARAMETERS.get(likelihood, set())
    unknown = sorted(set(extra) - allowed)
    if unknown:
        raise ValueError(
            f"from_gp got the parameter(s) {unknown}, which a {type(gp).__name__} GP with "
            f"likelihood={likelihood!r} does not take; valid: {sorted(allowed)}"
        )
    if isinstance(gp, Marginal):
        if likelihood not in (None, "normal"):
            raise ValueError(
                f"likelihood={likelihood!r} is not valid for a {type(gp).__name__} GP, "
                "whose likelihood is Normal; use pm.gp.Latent for other likelihoods"
            )
        mean, var = marginal_conditional(gp, x_new)
        return "normal", {"mu": mean, "sigma": pt.sqrt(var)}
    if likelihood is None:
        raise ValueError(
            "likelihood=None is not valid for a pm.gp.Latent; name the likelihood of y given "
            f"f, one of {sorted(DEFAULT_LINK)}"
        )
    if likelihood not in DEFAULT_LINK:
        raise ValueError(f"likelihood={likelihood!r} is not valid; valid: {sorted(DEFAULT_LINK)}")
    mean, var = latent_conditional(gp, x_new)
    expected = link_mean(link or DEFAULT_LINK[likelihood], mean, var)
    if likelihood == "normal":
        if "sigma" not in extra:
            raise ValueError("likelihood='normal' needs the noise: pass sigma=<its variable>")
        return "normal", {"mu": expected, "sigma": pt.sqrt(var + extra["sigma"] ** 2)}
    name = {"bernoulli": "p", "binomial": "p", "poisson": "mu", "negative_binomial": "mu"}
    return likelihood, {name[likelihood]: expected, **extra}

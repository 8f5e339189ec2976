"""Likelihoods on a base law and without a closed form: truncated and censored
laws (the Normal's and the Weibull's in closed form, others by quadrature),
mixtures, and distributions read through PyMC's logp (exact summation over the
support or quadrature)."""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy import integrate, special, stats

from tests.zoo._registry import known_posterior, zoo_model

#: pymc-examples, examples/generalized_linear_models/GLM-truncated-censored-regression
TRUNCATED_CENSORED_NOTEBOOK = "pymc-examples GLM-truncated-censored-regression"


def _truncated_censored_data(rng, n=40):
    """The notebook's data: slope 1, intercept 0, σ 2, x uniform on (-10, 10), bounds
    a list of ints."""
    x = rng.uniform(-10, 10, n)
    y = rng.normal(loc=x, scale=2)
    return x, y, [-5, 5]


@zoo_model(
    f"{TRUNCATED_CENSORED_NOTEBOOK}, truncated_regression as written: NumPy x (the rows "
    "with y inside the bounds) in slope * x + intercept, pm.Truncated(Normal.dist, "
    "lower=bounds[0], upper=bounds[1]) with int bounds"
)
def truncated_normal(rng):
    x, y, bounds = _truncated_censored_data(rng)
    keep = (y >= bounds[0]) & (y <= bounds[1])
    xt, yt = x[keep], y[keep]
    with pm.Model() as model:
        slope = pm.Normal("slope", mu=0, sigma=1)
        intercept = pm.Normal("intercept", mu=0, sigma=1)
        σ = pm.HalfNormal("σ", sigma=1)
        normal_dist = pm.Normal.dist(mu=slope * xt + intercept, sigma=σ)
        pm.Truncated("obs", normal_dist, lower=bounds[0], upper=bounds[1], observed=yt)
    return model, known_posterior(model)


def _per_row_limits(rng, n=20):
    """x and each row's own lower and upper limits (labs with different ranges)."""
    return (
        rng.normal(size=n),
        rng.uniform(-2.5, -1.5, size=n),
        rng.uniform(1.5, 2.5, size=n),
    )


def _truncated_per_row_checks(case, state):
    """The bounds are held per row, not inputs; per draw R-sens of x is |b| I_μμ^½
    with ``I_μμ = Var[y]/σ⁴`` (the scores' covariance), Var[y] SciPy's truncnorm's."""
    local = state["draw"]["sensitivity"]
    assert list(local["feature"].values) == ["x"]
    post = case.idata["posterior"]
    b, sigma = post["b"].values[..., None], post["sigma"].values[..., None]
    mu = post["a"].values[..., None] + b * case.model["x"].get_value()
    lower, upper = (
        case.model["y"].owner.op.dist_params(case.model["y"].owner)[k].eval() for k in (2, 3)
    )
    variance = stats.truncnorm.var((lower - mu) / sigma, (upper - mu) / sigma, mu, sigma)
    expected = np.abs(b) * np.sqrt(variance) / sigma**2
    got = local["rsens"].sel(feature="x").transpose("chain", "draw", ...).values
    np.testing.assert_allclose(got, expected, rtol=1e-10)


@zoo_model(
    "pm.TruncatedNormal with per-row bounds (PyMC's API: lower and upper tensor_like), "
    "each row's own measurable range as NumPy arrays, one row unbounded above "
    "(np.inf), x in a pm.Data container",
    check=_truncated_per_row_checks,
)
def truncated_normal_per_row_bounds(rng):
    x, lower, upper = _per_row_limits(rng)
    upper[3] = np.inf
    with pm.Model() as model:
        x_ = pm.Data("x", x)
        a = pm.Normal("a", 0, 1)
        b = pm.Normal("b", 0, 1)
        sigma = pm.HalfNormal("sigma", 1)
        pm.TruncatedNormal(
            "y",
            mu=a + b * x_,
            sigma=sigma,
            lower=lower,
            upper=upper,
            observed=np.clip(x, lower, upper),
        )
    return model, known_posterior(model)


@zoo_model(
    f"{TRUNCATED_CENSORED_NOTEBOOK}, censored_regression as written: NumPy x, "
    "pm.Censored(Normal.dist, lower=bounds[0], upper=bounds[1]) with int bounds, observed "
    "values set to the bounds they exceeded"
)
def censored_regression_notebook(rng):
    x, y, bounds = _truncated_censored_data(rng)
    yc = np.clip(y, *bounds)
    with pm.Model() as model:
        slope = pm.Normal("slope", mu=0, sigma=1)
        intercept = pm.Normal("intercept", mu=0, sigma=1)
        σ = pm.HalfNormal("σ", sigma=1)
        y_latent = pm.Normal.dist(mu=slope * x + intercept, sigma=σ)
        pm.Censored("obs", y_latent, lower=bounds[0], upper=bounds[1], observed=yc)
    return model, known_posterior(model)


@zoo_model(
    "a censored Normal with per-row detection limits (labs with different limits)",
)
def censored_normal_per_row_bounds(rng):
    x, lower, upper = _per_row_limits(rng)
    with pm.Model() as model:
        x_ = pm.Data("x", x)
        a = pm.Normal("a", 0, 1)
        b = pm.Normal("b", 0, 1)
        sigma = pm.HalfNormal("sigma", 1)
        pm.Censored(
            "y",
            pm.Normal.dist(a + b * x_, sigma),
            lower=lower,
            upper=upper,
            observed=np.clip(x, lower, upper),
        )
    return model, known_posterior(model)


@zoo_model(
    "a right-censored Weibull written with pm.Censored, a scalar shape, np.inf where a row "
    "is not censored (closed form: families.censored_weibull; the parametric survival "
    "notebook's Gumbel and Potential as written: notebooks.gumbel_aft_notebook)"
)
def censored_weibull(rng):
    n = 20
    x = rng.normal(size=n)
    t = rng.weibull(1.5, size=n)
    cens = np.where(rng.random(n) < 0.3, t * 0.8, np.inf)
    with pm.Model() as model:
        x_ = pm.Data("x", x)
        k = pm.Gamma("k", 10, 10)
        b = pm.Normal("b", 0, 0.3, shape=2)
        pm.Censored(
            "time",
            pm.Weibull.dist(alpha=k, beta=pm.math.exp(b[0] + b[1] * x_)),
            lower=None,
            upper=cens,
            observed=np.minimum(t, cens),
        )
    return model, known_posterior(model)


def _stacked_mixture_rsens(case, state):
    """Moment-mode R-sens of x in closed form: the matched Normal has mean
    m = E_s[Σ w_k (a_k + b x)] and variance v = E_s[Σ w_k (s_k² + (a_k + b x)²)] − m²,
    so R-sens² = m'²/v + v'²/(2v²) with m' = E_s[b] and
    v' = E_s[Σ w_k 2b (a_k + b x)] − 2m m' (the constant weights read at each
    component, not the first one's)."""
    post = case.idata["posterior"].to_dataset()
    a = post["a"].values.reshape(-1, 2)
    b = post["b"].values.reshape(-1)
    s = post["s"].values.reshape(-1, 2)
    x = case.model["x"].get_value()
    means = a[:, None, :] + b[:, None, None] * x[None, :, None]  # (draws, points, 2)
    m = (MIXTURE_WEIGHTS * means).sum(-1).mean(0)
    v = (MIXTURE_WEIGHTS * (s[:, None, :] ** 2 + means**2)).sum(-1).mean(0) - m**2
    dm = b.mean()
    dv = (MIXTURE_WEIGHTS * 2 * b[:, None, None] * means).sum(-1).mean(0) - 2 * m * dm
    got = state["moment"]["sensitivity"]["rsens"].sel(feature="x").values
    np.testing.assert_allclose(got, np.sqrt(dm**2 / v + dv**2 / (2 * v**2)), rtol=1e-6)


MIXTURE_WEIGHTS = np.array([0.3, 0.7])


@zoo_model(
    "a two-component NormalMixture with stacked means and a sigma per component",
    check=_stacked_mixture_rsens,
)
def normal_mixture_stacked(rng):
    n = 20
    x = rng.normal(size=n)
    with pm.Model() as model:
        x_ = pm.Data("x", x)
        a = pm.Normal("a", [-2, 2], 1, shape=2)
        b = pm.Normal("b", 0, 1)
        s = pm.HalfNormal("s", 1, shape=2)
        eta1 = a[0] + b * x_
        eta2 = a[1] + b * x_
        pm.NormalMixture(
            "y", w=MIXTURE_WEIGHTS, mu=pt.stack([eta1, eta2], axis=-1), sigma=s, observed=x
        )
    return model, known_posterior(model)


@zoo_model(
    "pm.Mixture of listed Poisson components (pm.Mixture's docstring form), here with a "
    "regression on x",
)
def poisson_mixture_listed(rng):
    n = 20
    x = rng.normal(size=n)
    with pm.Model() as model:
        x_ = pm.Data("x", x)
        w = pm.Dirichlet("w", a=np.ones(2))
        a = pm.Normal("a", [0, 1.5], 0.3, shape=2)
        b = pm.Normal("b", 0, 0.3)
        eta = b * x_
        pm.Mixture(
            "y",
            w=w,
            comp_dists=[
                pm.Poisson.dist(mu=pm.math.exp(a[0] + eta)),
                pm.Poisson.dist(mu=pm.math.exp(a[1] + eta)),
            ],
            observed=rng.poisson(2, n),
        )
    return model, known_posterior(model)


@zoo_model(
    "a mixture with K from dims and stick-breaking weights on pm.Data (pymc-examples "
    "dependent_density_regression as written: notebooks.dependent_density_regression)"
)
def mixture_components_from_dims(rng):
    n, k = 20, 2
    x = rng.normal(size=n)
    with pm.Model(coords={"N": np.arange(n), "K": np.arange(k)}) as model:
        x_ = pm.Data("x", x, dims="N")
        alpha = pm.Normal("alpha", 0, 1, dims="K")
        beta = pm.Normal("beta", 0, 1, dims="K")
        v = pm.math.invlogit(alpha + beta * x_[:, None])
        w = pm.Deterministic(
            "w",
            v
            * pt.concatenate(
                [pt.ones_like(v[:, :1]), pt.extra_ops.cumprod(1 - v, axis=1)[:, :-1]], axis=1
            ),
            dims=["N", "K"],
        )
        w = w / w.sum(axis=1, keepdims=True)
        gamma = pm.Normal("gamma", 0, 1, dims="K")
        tau = pm.Gamma("tau", 2, 2, dims="K")
        mu = gamma + 0.5 * x_[:, None]
        pm.NormalMixture("obs", w, mu, sigma=1 / pt.sqrt(tau), observed=x, dims="N")
    return model, known_posterior(model)


def _skew_normal_rsens2(case, state):
    """R-sens2 of x with x in closed form: the mean is linear in x, so only
    ``∂²v = 2 Var_s b1`` moves the matched Normal: ``sqrt(2) Var_s b1 / v``, with
    ``v = E_s[s²(1 − 2δ²/π)] + Var_s(b0 + b1 x + s δ sqrt(2/π))``,
    ``δ = α/sqrt(1 + α²)`` (the skew-normal's variance and mean)."""
    post = case.idata["posterior"].to_dataset()
    b = post["b"].values.reshape(-1, 2)
    s = post["s"].values.reshape(-1)
    x = case.model["x"].get_value()
    delta = SKEW_ALPHA / np.sqrt(1 + SKEW_ALPHA**2)
    mean = b[:, :1] + b[:, 1:] * x + (s * delta * np.sqrt(2 / np.pi))[:, None]
    v = np.mean(s**2 * (1 - 2 * delta**2 / np.pi)) + np.var(mean, 0)
    got = state["moment"]["sensitivity"]["rsens2"].values[:, 0, 0]
    np.testing.assert_allclose(got, np.sqrt(2) * np.var(b[:, 1]) / v, rtol=1e-6)


SKEW_ALPHA = 3.0


@zoo_model("a skew-normal regression (quadrature route)", check=_skew_normal_rsens2)
def skew_normal(rng):
    n = 15
    x = rng.normal(size=n)
    with pm.Model() as model:
        x_ = pm.Data("x", x)
        b = pm.Normal("b", 0, 1, shape=2)
        s = pm.HalfNormal("s", 1)
        pm.SkewNormal("y", mu=b[0] + b[1] * x_, sigma=s, alpha=SKEW_ALPHA, observed=x)
    return model, known_posterior(model)


def _exgaussian_information(sigma, nu):
    """The ExGaussian's Fisher information in its location μ, by SciPy's quadrature of
    the squared score ``d/dy log p = −1/ν + φ(z)/(σ Φ(z))``, ``z = (y − μ)/σ − σ/ν``."""

    def integrand(y):
        z = y / sigma - sigma / nu
        score = -1 / nu + np.exp(stats.norm.logpdf(z) - special.log_ndtr(z)) / sigma
        return score**2 * stats.exponnorm.pdf(y, nu / sigma, scale=sigma)

    lower, upper = -12 * sigma, 40 * nu + 12 * sigma
    return integrate.quad(integrand, lower, upper, epsabs=0, epsrel=1e-12, limit=200)[0]


def _exgaussian_rsens(case, state):
    """Draw-mode R-sens of each input in closed form: μ = b0 + X b moves alone, in a
    location family, so R-sens of X_j is ``|b_j| sqrt(I_μ(σ, ν))`` at every point, the
    information from SciPy's density (`_exgaussian_information`)."""
    post = case.idata["posterior"].to_dataset()
    b = post["b"].values.reshape(-1, 2)
    sigma, nu = post["sigma"].values.reshape(-1), post["nu"].values.reshape(-1)
    information = np.array([_exgaussian_information(s, v) for s, v in zip(sigma, nu, strict=True)])
    rsens = state["draw"]["sensitivity"]["rsens"]
    got = rsens.stack(sample=("chain", "draw")).transpose("sample", ...).values  # (S, N, D)
    expected = np.abs(b)[:, None, :] * np.sqrt(information)[:, None, None]
    np.testing.assert_allclose(got, np.broadcast_to(expected, got.shape), rtol=1e-8)


@zoo_model(
    "an ExGaussian reaction-time regression as issue 60 writes it (benchmarks/"
    "bench_notebooks.py: exgaussian_rt): pm.Data X (n, 2) of floats, "
    "pm.ExGaussian(mu=b0 + X @ b, sigma, nu) with HalfNormal sigma and nu, PyMC's "
    "ExGaussian(mu, sigma, nu) (no public notebook writes one; quadrature route)",
    check=_exgaussian_rsens,
)
def exgaussian_reaction_times(rng):
    n = 20
    x = rng.normal(size=(n, 2))
    rt = 0.4 + x @ np.array([0.05, -0.03]) + rng.normal(0, 0.05, n) + rng.exponential(0.2, n)
    with pm.Model() as model:
        X = pm.Data("X", x)
        b0 = pm.Normal("b0", 0.4, 0.2)
        b = pm.Normal("b", 0, 0.1, shape=2)
        sigma = pm.HalfNormal("sigma", 0.1)
        nu = pm.HalfNormal("nu", 0.3)
        pm.ExGaussian("rt", mu=b0 + X @ b, sigma=sigma, nu=nu, observed=rt)
    return model, known_posterior(model)


@zoo_model(
    "a zero-inflated binomial with trials a NumPy constant",
)
def zero_inflated_binomial(rng):
    n = 15
    x = rng.normal(size=n)
    with pm.Model() as model:
        x_ = pm.Data("x", x)
        psi = pm.Beta("psi", 5, 2)
        b = pm.Normal("b", 0, 1, shape=2)
        pm.ZeroInflatedBinomial(
            "y",
            psi=psi,
            n=10,
            p=pm.math.invlogit(b[0] + b[1] * x_),
            observed=rng.binomial(10, 0.3, n),
        )
    return model, known_posterior(model)


def _gumbel_logp(value, mu, beta):
    z = (value - mu) / beta
    return -z - pt.exp(-z) - pt.log(beta)


@zoo_model("a pm.CustomDist with only a logp (a Gumbel written by hand)")
def custom_dist_logp(rng):
    n = 15
    x = rng.normal(size=n)
    with pm.Model() as model:
        x_ = pm.Data("x", x)
        b = pm.Normal("b", 0, 1, shape=2)
        beta = pm.HalfNormal("beta", 1)
        pm.CustomDist("y", b[0] + b[1] * x_, beta, logp=_gumbel_logp, observed=x)
    return model, known_posterior(model)


@zoo_model(
    "a circular regression (the von Mises examples of PyMC's discourse and bambi's "
    "circular regression): mu = 2 arctan(X @ b), a scalar kappa; its normalizer's Bessel "
    "ratio has no second derivative in PyTensor"
)
def von_mises_regression(rng):
    n = 20
    x = rng.normal(size=(n, 2))
    with pm.Model(coords={"predictor": ["wind", "hour"]}) as model:
        X = pm.Data("X", x, dims=(None, "predictor"))
        b = pm.Normal("b", 0, 0.5, dims="predictor")
        kappa = pm.HalfNormal("kappa", 5)
        pm.VonMises("y", mu=2 * pm.math.arctan(X @ b), kappa=kappa, observed=rng.vonmises(0, 2, n))
    return model, known_posterior(model)

"""Ways of writing a model that do not change its likelihood: float32 data, a
posterior of one draw, masks and row selections, NumPy inputs, dims everywhere."""

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt

from tests.zoo._registry import known_posterior, zoo_model


@zoo_model("a user's model on float32 data (pytensor floatX float32 habits)")
def float32_data(rng):
    n = 20
    x = rng.normal(size=(n, 2)).astype("float32")
    with pm.Model() as model:
        X = pm.Data("X", x)
        b = pm.Normal("b", 0, 1, shape=2)
        s = pm.HalfNormal("s", 1)
        pm.Normal("y", X @ b, s, observed=x[:, 0].astype("float32"))
    return model, known_posterior(model)


@zoo_model(
    "a posterior with one chain and one draw (a MAP point stored as a posterior)",
)
def one_chain_one_draw(rng):
    n = 15
    x = rng.normal(size=n)
    with pm.Model() as model:
        x_ = pm.Data("x", x)
        b = pm.Normal("b", 0, 1, shape=2)
        pm.Bernoulli("y", logit_p=b[0] + b[1] * x_, observed=rng.integers(0, 2, n))
    return model, known_posterior(model, chains=1, draws=1)


@zoo_model("a row selection: the likelihood observes the rows of a mask (mu[observed_rows])")
def masked_rows(rng):
    n = 24
    x = rng.normal(size=n)
    keep = np.flatnonzero(rng.random(n) < 0.7)
    with pm.Model() as model:
        x_ = pm.Data("x", x[keep])
        b = pm.Normal("b", 0, 1, shape=2)
        s = pm.HalfNormal("s", 1)
        mu = b[0] + b[1] * x_
        pm.Normal("y", mu, s, observed=rng.normal(size=len(keep)))
    return model, known_posterior(model)


@zoo_model(
    "NumPy float arrays straight into a negative-binomial GLM, no pm.Data (the notebook's "
    "own bool columns: notebooks.sneezes_numpy_bool)"
)
def numpy_inputs(rng):
    n = 20
    x1, x2 = rng.normal(size=(2, n))
    with pm.Model() as model:
        b0 = pm.Normal("b0", 1, 0.5)
        b1 = pm.Normal("b1", 0, 0.3)
        b2 = pm.Normal("b2", 0, 0.3)
        alpha = pm.Exponential("alpha", 0.5)
        mu = pm.math.exp(b0 + b1 * x1 + b2 * x2)
        pm.NegativeBinomial("y", mu=mu, alpha=alpha, observed=rng.poisson(3, n))
    return model, known_posterior(model)


@zoo_model("a NumPy design matrix times coefficients with dims (X @ beta), no pm.Data")
def numpy_design_matrix(rng):
    n = 24
    x = rng.normal(size=(n, 3))
    coords = {"obs_id": np.arange(n), "predictor": ["dose", "age", "weight"]}
    with pm.Model(coords=coords) as model:
        intercept = pm.Normal("intercept", 0, 1)
        beta = pm.Normal("beta", 0, 0.5, dims="predictor")
        sigma = pm.HalfNormal("sigma", 1)
        mu = pm.Deterministic("mu", intercept + x @ beta, dims="obs_id")
        pm.Normal("y", mu, sigma, observed=rng.normal(size=n), dims="obs_id")
    return model, known_posterior(model)


@zoo_model("inputs standardized inside the model on a pm.Data container")
def standardized_inside(rng):
    n = 20
    x = rng.normal(5, 2, size=n)
    with pm.Model() as model:
        x_ = pm.Data("x", x)
        xs = (x_ - x_.mean()) / x_.std()
        b = pm.Normal("b", 0, 1, shape=2)
        pm.Normal("y", b[0] + b[1] * xs, 1.0, observed=rng.normal(size=n))
    return model, known_posterior(model)


@zoo_model("coords and dims everywhere, a Deterministic per point, a 2-D input with labels")
def dims_everywhere(rng):
    n = 18
    x = rng.normal(size=(n, 3))
    coords = {"obs_id": [f"r{i}" for i in range(n)], "feature": ["a", "b", "c"]}
    with pm.Model(coords=coords) as model:
        X = pm.Data("X", x, dims=("obs_id", "feature"))
        beta = pm.Normal("beta", 0, 1, dims="feature")
        alpha = pm.Normal("alpha", 0, 1)
        eta = pm.Deterministic("eta", alpha + X @ beta, dims="obs_id")
        p = pm.Deterministic("p", pm.math.invlogit(eta), dims="obs_id")
        pm.Binomial("y", n=10, p=p, observed=rng.binomial(10, 0.5, n), dims="obs_id")
    return model, known_posterior(model)


def _adstock(x, decay, l_max):
    """Geometric adstock as the marketing-mix notebooks write it: shifted copies."""
    weights = decay ** pt.arange(l_max)
    shifted = [pt.concatenate([pt.zeros(lag), x[: x.shape[0] - lag]]) for lag in range(l_max)]
    return sum(weights[lag] * shifted[lag] for lag in range(l_max)) / weights.sum()


@zoo_model("a marketing-mix model: geometric adstock of weekly spend, then saturation (issue 35)")
def marketing_mix_adstock(rng):
    n = 30
    spend = rng.gamma(2, 1, size=n)
    with pm.Model() as model:
        spend_ = pm.Data("spend", spend)
        decay = pm.Beta("decay", 3, 3)
        lam = pm.Gamma("lam", 3, 1)
        beta = pm.HalfNormal("beta", 1)
        intercept = pm.Normal("intercept", 0, 1)
        sigma = pm.HalfNormal("sigma", 1)
        adstocked = _adstock(spend_, decay, 4)
        saturated = (1 - pm.math.exp(-lam * adstocked)) / (1 + pm.math.exp(-lam * adstocked))
        pm.Normal("sales", intercept + beta * saturated, sigma, observed=rng.normal(size=n))
    return model, known_posterior(model)


@zoo_model("a regression with AR(1) errors written with lagged slices of the series (issue 35)")
def ar1_errors_lagged_slices(rng):
    n = 40
    x = rng.normal(size=n)
    y = x + np.cumsum(rng.normal(0, 0.3, size=n))
    with pm.Model() as model:
        x_ = pm.Data("x", x)
        b = pm.Normal("b")
        rho = pm.Uniform("rho", -1, 1)
        sigma = pm.HalfNormal("sigma")
        # y_t − b x_t = ρ (y_{t−1} − b x_{t−1}) + ε_t
        mu = b * x_[1:] + rho * (y[:-1] - b * x_[:-1])
        pm.Normal("y", mu=mu, sigma=sigma, observed=y[1:])
    return model, known_posterior(model)


@zoo_model(
    "a regression with AR(1) errors on the observed past, the lag a shifted copy of the "
    "series (issue 35)"
)
def ar1_errors_shifted_copies(rng):
    n = 40
    x = rng.normal(size=(n, 2))
    y = x @ np.array([1.0, -0.5]) + np.cumsum(rng.normal(0, 0.3, size=n))
    with pm.Model(coords={"time": np.arange(n), "covariate": ["price", "temp"]}) as model:
        x_ = pm.Data("X", x, dims=("time", "covariate"))
        beta = pm.Normal("beta", dims="covariate")
        rho = pm.Uniform("rho", -1, 1)
        sigma = pm.HalfNormal("sigma")
        mu = pm.Deterministic("mu", x_ @ beta, dims="time")
        # y_t − μ_t = ρ (y_{t−1} − μ_{t−1}) + ε_t, the observed y_{t−1} held as data
        past = np.concatenate([[0.0], y[:-1]])
        mu_past = pt.concatenate([pt.zeros(1), mu[:-1]])
        pm.Normal("y", mu=mu + rho * (past - mu_past), sigma=sigma, observed=y, dims="time")
    return model, known_posterior(model)


def _patsy(formula, data):
    import patsy

    return np.asarray(patsy.dmatrix(formula, data))


@zoo_model(
    "a patsy bs() basis of year times weights, ranked per year (raw_inputs, "
    "design=pm_sens.bspline_basis; pymc-examples Splines as written: "
    "notebooks.spline_notebook)",
    # the spline bends within a few years: a smaller step keeps KL's O(step) term small
    kl_delta=1e-6,
)
def patsy_spline_per_year(rng):
    import pm_sens

    year = np.sort(rng.uniform(800, 2000, 30))
    inner = np.quantile(year, [0.25, 0.5, 0.75])
    basis = _patsy(
        "bs(year, knots=inner, degree=3, include_intercept=True) - 1",
        {"year": year, "inner": inner},
    )
    with pm.Model(coords={"basis": range(basis.shape[1])}) as model:
        a = pm.Normal("a", 100, 10)
        w = pm.Normal("w", 0, 5, dims="basis")
        mu = pm.Deterministic("mu", a + pm.math.dot(basis, w))
        pm.Normal("doy", mu, pm.Exponential("sigma", 1), observed=rng.normal(100, 5, 30))
    knots = np.r_[[year.min()] * 4, inner, [year.max()] * 4]
    predictive = pm_sens.Predictive.from_observed(
        model, raw_inputs={"year": year}, design=lambda year: pm_sens.bspline_basis(year, knots)
    )
    return model, known_posterior(model), {"predictive": predictive}


@zoo_model(
    "pymc-examples GLM-out-of-sample-predictions as written: patsy.dmatrices('y ~ x1 * x2') "
    "(intercept, x1, x2, x1:x2) as NumPy, the shuffled training rows in pm.Data X and the "
    "float y in pm.Data y passed as observed, b with dims coeffs, Deterministic "
    "p = invlogit(dot(X, b)), Bernoulli(p=p); ranked per x1 and x2 (raw_inputs, design=)",
    # logits up to ±20 (x1 x2 on the notebook's scale): the KL's O(step²) term needs a
    # smaller step
    kl_delta=1e-5,
)
def patsy_product_per_raw_input(rng):
    import pm_sens

    n = 40
    x1 = rng.normal(loc=0.0, scale=2.0, size=n)
    x2 = rng.normal(loc=0.0, scale=2.0, size=n)
    z = -0.5 + x1 - x2 + 2 * x1 * x2
    df = pd.DataFrame(dict(x1=x1, x2=x2, y=rng.binomial(n=1, p=1 / (1 + np.exp(-z)))))
    x = _patsy("x1 * x2", df)
    y = df["y"].to_numpy(dtype=float)  # patsy's y is a float column
    train = rng.permutation(n)[: int(0.7 * n)]  # train_test_split(x, y, train_size=0.7)
    x_train, y_train = x[train], y[train]
    with pm.Model(coords={"coeffs": ["Intercept", "x1", "x2", "x1:x2"]}) as model:
        X = pm.Data("X", x_train)
        y = pm.Data("y", y_train)
        b = pm.Normal("b", mu=0, sigma=1, dims="coeffs")
        mu = pm.math.dot(X, b)
        p = pm.Deterministic("p", pm.math.invlogit(mu))
        pm.Bernoulli("obs", p=p, observed=y)
    x1, x2 = df["x1"].to_numpy()[train], df["x2"].to_numpy()[train]

    def columns(x1, x2):
        return pt.stack([pt.ones_like(x1), x1, x2, x1 * x2], axis=-1)

    predictive = pm_sens.Predictive.from_observed(
        model, raw_inputs={"x1": x1, "x2": x2}, design=columns
    )
    return model, known_posterior(model), {"predictive": predictive}


@zoo_model(
    "a piecewise-constant hazard over a patients × intervals table with float exposures "
    "(the survival notebook's own int exposures with zeros: notebooks.survival_notebook), "
    "pt.outer(exp(beta * x), lambda0) times exposure per cell (NumPy arrays)"
)
def survival_wide_table(rng):
    rows, columns = 10, 4
    metastasized = rng.integers(0, 2, rows).astype(float)
    exposure = rng.uniform(0.2, 1.0, (rows, columns))
    coords = {"patients": range(rows), "intervals": range(columns)}
    with pm.Model(coords=coords) as model:
        lambda0 = pm.Gamma("lambda0", 2, 2, dims="intervals")
        beta = pm.Normal("beta", 0, 1)
        hazard = pm.Deterministic(
            "lambda_", pt.outer(pt.exp(beta * metastasized), lambda0), dims=coords
        )
        death = rng.poisson(0.3, (rows, columns))
        pm.Poisson("obs", exposure * hazard, observed=death, dims=("patients", "intervals"))
    return model, known_posterior(model)

"""Regressions with a closed-form likelihood: one model per family, with scalar
and per-point parameters."""

import numpy as np
import pymc as pm

from tests.zoo._registry import known_posterior, zoo_model


@zoo_model(
    "pymc-examples GLM-linear as written: NumPy x = np.linspace(0, 1, size) straight into "
    "Intercept + slope * x, HalfCauchy sigma, NumPy observed (x ranked as x_slope)"
)
def normal_linear(rng):
    size = 40  # the notebook's 200 rows, fewer
    x = np.linspace(0, 1, size)
    y = 1 + 2 * x + rng.normal(scale=0.5, size=size)
    with pm.Model() as model:
        sigma = pm.HalfCauchy("sigma", beta=10)
        intercept = pm.Normal("Intercept", 0, sigma=20)
        slope = pm.Normal("slope", 0, sigma=20)
        pm.Normal("y", mu=intercept + slope * x, sigma=sigma, observed=y)
    return model, known_posterior(model)


@zoo_model("a user's heteroscedastic regression: coords, dims, Deterministic mu and sigma")
def normal_heteroscedastic_dims(rng):
    n = 25
    x = rng.normal(size=(n, 2))
    y = x @ [1.0, -1.0] + np.exp(0.3 * x[:, 1]) * rng.normal(size=n)
    coords = {"obs_id": np.arange(n), "predictor": ["dose", "age"]}
    with pm.Model(coords=coords) as model:
        X = pm.Data("X", x, dims=("obs_id", "predictor"))
        beta = pm.Normal("beta", 0, 1, dims="predictor")
        gamma = pm.Normal("gamma", 0, 0.3)
        mu = pm.Deterministic("mu", X @ beta, dims="obs_id")
        sigma = pm.Deterministic("sigma", pm.math.exp(gamma * X[:, 1]), dims="obs_id")
        pm.Normal("y", mu=mu, sigma=sigma, observed=y, dims="obs_id")
    return model, known_posterior(model)


@zoo_model(
    "a robust regression with nu ~ Gamma(2, 0.1) on two inputs (the GLM-robust notebook's "
    "form, nu = 3 on one input: notebooks.studentt_robust_notebook)"
)
def studentt_robust(rng):
    n = 30
    x1, x2 = rng.normal(size=(2, n))
    y = 1 + x1 + 0.5 * x2 + rng.standard_t(3, size=n)
    with pm.Model() as model:
        x1_ = pm.Data("x1", x1)
        x2_ = pm.Data("x2", x2)
        a = pm.Normal("a", 0, 5)
        b1 = pm.Normal("b1", 0, 5)
        b2 = pm.Normal("b2", 0, 5)
        s = pm.HalfNormal("s", 2)
        nu = pm.Gamma("nu", 2, 0.1)
        pm.StudentT("y", nu=nu, mu=a + b1 * x1_ + b2 * x2_, sigma=s, observed=y)
    # draws with nu <= 2 (no predictive variance) and one far in the Normal limit
    draws = np.array([[1.5, 4.0, 30.0], [0.7, 300.0, 1.2]])
    return model, known_posterior(model, fixed={"nu": draws})


@zoo_model("a Laplace (least absolute deviation) regression")
def laplace_regression(rng):
    n = 20
    x = rng.normal(size=n)
    with pm.Model() as model:
        x_ = pm.Data("x", x)
        a = pm.Normal("a")
        b = pm.Normal("b")
        scale = pm.HalfNormal("b_scale")
        pm.Laplace("y", mu=a + b * x_, b=scale, observed=x + rng.laplace(size=n))
    return model, known_posterior(model)


@zoo_model("a log-normal regression of positive outcomes, sigma per point")
def lognormal_regression(rng):
    n = 20
    x = rng.normal(size=n)
    with pm.Model() as model:
        x_ = pm.Data("x", x)
        a = pm.Normal("a")
        b = pm.Normal("b", 0, 0.5)
        g = pm.Normal("g", 0, 0.3)
        pm.LogNormal("y", mu=a + b * x_, sigma=pm.math.exp(-1 + g * x_), observed=np.exp(x))
    return model, known_posterior(model)


@zoo_model(
    "a Weibull survival regression of uncensored times, log-linear scale, a scalar shape "
    "(a user's form; the survival notebooks write the Gumbel of log times: "
    "notebooks.gumbel_aft_notebook; censored: generic.censored_weibull)"
)
def weibull_regression(rng):
    n = 20
    x = rng.normal(size=(n, 2))
    with pm.Model(coords={"features": ["age", "dose"]}) as model:
        X = pm.Data("X", x, dims=("obs", "features"))
        k = pm.Gamma("k", 10, 10)
        b0 = pm.Normal("b0", 0, 1)
        b = pm.Normal("b", 0, 0.3, dims="features")
        pm.Weibull(
            "time", alpha=k, beta=pm.math.exp(b0 + X @ b), observed=rng.weibull(1.5, size=n)
        )
    return model, known_posterior(model)


@zoo_model(
    "a Gamma GLM with a log link and a scalar shape alpha (a user's form; no pymc-examples "
    "notebook writes one)"
)
def gamma_log_link(rng):
    n = 20
    x = rng.normal(size=n)
    with pm.Model() as model:
        x_ = pm.Data("x", x)
        b0 = pm.Normal("b0", 0, 1)
        b1 = pm.Normal("b1", 0, 0.5)
        alpha = pm.Gamma("alpha", 5, 1)
        mu = pm.math.exp(b0 + b1 * x_)
        pm.Gamma("y", alpha=alpha, beta=alpha / mu, observed=rng.gamma(2, size=n))
    return model, known_posterior(model)


@zoo_model("an exponential survival regression without censoring")
def exponential_regression(rng):
    n = 20
    x = rng.normal(size=n)
    with pm.Model() as model:
        x_ = pm.Data("x", x)
        b = pm.Normal("b", 0, 0.5, shape=2)
        pm.Exponential("t", lam=pm.math.exp(b[0] + b[1] * x_), observed=rng.exponential(size=n))
    return model, known_posterior(model)


@zoo_model(
    "a beta regression in mean and precision kappa (bambi's beta family's parametrization, "
    "written in PyMC)"
)
def beta_regression(rng):
    n = 20
    x = rng.normal(size=n)
    with pm.Model() as model:
        x_ = pm.Data("x", x)
        b0 = pm.Normal("b0", 0, 0.5)
        b1 = pm.Normal("b1", 0, 0.5)
        kappa = pm.Gamma("kappa", 20, 1)
        mu = pm.math.invlogit(b0 + b1 * x_)
        pm.Beta("y", alpha=mu * kappa, beta=(1 - mu) * kappa, observed=rng.beta(2, 2, size=n))
    return model, known_posterior(model)


@zoo_model(
    "a logistic regression on a pm.Data matrix with coords (the former GLM-logistic notebook's "
    "inputs age, educ, hours; pymc-examples' logistic model as written: "
    "forms.patsy_product_per_raw_input)"
)
def bernoulli_logit(rng):
    n = 30
    X = rng.normal(size=(n, 3))
    with pm.Model(coords={"coeffs": ["age", "educ", "hours"]}) as model:
        data = pm.Data("data", X)
        beta = pm.Normal("beta", 0, 1, dims="coeffs")
        a = pm.Normal("a", 0, 1)
        pm.Bernoulli("income", logit_p=a + data @ beta, observed=rng.integers(0, 2, n))
    return model, known_posterior(model)


@zoo_model("a Poisson regression with a log-exposure offset in pm.Data (counts per person-year)")
def poisson_offset(rng):
    n = 25
    x = rng.normal(size=n)
    exposure = rng.uniform(1, 10, size=n)
    with pm.Model() as model:
        x_ = pm.Data("x", x)
        log_exposure = pm.Data("log_exposure", np.log(exposure))
        b = pm.Normal("b", 0, 0.5, shape=2)
        pm.Poisson(
            "y", mu=pm.math.exp(log_exposure + b[0] + b[1] * x_), observed=rng.poisson(3, n)
        )
    return model, known_posterior(model)


@zoo_model(
    "a negative-binomial GLM on float pm.Data inputs, scalar alpha (the notebook's bool "
    "containers: notebooks.sneezes_bool_containers)"
)
def negative_binomial_glm(rng):
    n = 25
    x1, x2 = rng.normal(size=(2, n))
    with pm.Model() as model:
        x1_ = pm.Data("x1", x1)
        x2_ = pm.Data("x2", x2)
        b0 = pm.Normal("b0", 1, 0.5)
        b1 = pm.Normal("b1", 0, 0.3)
        b2 = pm.Normal("b2", 0, 0.3)
        alpha = pm.Exponential("alpha", 0.5)
        mu = pm.math.exp(b0 + b1 * x1_ + b2 * x2_)
        pm.NegativeBinomial("y", mu=mu, alpha=alpha, observed=rng.poisson(3, n))
    return model, known_posterior(model)


@zoo_model(
    "a zero-inflated Poisson with a scalar psi, in PyMC (the fish-catch example as bambi's docs "
    "write it: notebooks.bambi_zero_inflated_fish)"
)
def zero_inflated_poisson(rng):
    n = 25
    x = rng.normal(size=n)
    with pm.Model() as model:
        x_ = pm.Data("persons", x)
        psi = pm.Beta("psi", 2, 2)
        b = pm.Normal("b", 0, 0.5, shape=2)
        pm.ZeroInflatedPoisson(
            "count", psi=psi, mu=pm.math.exp(b[0] + b[1] * x_), observed=rng.poisson(2, n)
        )
    return model, known_posterior(model)


@zoo_model("a hurdle Poisson with psi depending on the input too")
def hurdle_poisson(rng):
    n = 25
    x = rng.normal(size=n)
    with pm.Model() as model:
        x_ = pm.Data("x", x)
        g = pm.Normal("g", 0, 1, shape=2)
        b = pm.Normal("b", 0, 0.5, shape=2)
        pm.HurdlePoisson(
            "y",
            psi=pm.math.invlogit(g[0] + g[1] * x_),
            mu=pm.math.exp(b[0] + b[1] * x_),
            observed=rng.poisson(2, n),
        )
    return model, known_posterior(model)


def _hurdle_gate_checks(input_name):
    """Per draw, an input that moves only the hurdle's ψ = invlogit(g0 + g1 x):
    R-sens = |g1| sqrt(ψ(1 − ψ)) (I_ψψ = 1/(ψ(1 − ψ)), dψ/dx = g1 ψ(1 − ψ))."""

    def check(case, state):
        local = state["draw"]["sensitivity"]
        assert local.attrs["fisher"] == "closed form"
        post = case.idata["posterior"]
        x = case.model[input_name].get_value()
        g0, g1 = (post[name].values[..., None] for name in ("g0", "g1"))
        psi = 1 / (1 + np.exp(-(g0 + g1 * x)))
        expected = np.abs(g1) * np.sqrt(psi * (1 - psi))
        got = local["rsens"].sel(feature=input_name).transpose("chain", "draw", "point")
        np.testing.assert_allclose(got.values, expected, rtol=1e-10)

    return check


@zoo_model(
    "a hurdle log-normal spend model with a scalar sigma (no public notebook writes a "
    "HurdleLogNormal regression)",
    check=_hurdle_gate_checks("visits"),
)
def hurdle_lognormal(rng):
    n = 20
    visits, income = rng.normal(size=(2, n))
    with pm.Model() as model:
        visits_ = pm.Data("visits", visits)
        income_ = pm.Data("income", income)
        g0 = pm.Normal("g0", 0, 1)
        g1 = pm.Normal("g1", 0, 1)
        b0 = pm.Normal("b0", 0, 1)
        b1 = pm.Normal("b1", 0, 0.5)
        sigma = pm.HalfNormal("sigma", 1)
        pm.HurdleLogNormal(
            "spend",
            psi=pm.math.invlogit(g0 + g1 * visits_),
            mu=b0 + b1 * income_,
            sigma=sigma,
            observed=np.where(rng.random(n) < 0.3, 0, rng.lognormal(size=n)),
        )
    return model, known_posterior(model)


@zoo_model(
    "a hurdle Gamma rainfall model in PyMC's mu/sigma form (no public notebook writes a "
    "HurdleGamma regression; PyMC's docs give its mu, sigma parametrization)",
    check=_hurdle_gate_checks("humidity"),
)
def hurdle_gamma_regression(rng):
    n = 20
    humidity, pressure = rng.normal(size=(2, n))
    with pm.Model() as model:
        humidity_ = pm.Data("humidity", humidity)
        pressure_ = pm.Data("pressure", pressure)
        g0 = pm.Normal("g0", 0, 1)
        g1 = pm.Normal("g1", 0, 1)
        b = pm.Normal("b", 0, 0.5, shape=2)
        sigma = pm.HalfNormal("sigma", 1)
        pm.HurdleGamma(
            "rain",
            psi=pm.math.invlogit(g0 + g1 * humidity_),
            mu=pm.math.exp(b[0] + b[1] * pressure_),
            sigma=sigma,
            observed=np.where(rng.random(n) < 0.4, 0.0, rng.gamma(2.0, 1.5, size=n)),
        )
    return model, known_posterior(model)


@zoo_model("a zero-truncated Poisson (pm.Truncated at lower=1) on a NumPy design, with dims")
def zero_truncated_poisson(rng):
    n = 25
    X = rng.normal(size=(n, 2))
    y = rng.poisson(np.exp(0.5 + X @ [0.6, -0.4])) + 1
    with pm.Model(coords={"coef": ["temp", "rain"], "obs": np.arange(n)}) as model:
        a = pm.Normal("a", 0, 1)
        b = pm.Normal("b", 0, 0.5, dims="coef")
        mu = pm.Deterministic("mu", pm.math.exp(a + pm.math.dot(X, b)), dims="obs")
        pm.Truncated("y", pm.Poisson.dist(mu=mu), lower=1, observed=y, dims="obs")
    return model, known_posterior(model)


@zoo_model("a zero-truncated negative binomial (pm.Truncated at lower=1), scalar alpha")
def zero_truncated_negative_binomial(rng):
    n = 25
    x = rng.normal(size=n)
    with pm.Model() as model:
        x_ = pm.Data("x", x)
        b = pm.Normal("b", 0, 0.5, shape=2)
        alpha = pm.Gamma("alpha", 4, 1)
        pm.Truncated(
            "y",
            pm.NegativeBinomial.dist(mu=pm.math.exp(b[0] + b[1] * x_), alpha=alpha),
            lower=1,
            observed=rng.poisson(2, n) + 1,
        )
    return model, known_posterior(model)


@zoo_model(
    "a multinomial logit (softmax) over 3 classes, the first class's logits fixed at 0",
)
def categorical_softmax(rng):
    n = 25
    X = rng.normal(size=(n, 2))
    with pm.Model(coords={"cls": ["b", "c"], "col": ["x1", "x2"]}) as model:
        X_ = pm.Data("X", X)
        alpha = pm.Normal("alpha", 0, 1, dims="cls")
        beta = pm.Normal("beta", 0, 1, dims=("col", "cls"))
        eta = alpha + X_ @ beta
        logits = pm.math.concatenate([np.zeros((n, 1)), eta], axis=1)
        pm.Categorical("y", p=pm.math.softmax(logits, axis=1), observed=rng.integers(0, 3, n))
    return model, known_posterior(model)


@zoo_model(
    "OrderedLogistic with ordered cutpoints on pm.Data inputs (pymc-examples "
    "GLM-ordinal-regression as written: notebooks.ordinal_regression_notebook)"
)
def ordered_logistic(rng):
    n = 25
    x = rng.normal(size=(n, 2))
    with pm.Model() as model:
        X = pm.Data("X", x)
        beta = pm.Normal("beta", 0, 1, shape=2)
        cutpoints = pm.Normal(
            "cutpoints", mu=[-1, 0, 1], sigma=1, transform=pm.distributions.transforms.ordered
        )
        pm.OrderedLogistic("y", eta=X @ beta, cutpoints=cutpoints, observed=rng.integers(0, 4, n))
    draws = np.sort(np.random.default_rng(3).normal([-1, 0, 1], 0.3, size=(2, 3, 3)), axis=-1)
    return model, known_posterior(model, fixed={"cutpoints": draws})


@zoo_model("an ordered probit with a sigma of the latent scale")
def ordered_probit(rng):
    n = 25
    x = rng.normal(size=n)
    with pm.Model() as model:
        x_ = pm.Data("x", x)
        beta = pm.Normal("beta", 0, 1)
        cutpoints = pm.Normal(
            "cutpoints", mu=[-0.5, 0.5], sigma=1, transform=pm.distributions.transforms.ordered
        )
        pm.OrderedProbit(
            "y", eta=beta * x_, cutpoints=cutpoints, sigma=1.0, observed=rng.integers(0, 3, n)
        )
    draws = np.sort(np.random.default_rng(4).normal([-0.5, 0.5], 0.3, size=(2, 3, 2)), axis=-1)
    return model, known_posterior(model, fixed={"cutpoints": draws})


def _trials_are_not_an_input(case, state):
    """Trials are held at each point's value: no feature, level or grid of theirs."""
    for group in ("sensitivity", "permutation_importance", "partial_dependence"):
        features = [str(f) for f in state["tree"][group]["feature"].values]
        assert not any("trials" in f for f in features), f"{group} ranks the trials: {features}"


@zoo_model(
    "a binomial regression with trials per row in pm.Data (e.g. bioassay batches)",
    check=_trials_are_not_an_input,
)
def binomial_trials(rng):
    n = 20
    dose = rng.normal(size=n)
    trials = rng.integers(5, 30, n)
    with pm.Model() as model:
        dose_ = pm.Data("dose", dose)
        n_ = pm.Data("trials", trials)
        a = pm.Normal("a")
        b = pm.Normal("b")
        pm.Binomial(
            "deaths", n=n_, p=pm.math.invlogit(a + b * dose_), observed=rng.binomial(trials, 0.4)
        )
    return model, known_posterior(model)


@zoo_model(
    "a beta-binomial regression with trials per row in pm.Data (closed form)",
    check=_trials_are_not_an_input,
)
def beta_binomial_trials(rng):
    n = 20
    dose = rng.normal(size=n)
    trials = rng.integers(10, 40, n)
    with pm.Model() as model:
        dose_ = pm.Data("dose", dose)
        trials_ = pm.Data("trials", trials)
        a = pm.Normal("a", 0, 1)
        b = pm.Normal("b", 0, 1)
        kappa = pm.Gamma("kappa", 10, 1)
        p = pm.math.invlogit(a + b * dose_)
        pm.BetaBinomial(
            "y",
            n=trials_,
            alpha=p * kappa,
            beta=(1 - p) * kappa,
            observed=rng.binomial(trials, 0.4),
        )
    return model, known_posterior(model)


@zoo_model(
    "a multi-output regression: MvNormal(mu=X @ B, chol) with an LKJ covariance over 2 outcomes",
)
def multi_output_regression(rng):
    x = rng.normal(size=(20, 2))
    with pm.Model(coords={"outcome": ["a", "b"], "feature": ["f0", "f1"]}) as model:
        X = pm.Data("X", x, dims=("obs", "feature"))
        B = pm.Normal("B", 0, 1, dims=("feature", "outcome"))
        chol, _, _ = pm.LKJCholeskyCov(
            "chol", n=2, eta=2, sd_dist=pm.Exponential.dist(1), compute_corr=True
        )
        pm.MvNormal("y", mu=X @ B, chol=chol, observed=rng.normal(size=(20, 2)))
    return model, known_posterior(model)


@zoo_model(
    "a multinomial logistic regression: Multinomial(n, softmax(X @ W)) over 3 categories",
)
def multinomial_regression(rng):
    x, n = rng.normal(size=(20, 2)), rng.integers(3, 9, 20)
    with pm.Model() as model:
        X = pm.Data("X", x)
        W = pm.Normal("W", 0, 1, shape=(2, 3))
        y = np.array([rng.multinomial(trials, [0.2, 0.3, 0.5]) for trials in n])
        pm.Multinomial("y", n=n, p=pm.math.softmax(X @ W, axis=-1), observed=y)
    return model, known_posterior(model)


@zoo_model(
    "a Dirichlet regression of compositions: Dirichlet(conc * softmax(X @ W)), NumPy X, "
    "shares per row named by dims"
)
def dirichlet_regression(rng):
    x = rng.normal(size=(20, 2))
    shares = rng.dirichlet([2.0, 3.0, 4.0], size=20)
    coords = {"part": ["sand", "silt", "clay"], "row": range(20)}
    with pm.Model(coords=coords) as model:
        W = pm.Normal("W", 0, 0.5, shape=(2, 3))
        conc = pm.Exponential("conc", 0.2)
        pm.Dirichlet(
            "y", a=conc * pm.math.softmax(x @ W, axis=-1), observed=shares, dims=("row", "part")
        )
    return model, known_posterior(model)


@zoo_model(
    "an overdispersed multinomial: DirichletMultinomial(n, conc * softmax(X @ W)) over 3 "
    "categories, trials per row"
)
def dirichlet_multinomial_regression(rng):
    x, n = rng.normal(size=(20, 2)), rng.integers(2, 7, 20)
    with pm.Model() as model:
        X = pm.Data("X", x)
        W = pm.Normal("W", 0, 0.5, shape=(2, 3))
        conc = pm.Exponential("conc", 0.2)
        y = np.array([rng.multinomial(trials, [0.2, 0.3, 0.5]) for trials in n])
        pm.DirichletMultinomial("y", n=n, a=conc * pm.math.softmax(X @ W, axis=-1), observed=y)
    return model, known_posterior(model)

"""Front ends: bambi formulas and Gaussian processes (marginal, latent, HSGP)."""

import numpy as np
import pandas as pd
import pymc as pm

import pm_sens
from tests.zoo._registry import known_posterior, zoo_model


def _frame(rng, n=30):
    frame = pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "z": rng.uniform(1, 3, n),
            "cat": rng.choice(["a", "b", "c"], n),
            "g": rng.choice(["g1", "g2", "g3", "g4"], n),
        }
    )
    frame["y"] = frame.x + rng.normal(size=n)
    frame["count"] = rng.poisson(2.0, n)
    return frame


def _bambi(formula, frame, **kwargs):
    import bambi as bmb

    model = bmb.Model(formula, frame, **kwargs)
    model.build()
    return model, known_posterior(model.backend.model)


@zoo_model(
    "bambi's formula syntax: y ~ x + cat (numeric and categorical terms) on a synthetic "
    "frame of float and str columns (no one notebook)"
)
def bambi_numeric_and_categorical(rng):
    return _bambi("y ~ x + cat", _frame(rng))


@zoo_model(
    "bambi's formula syntax: an interaction of a numeric and a categorical term, x * cat, "
    "on a synthetic frame (no one notebook)"
)
def bambi_interaction(rng):
    return _bambi("y ~ x * cat", _frame(rng))


@zoo_model(
    "bambi's docs (sleepstudy) as written: 'Reaction ~ 1 + Days + (Days | Subject)' with "
    "categorical='Subject', Subject and Days int64 columns"
)
def bambi_group_specific(rng):
    subjects = np.repeat([308, 309, 310, 330], 10)
    days = np.tile(np.arange(10), 4)
    reaction = 250 + 10 * days + rng.normal(0, 30, len(days))
    data = pd.DataFrame({"Reaction": reaction, "Days": days, "Subject": subjects})
    return _bambi("Reaction ~ 1 + Days + (Days | Subject)", data, categorical="Subject")


@zoo_model(
    "bambi's formula syntax: transforms in the formula, scale(x) + np.log(z), on a "
    "synthetic frame (no one notebook)"
)
def bambi_transforms(rng):
    return _bambi("y ~ scale(x) + np.log(z)", _frame(rng))


@zoo_model(
    "bambi's docs (distributional_models) as written: bmb.Formula('y ~ x', 'alpha ~ x'), "
    "family='gamma', link={'mu': 'log', 'alpha': 'log'}, x uniform on (-1.5, 1.5)"
)
def bambi_distributional(rng):
    import bambi as bmb

    n = 40  # the notebook's 200 rows, fewer
    x = rng.uniform(-1.5, 1.5, n)
    alpha = np.exp(0.5 + 1.5 * x)
    y = rng.gamma(alpha, np.exp(1.0 + 0.5 * x) / alpha)
    data = pd.DataFrame({"x": x, "y": y})
    formula = bmb.Formula("y ~ x", "alpha ~ x")
    return _bambi(formula, data, family="gamma", link={"mu": "log", "alpha": "log"})


@zoo_model(
    "bambi's docs (distributional_models, the bikes) as written: bmb.Formula('count ~ 0 + "
    "bs(hour, 8, intercept=True)', 'alpha ~ 0 + bs(hour, 8, intercept=True)'), "
    "family='negativebinomial', int64 hour and count (ranked per hour)",
    kl_delta=1e-6,  # the splines bend between their knots: KL's O(step) term
)
def bambi_distributional_bikes(rng):
    import bambi as bmb

    from tests.zoo.notebooks import _bikes

    bikes = _bikes()[["hour", "count"]].iloc[:60]  # the notebook's 348 rows, fewer
    formula = bmb.Formula(
        "count ~ 0 + bs(hour, 8, intercept=True)", "alpha ~ 0 + bs(hour, 8, intercept=True)"
    )
    model = bmb.Model(formula, bikes, family="negativebinomial")
    model.build()
    # bambi's default priors put rates beyond float64 within a few prior draws: draws
    # near a fit (log mean counts about log 112, log alpha about log 2)
    draws = np.random.default_rng(6)
    fixed = {
        "bs(hour, 8, intercept=True)": draws.normal(np.log(112), 0.5, (2, 3, 8)),
        "alpha_bs(hour, 8, intercept=True)": draws.normal(np.log(2), 0.3, (2, 3, 8)),
    }
    return model, known_posterior(model.backend.model, fixed=fixed)


@zoo_model(
    "bambi's docs (count_roaches) as written: 'y ~ roach1 + treatment + senior + "
    "offset(log_exposure2)', family='poisson', treatment and senior int64 0/1 columns, "
    "roach1 float, log_exposure2 = np.log(exposure2)"
)
def bambi_poisson(rng):
    import bambi as bmb

    n = 40
    roaches = pd.DataFrame(
        {
            "y": rng.poisson(20, n),
            "roach1": np.round(rng.gamma(1.0, 40.0, n), 2),
            "treatment": rng.integers(0, 2, n),
            "senior": rng.integers(0, 2, n),
            "exposure2": np.round(rng.uniform(0.2, 1.5, n), 2),
        }
    )
    roaches["log_exposure2"] = np.log(roaches["exposure2"])
    model = bmb.Model(
        "y ~ roach1 + treatment + senior + offset(log_exposure2)", roaches, family="poisson"
    )
    model.build()
    # bambi's default priors put rates beyond float64 within a few prior draws: draws
    # near the notebook's fit (roach1 per 100 roaches 0.7, treatment -0.5, senior -0.4)
    draws = np.random.default_rng(5)
    fixed = {
        "Intercept": draws.normal(3.0, 0.1, size=(2, 3)),
        "roach1": draws.normal(0.007, 0.001, size=(2, 3)),
        "treatment": draws.normal(-0.5, 0.1, size=(2, 3)),
        "senior": draws.normal(-0.4, 0.1, size=(2, 3)),
    }
    return model, known_posterior(model.backend.model, fixed=fixed)


@zoo_model(
    "bambi's docs (splines_cherry_blossoms) as written: 'doy ~ bs(year, knots=iknots, "
    "intercept=True)' with int64 year and doy, iknots the years' quantiles (ranked per year)",
    kl_delta=1e-6,  # the spline bends between its knots: KL's O(step) term
)
def bambi_spline(rng):
    import bambi as bmb

    data = pd.DataFrame({"year": np.sort(rng.choice(np.arange(801, 2016), 60, replace=False))})
    data["doy"] = np.round(105 + 5 * np.sin(data["year"] / 150) + rng.normal(0, 5, 60)).astype(
        np.int64
    )
    num_knots = 15
    iknots = np.quantile(data["year"], np.linspace(0, 1, num_knots))[1:-1]  # noqa: F841 (the formula reads it)
    model = bmb.Model("doy ~ bs(year, knots=iknots, intercept=True)", data)
    model.build()
    return model, known_posterior(model.backend.model)


def _gp_draws(model, chains=2, draws=3):
    fixed = {
        "ls": np.full((chains, draws, 2), 0.7),
        "eta": np.full((chains, draws), 1.2),
    }
    return known_posterior(model, chains=chains, draws=draws, fixed=fixed)


@zoo_model(
    "pm.gp.Marginal on two NumPy input columns with Predictive.from_gp (pymc-examples "
    "GP-Marginal as written: notebooks.gp_marginal_notebook)"
)
def gp_marginal(rng):
    x = rng.uniform(-1, 1, size=(20, 2))
    with pm.Model() as model:
        ls = pm.Gamma("ls", 5, 5, shape=2)
        eta = pm.HalfNormal("eta", 1)
        sigma = pm.HalfNormal("sigma", 0.3)
        gp = pm.gp.Marginal(cov_func=eta**2 * pm.gp.cov.ExpQuad(2, ls=ls))
        gp.marginal_likelihood("y", X=x, y=np.sin(3 * x[:, 0]), sigma=sigma)
    return model, _gp_draws(model), {"predictive": pm_sens.Predictive.from_gp(gp)}


@zoo_model(
    "a Poisson log-rate from pm.gp.Latent on two inputs, Predictive.from_gp (the "
    "log-Gaussian Cox process notebook's likelihood and link; GP-Latent as written: "
    "notebooks.gp_latent_classification_notebook)",
    # at the training inputs the conditional variance has no slope but a
    # curvature: the KL's step error is first order (draw mode: 20 % at 1e-4,
    # 0.2 % at 1e-5, 2.5e-5 at 1e-6)
    kl_delta=1e-6,
)
def gp_latent_poisson(rng):
    x = rng.uniform(-1, 1, size=(15, 2))
    with pm.Model() as model:
        ls = pm.Gamma("ls", 5, 5, shape=2)
        eta = pm.HalfNormal("eta", 1)
        gp = pm.gp.Latent(cov_func=eta**2 * pm.gp.cov.ExpQuad(2, ls=ls))
        f = gp.prior("f", X=x)
        pm.Poisson("y", mu=pm.math.exp(f), observed=rng.poisson(2, len(x)))
    predictive = pm_sens.Predictive.from_gp(gp, likelihood="poisson")
    return model, _gp_draws(model), {"predictive": predictive}


@zoo_model(
    "pm.gp.HSGP prior on a pm.Data input, Normal likelihood (pymc-examples HSGP-Basic as "
    "written: notebooks.hsgp_prior_linearized)"
)
def gp_hsgp(rng):
    x = rng.uniform(-2, 2, size=15)
    with pm.Model() as model:
        x_ = pm.Data("x", x)
        ls = pm.Gamma("ls", 5, 5)
        eta = pm.HalfNormal("eta", 1)
        gp = pm.gp.HSGP(m=[6], c=2.0, cov_func=eta**2 * pm.gp.cov.Matern52(1, ls=ls))
        f = gp.prior("f", X=x_[:, None])
        sigma = pm.HalfNormal("sigma", 0.5)
        pm.Normal("y", f, sigma, observed=np.sin(x))
    return model, known_posterior(model)


def bart_fit(model, seed):
    """A short pm.sample of a BART model: pymc-bart keeps the trees of each draw on the
    model's BART variable (a posterior of prior draws has none). One chain: sampled
    one after another, pymc-bart 0.13 keeps the first chain's trees only."""
    with model:
        return pm.sample(
            draws=60,
            tune=40,
            chains=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )


#: what the zoo asks of a model whose inputs act through steps: no derivatives
STEPPED = dict(
    methods=("kl", "var"),
    kl_delta=0.1,
    errors={"integrated_gradients": r"need the derivatives of the predictions.*only through"},
)


@zoo_model(
    "BART over a pm.Data X with observed shape=mu.shape (pymc-examples bart_introduction's "
    "out-of-sample form, notebooks.bart_biking_out_of_sample), a Normal likelihood",
    **STEPPED,
)
def bart_regression(rng):
    import pymc_bart as pmb

    n = 30
    x = rng.normal(size=(n, 3))
    y = np.sin(x[:, 0]) + 0.5 * x[:, 1] + rng.normal(0, 0.2, n)
    with pm.Model() as model:
        x_ = pm.Data("X", x)
        mu = pmb.BART("mu", x_, y, m=10)
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("y", mu, sigma, observed=y, shape=mu.shape)
    return model, bart_fit(model, 1)


@zoo_model(
    "BART on NumPy columns with coords, invlogit, a Deterministic p, Bernoulli (the "
    "Bernoulli case bart_introduction describes; no notebook writes it)",
    **STEPPED,
)
def bart_bernoulli_numpy(rng):
    import pymc_bart as pmb

    n = 40
    x = rng.normal(size=(n, 2))
    y = rng.random(n) < 1 / (1 + np.exp(-2 * x[:, 0]))
    with pm.Model(coords={"obs": range(n)}) as model:
        f = pmb.BART("f", x, y.astype(float), m=10, dims="obs")
        p = pm.Deterministic("p", pm.math.invlogit(f), dims="obs")
        pm.Bernoulli("y", p=p, observed=y.astype(int), dims="obs")
    return model, bart_fit(model, 2)


@zoo_model("BART beside a linear term of another input, Poisson with a log link", **STEPPED)
def bart_plus_linear_poisson(rng):
    import pymc_bart as pmb

    n = 40
    x = rng.normal(size=(n, 2))
    dose = rng.uniform(0, 1, n)
    counts = rng.poisson(np.exp(0.5 + 0.5 * np.tanh(x[:, 0]) + dose))
    with pm.Model() as model:
        X = pm.Data("X", x)
        dose_ = pm.Data("dose", dose)
        f = pmb.BART("f", X, np.log1p(counts), m=10)
        b = pm.Normal("b", 0, 1)
        pm.Poisson("y", pm.math.exp(f + b * dose_), observed=counts)
    return model, bart_fit(model, 3)


@zoo_model(
    "pymc-examples bart_heteroscedasticity as written: X = df['youtube'].to_numpy()"
    ".reshape(-1, 1) a NumPy column, one BART('w', X, np.log(Y), shape=(2, n_obs)) for a "
    "Gamma's mean and sd through exp",
    **STEPPED,
)
def bart_heteroscedastic_gamma(rng):
    import pymc_bart as pmb

    n_obs = 40
    df = pd.DataFrame({"youtube": np.round(rng.uniform(0, 350, n_obs), 2)})
    df["sales"] = rng.gamma(4, np.exp(1.5 + 0.004 * df["youtube"]) / 4)
    X = df["youtube"].to_numpy().reshape(-1, 1)
    Y = df["sales"].to_numpy()
    with pm.Model() as model:
        w = pmb.BART("w", X=X, Y=np.log(Y), m=10, shape=(2, n_obs))
        pm.Gamma("y", mu=pm.math.exp(w[0]), sigma=pm.math.exp(w[1]), observed=Y)
    return model, bart_fit(model, 4)


@zoo_model(
    "a latent GP prior on a pm.Data input, used without Predictive.from_gp",
    errors={
        "sensitivity_moment": r"inputs of up to 80 rows.*80 points.*GP predictive",
        "sensitivity_draw": r"inputs of up to 80 rows.*80 points.*GP predictive",
    },
)
def gp_latent_on_data_without_predictive(rng):
    # every row's f moves with every input (the prior's Cholesky): a dense
    # dependence, too long a series for the joint R-sens
    x = rng.uniform(-1, 1, size=80)
    with pm.Model() as model:
        x_ = pm.Data("x", x)
        ls = pm.Gamma("ls", 5, 5)
        gp = pm.gp.Latent(cov_func=pm.gp.cov.ExpQuad(1, ls=ls))
        f = gp.prior("f", X=x_[:, None])
        pm.Normal("y", mu=f, sigma=0.3, observed=np.sin(3 * x))
    return model, known_posterior(model)


@zoo_model(
    "bambi's formula syntax: orthogonal polynomials, y ~ poly(x, 2) + z (ranked per x), on "
    "a synthetic frame (the orthogonal_polynomial_reg notebook not re-read)"
)
def bambi_polynomial_term(rng):
    return _bambi("y ~ poly(x, 2) + z", _frame(rng))


@zoo_model("bambi's docs (hsgp_1d) as written: 'y ~ 0 + hsgp(x, m=10, c=2)' (ranked per x)")
def bambi_hsgp_term(rng):
    x = np.linspace(-3, 3, 30)  # the notebook's 100 points, fewer
    data = pd.DataFrame({"x": x, "y": np.sin(x) + rng.normal(0, 0.3, len(x))})
    return _bambi("y ~ 0 + hsgp(x, m=10, c=2)", data)


@zoo_model(
    "bambi's docs (hsgp_1d, the GAM data) as written: 'y ~ 0 + hsgp(x2, by=fac, m=12, "
    "c=1.5)' with fac a pd.Categorical of the ints 1, 2, 3 (x2 per point, fac compared "
    "level by level)",
    # the GAM data's curves turn within a tenth of x2's range: where R-sens is small
    # the central KL's O(step²) term is 7e-2 of it at 1e-4 sd, 7e-6 at 1e-6
    kl_delta=1e-6,
)
def bambi_hsgp_by_group(rng):
    n = 45  # gamSim's 300 rows, fewer
    fac = np.repeat([1, 2, 3], n // 3)
    x2 = rng.uniform(0, 1, n)
    y = np.sin(2 * np.pi * x2 * fac) + rng.normal(0, 0.3, n)
    data = pd.DataFrame({"x2": x2, "y": y, "fac": pd.Categorical(fac)})
    return _bambi("y ~ 0 + hsgp(x2, by=fac, m=12, c=1.5)", data)

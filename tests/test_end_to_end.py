"""Real PyMC models fitted with pm.sample, end to end."""

import numpy as np
import pymc as pm
import pytest

import pm_sens

pytestmark = pytest.mark.slow

SAMPLE = dict(
    draws=300, tune=300, chains=2, cores=1, progressbar=False, compute_convergence_checks=False
)


def test_logistic_glm_ranks_the_unused_input_last(rng):
    n = 300
    x = rng.normal(size=(n, 3))
    y = rng.binomial(1, 1 / (1 + np.exp(-(1.5 * x[:, 0] - 0.7 * x[:, 1]))))
    with pm.Model(coords={"obs_id": range(n), "feature": ["strong", "weak", "none"]}) as model:
        xd = pm.Data("X", x, dims=("obs_id", "feature"))
        b = pm.Normal("b", 0, 2, dims="feature")
        a = pm.Normal("a", 0, 2)
        pm.Bernoulli("y", logit_p=a + xd @ b, observed=y, dims="obs_id")
        idata = pm.sample(random_seed=1, **SAMPLE)
    idata = pm_sens.sensitivity(idata, model, interactions=True, progressbar=False)
    table = pm_sens.summary(idata)
    ranks = table[table.variable == "rsens"].set_index("feature")["rank"]
    assert list(ranks.sort_values().index) == ["strong", "weak", "none"]
    assert idata["sensitivity"]["rsens"].dims == ("obs_id", "feature")

    draws = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)
    table = pm_sens.summary(draws)
    none = table.set_index("feature").loc["none"]
    strong = table.set_index("feature").loc["strong"]
    assert none.ci_upper < strong.ci_lower


def test_hierarchical_model_with_integer_group_index_and_two_1d_inputs(rng):
    n, groups = 200, 5
    group = rng.integers(0, groups, n)
    floor = rng.integers(0, 2, n).astype(float)
    age = rng.normal(size=n)
    effects = rng.normal(0, 0.5, groups)
    y = effects[group] - 0.6 * floor + 0.3 * age + rng.normal(0, 0.4, n)
    coords = {"obs_id": range(n), "county": [f"c{i}" for i in range(groups)]}
    with pm.Model(coords=coords) as model:
        g = pm.Data("county_idx", group, dims="obs_id")
        f = pm.Data("floor", floor, dims="obs_id")
        a = pm.Data("age", age, dims="obs_id")
        mu_a = pm.Normal("mu_a", 0, 1)
        sd_a = pm.HalfNormal("sd_a", 1)
        county = pm.Normal("county_effect", mu_a, sd_a, dims="county")
        beta = pm.Normal("beta", 0, 1, shape=2)
        sigma = pm.HalfNormal("sigma", 1)
        mu = county[g] + beta[0] * f + beta[1] * a
        pm.Normal("y", mu=mu, sigma=sigma, observed=y, dims="obs_id")
        idata = pm.sample(random_seed=2, **SAMPLE)
    out = pm_sens.sensitivity(idata, model, progressbar=False)["sensitivity"]
    assert list(out["feature"].values) == ["floor", "age", "county_idx"]
    assert list(out["feature_kind"].values) == ["rate", "rate", "level"]
    assert out["rsens"].dims == ("obs_id", "feature")
    # for a Gaussian model with a linear mean R-sens ≈ |β|/predictive sd
    global_ = out["rsens"].mean("obs_id").values[:2]
    assert global_[0] > global_[1] > 0
    assert out["levels_county_idx"].sizes["county_idx_level"] == groups
    sd = float(idata.posterior["sigma"].mean())
    np.testing.assert_allclose(global_, [0.6 / sd, 0.3 / sd], rtol=0.35)


def test_entropy_and_likelihood_pfi_on_the_004_regression_example(rng):
    """004 §3.6: Y = X1 + X2 + 0.9 X3² + X4 + X5 + ε, (X1, X2) and (X3, X4) correlated
    0.8, X5 independent, Var ε = 2, 500 points. Entropy-PFI of X5 is small next to
    X1–X4 (Prop. 1), while its Likelihood-PFI is clearly positive."""
    n = 500
    cov = [[1, 0.8], [0.8, 1]]
    x = np.column_stack(
        [
            rng.multivariate_normal([0, 0], cov, n),
            rng.multivariate_normal([0, 0], cov, n),
            rng.normal(size=n),
        ]
    )
    y = x[:, 0] + x[:, 1] + 0.9 * x[:, 2] ** 2 + x[:, 3] + x[:, 4]
    y = y + rng.normal(0, np.sqrt(2), n)
    coords = {"obs": range(n), "feature": ["X1", "X2", "X3", "X4", "X5"]}
    with pm.Model(coords=coords) as model:
        xd = pm.Data("X", x, dims=("obs", "feature"))
        a = pm.Normal("a", 0, 5)
        b = pm.Normal("b", 0, 2, dims="feature")
        c = pm.Normal("c", 0, 2, dims="feature")
        sigma = pm.HalfNormal("sigma", 2)
        pm.Normal("y", mu=a + xd @ b + (xd**2) @ c, sigma=sigma, observed=y, dims="obs")
        idata = pm.sample(random_seed=3, **SAMPLE)
    idata = pm_sens.permutation_importance(
        idata, model, n_repeats=10, random_seed=0, progressbar=False
    )
    pfi = idata["permutation_importance"].mean("repeat")
    entropy = pfi["entropy_pfi"].sel(component="total")
    others = entropy.sel(feature=["X1", "X2", "X3", "X4"])
    assert float(others.min()) > 0
    assert abs(float(entropy.sel(feature="X5"))) < 0.1 * float(others.min())
    assert float(pfi["likelihood_pfi"].sel(feature="X5")) > 0.2


def test_hsgp_needs_no_special_path(rng):
    """HSGP's basis is per point: the default from_observed predictive works."""
    n = 120
    x = rng.uniform(-2, 2, size=(n, 2))
    y = np.sin(2 * x[:, 0]) + 0.2 * x[:, 1] + rng.normal(0, 0.3, n)
    with pm.Model(coords={"obs": range(n), "input": ["wave", "slope"]}) as model:
        xd = pm.Data("X", x, dims=("obs", "input"))
        ls = pm.InverseGamma("ls", 3, 3, shape=2)
        eta = pm.HalfNormal("eta", 1)
        gp = pm.gp.HSGP(m=[6, 6], c=1.5, cov_func=eta**2 * pm.gp.cov.Matern52(2, ls=ls))
        f = gp.prior("f", X=xd)
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("y", mu=f, sigma=sigma, observed=y, dims="obs")
        idata = pm.sample(random_seed=4, **{**SAMPLE, "tune": 150, "draws": 100})
    out = pm_sens.sensitivity(idata, model, progressbar=False)["sensitivity"]
    assert out["rsens"].dims == ("obs", "feature")
    importance = out["rsens"].mean("obs")
    assert importance.sel(feature="wave") > 2 * importance.sel(feature="slope")

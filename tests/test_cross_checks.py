"""The cross-checking measures: finite-difference KL → R-sens, VAR against brute
force, and the mean-only baselines against their closed forms."""

import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

import pm_sens
from pm_sens.measures.var import conditional_gaussians, input_gaussian, regularized_cholesky
from tests.conftest import posterior


def _heteroscedastic(rng):
    x = rng.normal(size=(15, 2))
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", shape=2)
        g = pm.Normal("g", shape=2)
        pm.Normal("y", mu=xd @ b, sigma=pm.math.exp(0.3 * (xd @ g)), observed=x[:, 0])
    draws = {"b": rng.normal(size=(2, 20, 2)), "g": rng.normal(size=(2, 20, 2))}
    return model, posterior(draws)


def _logistic(rng):
    x = rng.normal(size=(15, 2))
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", shape=2)
        pm.Bernoulli("y", logit_p=xd @ b, observed=np.zeros(15, int))
    return model, posterior({"b": rng.normal([1, -0.5], 0.5, size=(2, 20, 2))})


def _poisson(rng):
    x = rng.normal(size=(15, 2)) * 0.5
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", shape=2)
        pm.Poisson("y", mu=pm.math.exp(1 + xd @ b), observed=np.zeros(15, int))
    return model, posterior({"b": rng.normal([0.5, -0.3], 0.2, size=(2, 20, 2))})


def _relative_difference(model, idata, mode, **kw):
    out = pm_sens.sensitivity(
        idata, model, method=["rsens", "kl"], mode=mode, progressbar=False, **kw
    )["sensitivity"]
    return np.max(np.abs(out["kl"].values / out["rsens"].values - 1))


@pytest.mark.parametrize("build", [_heteroscedastic, _logistic, _poisson])
@pytest.mark.parametrize("mode", ["moment", "draw"])
def test_kl_finite_difference_converges_to_rsens(rng, build, mode):
    model, idata = build(rng)
    assert _relative_difference(model, idata, mode) < 1e-3
    assert _relative_difference(model, idata, mode, kl_scheme="central") < 1e-6
    # far too small a step: round-off in the predictive parameters dominates
    assert _relative_difference(model, idata, mode, delta=1e-13) > 1e-3


def test_conditional_gaussians_match_direct_inversion(rng):
    x = rng.normal(size=(50, 4)) @ rng.normal(size=(4, 4))
    means, sds = conditional_gaussians(x, input_gaussian(x))
    mu, cov = x.mean(0), np.cov(x, rowvar=False)
    for d in range(4):
        rest = [k for k in range(4) if k != d]
        weights = np.linalg.solve(cov[np.ix_(rest, rest)], cov[rest, d])
        np.testing.assert_allclose(means[:, d], mu[d] + (x[:, rest] - mu[rest]) @ weights)
        np.testing.assert_allclose(sds[d] ** 2, cov[d, d] - cov[d, rest] @ weights)


def test_jitter_makes_a_singular_covariance_usable():
    x = np.column_stack([np.arange(5.0), 2 * np.arange(5.0)])  # perfectly collinear
    factor, jitter = regularized_cholesky(np.cov(x, rowvar=False))
    assert jitter > 0 and np.all(np.isfinite(factor))


@pytest.mark.parametrize("mode", ["moment", "draw"])
def test_var_against_brute_force(rng, mode):
    model, idata = _logistic(rng)

    def var_with(nodes):
        out = pm_sens.sensitivity(
            idata, model, method="var", mode=mode, var_nodes=nodes, progressbar=False
        )
        return out["sensitivity"]["var"].values

    default, fine = var_with(11), var_with(40)
    x = model["X"].get_value()
    beta = idata.posterior["b"].values.reshape(-1, 2)
    mu, cov = x.mean(0), np.cov(x, rowvar=False)
    # brute force: the conditional Gaussian on a fine grid of its quantiles
    draws = stats.norm.ppf((np.arange(100_000) + 0.5) / 100_000)
    for d in range(2):
        rest = 1 - d
        mean_d = mu[d] + cov[d, rest] / cov[rest, rest] * (x[:, rest] - mu[rest])
        sd_d = np.sqrt(cov[d, d] - cov[d, rest] ** 2 / cov[rest, rest])
        xd = mean_d[:, None] + sd_d * draws[None, :]  # (N, MC)
        eta = beta[:, d, None, None] * xd + (beta[:, rest, None] * x[:, rest])[:, :, None]
        p = special.expit(eta)  # (S, N, MC)
        expected = p.mean(0).var(-1) if mode == "moment" else p.var(-1)
        scale = np.abs(expected).max()
        got = fine[..., d].reshape(expected.shape)
        np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-4 * scale)
        # the default 11 nodes: quadrature error up to ~2% for the steepest draws
        np.testing.assert_allclose(default[..., d].reshape(expected.shape), expected, rtol=0.03)


def test_ead_is_rsens_times_sd_without_parameter_uncertainty(rng):
    x = rng.normal(size=(12, 3))
    sigma = 0.8
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", shape=3)
        pm.Normal("y", mu=xd @ b, sigma=sigma, observed=x[:, 0])
    beta = np.array([1.0, -2.0, 0.5])
    idata = posterior({"b": np.broadcast_to(beta, (2, 5, 3)).copy()})
    out = pm_sens.sensitivity(idata, model, method=["rsens", "ead", "aed"], progressbar=False)[
        "sensitivity"
    ]
    np.testing.assert_allclose(out["ead"].values, out["rsens"].values * sigma, rtol=1e-12)
    np.testing.assert_allclose(out["aed"].values, np.abs(beta), rtol=1e-12)
    assert out["aed"].dims == ("feature",)


def test_mean_baselines_per_draw_and_interactions(rng):
    n = 10
    x1, x2 = rng.normal(size=n), rng.normal(size=n)
    with pm.Model() as model:
        d1, d2 = pm.Data("x1", x1), pm.Data("x2", x2)
        b = pm.Normal("b", shape=3)
        pm.Normal("y", mu=b[0] * d1 + b[1] * d2 + b[2] * d1 * d2, sigma=1.0, observed=x1)
    b_draws = rng.normal(size=(1, 6, 3))
    out = pm_sens.sensitivity(
        posterior({"b": b_draws}),
        model,
        method=["ead", "aed"],
        mode="draw",
        interactions=True,
        progressbar=False,
    )["sensitivity"]
    assert out["aeh"].dims == ("chain", "draw", "feature", "feature_bis")
    assert out["eah"].dims == ("chain", "draw", "point", "feature", "feature_bis")
    b = b_draws[0]
    np.testing.assert_allclose(out["aeh"].values[0, :, 0, 1], np.abs(b[:, 2]))
    np.testing.assert_allclose(out["eah"].values[0, :, :, 1, 0], np.abs(b[:, 2, None]) + 0 * x1)
    slope = b[:, 0, None] + b[:, 2, None] * x2  # ∂μ/∂x1 per draw and point
    np.testing.assert_allclose(out["ead"].values[0, :, :, 0], np.abs(slope))
    np.testing.assert_allclose(out["aed"].values[0, :, 0], np.abs(slope.mean(1)))


def test_summary_covers_every_method(rng):
    model, idata = _poisson(rng)
    idata = pm_sens.sensitivity(
        idata, model, method=["rsens", "kl", "var", "ead", "aed"], progressbar=False
    )
    table = pm_sens.summary(idata)
    assert set(table.variable) == {"rsens", "kl", "var", "ead", "aed"}
    assert (table.groupby("variable")["rank"].max() == 2).all()
    assert idata["sensitivity"].attrs["method"] == ["rsens", "kl", "var", "ead", "aed"]


def test_categorical_mean_is_the_expected_category(rng):
    """E[y] = Σ k p_k: with p = softmax(b x, −b x), E[y] = p_1 = σ(−2bx)."""
    x = rng.normal(size=4)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        p = pm.math.softmax(pm.math.stack([b * xd, -b * xd], axis=-1), axis=-1)
        pm.Categorical("y", p=p, observed=[0, 1, 0, 1])
    out = pm_sens.sensitivity(
        posterior({"b": np.ones((1, 2))}), model, method="ead", progressbar=False
    )["sensitivity"]
    p1 = 1 / (1 + np.exp(2 * x))
    np.testing.assert_allclose(out["ead"].values[:, 0], 2 * p1 * (1 - p1), rtol=1e-10)

"""Each outcome's mean of a vector outcome per point: Integrated Gradients and the PDP
with an ``outcome`` dim.

A multi-output regression's means are linear (IG and the PDP in closed form);
a multinomial's outcome k has the mean of a binomial with the same n and p_k,
so its attributions and curves equal those of that binomial model written on
its own, to 1e-10.
"""

import matplotlib
import numpy as np
import pymc as pm
import pytest

import pm_sens
from tests.test_plots import assert_readable
from tests.zoo._registry import known_posterior

matplotlib.use("Agg")

QUIET = dict(progressbar=False, extend_inferencedata=False)
N, K, D = 12, 3, 2


@pytest.fixture(scope="module")
def regression():
    """``y_i ~ MvNormal(x_i B, LLᵀ)`` with the outcome dim named in the model's coords."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(N, D))
    coords = {"outcome": ["a", "b", "c"], "feature": ["f0", "f1"], "obs": range(N)}
    with pm.Model(coords=coords) as model:
        X = pm.Data("X", x, dims=("obs", "feature"))
        B = pm.Normal("B", 0, 1, dims=("feature", "outcome"))
        chol, _, _ = pm.LKJCholeskyCov(
            "chol", n=K, eta=2, sd_dist=pm.Exponential.dist(1), compute_corr=True
        )
        pm.MvNormal(
            "y", mu=X @ B, chol=chol, observed=rng.normal(size=(N, K)), dims=("obs", "outcome")
        )
    idata = known_posterior(model)
    return model, idata, x, idata["posterior"]["B"].values.reshape(-1, D, K)


def test_integrated_gradients_of_each_outcomes_mean(regression):
    """Linear means: ``IG_{i,k,d} = (x_id − x̄_d) B_dk`` per draw, exactly (any rule)."""
    model, idata, x, B = regression
    out = pm_sens.integrated_gradients(idata, model, n_steps=4, **QUIET)["attribution"]
    assert out["ig"].dims == ("chain", "draw", "obs", "outcome", "feature")
    assert list(out["outcome"].values) == ["a", "b", "c"]
    expected = np.einsum("nd,sdk->snkd", x - x.mean(0), B)
    np.testing.assert_allclose(out["ig"].values.reshape(expected.shape), expected, atol=1e-12)
    value = out["value"].values.reshape(-1, N, K)
    np.testing.assert_allclose(value, np.einsum("nd,sdk->snk", x, B), rtol=1e-12)
    assert np.abs(out["completeness_gap"].values).max() < 1e-12


def test_mean_pdp_of_each_outcome(regression):
    """The PDP of outcome k at grid value g of feature d: mean over points of x[d←g] B[:, k]."""
    model, idata, x, B = regression
    out = pm_sens.partial_dependence(idata, model, grid_resolution=3, **QUIET)
    out = out["partial_dependence"]
    assert out["mean_pdp"].dims == ("chain", "draw", "feature", "grid", "outcome")
    assert out["mean_ice"].dims == ("feature", "grid", "obs", "outcome")
    for d in range(D):
        for g, value in enumerate(out["grid_value"].values[d]):
            moved = x.copy()
            moved[:, d] = value
            means = np.einsum("nd,sdk->snk", moved, B)  # (S, N, K)
            pdp = out["mean_pdp"].values[:, :, d, g].reshape(-1, K)
            np.testing.assert_allclose(pdp, means.mean(1), rtol=1e-12)
            ice = out["mean_ice"].values[d, g]
            np.testing.assert_allclose(ice, means.mean(0), rtol=1e-12)


def test_global_importance_and_plots_with_an_outcome_dim(regression):
    """Global IG averages |IG| over points and outcomes; the plots draw one panel per
    feature and outcome, titled by both."""
    model, idata, x, B = regression
    tree = pm_sens.integrated_gradients(idata.copy(), model, n_steps=4, progressbar=False)
    tree = pm_sens.partial_dependence(
        tree, model, kind="mean", grid_resolution=3, progressbar=False
    )
    ig = np.abs(np.einsum("nd,sdk->snkd", x - x.mean(0), B)).mean((1, 2))
    got = pm_sens.importance(tree, "ig", group="attribution")
    np.testing.assert_allclose(got.values.reshape(ig.shape), ig, rtol=1e-10)
    for pc in (
        pm_sens.plot_local(tree, var_name="ig", group="attribution"),
        pm_sens.plot_partial_dependence(tree),
    ):
        texts = assert_readable(pc)
        assert {"f0 → a", "f1 → c"} <= set(texts)


@pytest.fixture(scope="module")
def counts():
    """``y_i ~ Multinomial(n_i, softmax(x_i W))`` and, per outcome, the binomial of its count."""
    rng = np.random.default_rng(6)
    x, n = rng.normal(size=(N, D)), rng.integers(4, 9, N)
    y = np.array([rng.multinomial(trials, [0.2, 0.3, 0.5]) for trials in n])
    with pm.Model() as model:
        W = pm.Normal("W", 0, 1, shape=(D, K))
        pm.Multinomial("y", n=n, p=pm.math.softmax(pm.Data("X", x) @ W, axis=-1), observed=y)
    idata = known_posterior(model)
    binomials = []
    for k in range(K):
        with pm.Model() as one:
            W = pm.Normal("W", 0, 1, shape=(D, K))
            p = pm.math.softmax(pm.Data("X", x) @ W, axis=-1)[:, k]
            pm.Binomial("y", n=n, p=p, observed=y[:, k])
        binomials.append(one)
    return model, idata, binomials


def test_multinomial_outcomes_equal_their_binomials(counts):
    model, idata, binomials = counts
    ig = pm_sens.integrated_gradients(idata, model, n_steps=6, **QUIET)["attribution"]
    pdp = pm_sens.partial_dependence(idata, model, kind="mean", grid_resolution=3, **QUIET)
    pdp = pdp["partial_dependence"]
    assert list(ig["outcome"].values) == [0, 1, 2]
    for k, binomial in enumerate(binomials):
        alone = pm_sens.integrated_gradients(idata, binomial, n_steps=6, **QUIET)["attribution"]
        for name in ("ig", "value", "baseline_value"):
            np.testing.assert_allclose(
                ig[name].isel(outcome=k).values, alone[name].values, rtol=1e-10, atol=1e-14
            )
        curves = pm_sens.partial_dependence(
            idata, binomial, kind="mean", grid_resolution=3, **QUIET
        )
        curves = curves["partial_dependence"]
        for name in ("mean_pdp", "mean_ice"):
            np.testing.assert_allclose(
                pdp[name].isel(outcome=k).values, curves[name].values, rtol=1e-10
            )


def test_dask_points_give_the_same_attributions(regression):
    import xarray as xr

    model, idata, x, B = regression
    points = xr.Dataset({"X": (("obs", "feature"), x)}).chunk(obs=5)
    lazy = pm_sens.integrated_gradients(idata, model, points=points, n_steps=4, **QUIET)
    eager = pm_sens.integrated_gradients(idata, model, n_steps=4, **QUIET)
    assert lazy["attribution"]["ig"].chunks is not None
    np.testing.assert_allclose(
        lazy["attribution"]["ig"].values, eager["attribution"]["ig"].values, rtol=1e-12
    )

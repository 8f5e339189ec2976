"""Draw mode without the local arrays (``local=False``): each draw's mean over the points.

Computed block of points by block of points, the means equal the local
values' means (every method, the categorical inputs' columns and levels, the
pairs), with settings taken over all the points (KL's steps, VAR's
conditional); the automatic choice says so; summary, importance and the
importance plot read the means as they read the local values.
"""

import logging

import matplotlib
import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pm_sens
from pm_sens._core.context import predictive_for
from pm_sens.graph.compile.compiled import WhitenedNorm
from tests.test_plots import assert_readable
from tests.zoo._registry import known_posterior

matplotlib.use("Agg")

QUIET = dict(progressbar=False, extend_inferencedata=False)
METHODS = ["rsens", "kl", "var", "ead"]
N, D = 90, 3


@pytest.fixture(scope="module")
def logistic():
    """A logistic regression with a group intercept (a categorical input)."""
    rng = np.random.default_rng(0)
    x, g = rng.normal(size=(N, D)) * [1, 2, 5], rng.integers(0, 3, N)
    with pm.Model() as model:
        X, G = pm.Data("X", x), pm.Data("g", g)
        b, a = pm.Normal("b", shape=D), pm.Normal("a", shape=3)
        pm.Bernoulli("y", logit_p=X @ b + a[G], observed=rng.integers(0, 2, N))
    idata = known_posterior(model, chains=2, draws=20)
    kw = dict(mode="draw", method=METHODS, interactions=True, **QUIET)
    local = pm_sens.sensitivity(idata, model, **kw)["sensitivity"]
    return model, idata, local


def test_means_by_blocks_equal_the_local_means(logistic):
    model, idata, local = logistic
    # about 30 points per block: 3 blocks, each with its own points' sd of x
    per_point = 8 * 40 * 36
    out = pm_sens.sensitivity(
        idata,
        model,
        mode="draw",
        method=METHODS,
        interactions=True,
        local=False,
        memory_limit=30 * per_point,
        **QUIET,
    )["sensitivity"]
    assert out.attrs["local_values"] == "mean over points"
    assert set(out.data_vars) == set(local.data_vars)
    for name, means in out.data_vars.items():
        assert "point" not in means.dims
        expected = local[name].mean("point").transpose(*means.dims)
        np.testing.assert_allclose(means.values, expected.values, rtol=1e-12, atol=1e-15)
    assert out["rsens"].dims == ("chain", "draw", "feature")
    assert out["levels_g"].dims == ("chain", "draw", "g_level")


def test_the_automatic_choice_says_so(logistic, caplog, monkeypatch):
    model, idata, local = logistic
    kw = dict(mode="draw", method="rsens", **QUIET)
    # the local values here take 8 bytes × 40 draws × 90 points × (3 features + g's
    # 3 levels and its mean) = 201,600 bytes
    monkeypatch.setattr(pm_sens.local.sensitivity, "LOCAL_VALUES_LIMIT", 1e5)
    with caplog.at_level(logging.INFO, logger="pm_sens"):
        out = pm_sens.sensitivity(idata, model, **kw)["sensitivity"]
    assert "would take" in caplog.text and "local=True" in caplog.text
    assert out.attrs["local_values"] == "mean over points"
    monkeypatch.setattr(pm_sens.local.sensitivity, "LOCAL_VALUES_LIMIT", 1e6)
    kept = pm_sens.sensitivity(idata, model, **kw)["sensitivity"]
    assert kept.attrs["local_values"] == "kept" and "point" in kept["rsens"].dims


def test_memory_limit_does_not_change_the_layout(logistic):
    """A knob for memory makes chunks smaller; the result keeps its dims and values."""
    model, idata, local = logistic
    kw = dict(mode="draw", method="rsens", **QUIET)
    small = pm_sens.sensitivity(idata, model, memory_limit=1e4, **kw)["sensitivity"]
    default = pm_sens.sensitivity(idata, model, **kw)["sensitivity"]
    assert small["rsens"].dims == default["rsens"].dims == ("chain", "draw", "point", "feature")
    np.testing.assert_allclose(small["rsens"].values, default["rsens"].values, rtol=1e-12)


def test_summary_importance_and_plot_read_the_means(logistic):
    model, idata, local = logistic
    kw = dict(mode="draw", method=METHODS, interactions=True, progressbar=False)
    means = pm_sens.sensitivity(idata.copy(), model, local=False, **kw)
    kept = pm_sens.sensitivity(idata.copy(), model, local=True, **kw)
    for name in ("rsens", "rsens2", "kl"):
        for scale in ("input", "sd"):
            np.testing.assert_allclose(
                pm_sens.importance(means, name, scale=scale).values,
                pm_sens.importance(kept, name, scale=scale).values,
                rtol=1e-12,
            )
    a, b = pm_sens.summary(means, var_names="rsens2"), pm_sens.summary(kept, var_names="rsens2")
    np.testing.assert_allclose(a["importance"].values, b["importance"].values, rtol=1e-12)
    assert list(a["feature"]) == list(b["feature"])
    assert_readable(pm_sens.plot_importance(means))
    with pytest.raises(ValueError, match="no \\(point, feature\\) local values"):
        pm_sens.plot_local(means)


def test_dask_points_give_dask_means(logistic):
    model, idata, local = logistic
    x = xr.Dataset({"X": (("point", "X_dim"), local["input_value"].values[:, :D])})
    points = x.assign(g=("point", local["input_value"].values[:, D].astype(int))).chunk(point=40)
    kw = dict(mode="draw", method="rsens", points=points, **QUIET)
    out = pm_sens.sensitivity(idata, model, local=False, **kw)["sensitivity"]
    assert out["rsens"].chunks is not None
    expected = local["rsens"].mean("point")
    np.testing.assert_allclose(out["rsens"].values, expected.values, rtol=1e-12)
    # more points than the first rows the dask route probes, with a categorical input
    kept = pm_sens.sensitivity(idata, model, local=True, **kw)["sensitivity"]
    np.testing.assert_allclose(kept["levels_g"].values, local["levels_g"].values, rtol=1e-12)


def test_bad_requests_are_refused_in_our_words(logistic):
    model, idata, _ = logistic
    with pytest.raises(ValueError, match="local=False needs mode='draw'"):
        pm_sens.sensitivity(idata, model, local=False, **QUIET)
    with pytest.raises(ValueError, match=r"local=False cannot give method=\['aed'\]"):
        pm_sens.sensitivity(idata, model, mode="draw", method="aed", local=False, **QUIET)
    with pytest.raises((TypeError, ValueError), match="local"):
        pm_sens.sensitivity(idata, model, mode="draw", local="yes", **QUIET)


@pytest.mark.parametrize("backend", ["python", "numba"])
@pytest.mark.parametrize("likelihood", ["bernoulli", "normal", "normal_one_column", "beta"])
def test_rsens_alone_is_summed_in_the_graph(likelihood, backend, monkeypatch):
    """R-sens alone, no categorical input: the points are summed inside the graph, run in
    NumPy or compiled (the Beta's information is not diagonal: its chunks are summed from
    their derivatives); a constant column stays NaN. A scale reading one column of X
    (the issue's heteroscedastic Normal) has derivatives zero in the others."""
    from pm_sens._run import compiling as _compiling
    from pm_sens.local import derivative_passes

    monkeypatch.setattr(_compiling, "INTERPRETED_WORK", np.inf if backend == "python" else -1)
    monkeypatch.setattr(_compiling, "COMPILE_FIRST_WORK", 0)  # Numba compiled before the run
    from_derivatives = []
    summed = derivative_passes._chunk_derivatives
    monkeypatch.setattr(
        derivative_passes,
        "_chunk_derivatives",
        lambda ctx, draws: from_derivatives.append(draws) or summed(ctx, draws),
    )
    rng = np.random.default_rng(1)
    x = np.column_stack([rng.normal(size=(400, 2)), np.ones(400)])
    with pm.Model() as model:
        X = pm.Data("X", x)
        b, c = pm.Normal("b", 0, 0.3, shape=3), pm.Normal("c", 0, 0.3, shape=3)
        if likelihood == "bernoulli":  # one varying parameter: no squares
            pm.Bernoulli("y", logit_p=X @ (b + c), observed=rng.integers(0, 2, 400))
        elif likelihood == "normal":  # two varying parameters
            pm.Normal("y", mu=X @ b, sigma=pm.math.exp(X @ c), observed=x[:, 0])
        elif likelihood == "normal_one_column":
            pm.Normal("y", mu=X @ b, sigma=pm.math.exp(c[0] + c[1] * X[:, 0]), observed=x[:, 0])
        else:
            mean = pm.math.sigmoid(X @ b)
            pm.Beta("y", mu=mean, nu=5.0 + pm.math.exp(X @ c), observed=rng.uniform(0.1, 0.9, 400))
    idata = known_posterior(model, chains=2, draws=40)
    kw = dict(mode="draw", method="rsens", **QUIET)
    local = pm_sens.sensitivity(idata, model, **kw)["sensitivity"]["rsens"]
    means = pm_sens.sensitivity(idata, model, local=False, **kw)["sensitivity"]["rsens"]
    assert bool(from_derivatives) == (likelihood == "beta")
    # the family's scales computed in the graph, beside the derivatives (no forward pass)
    compiled = predictive_for(model, None).compiled.values()
    whitened = [c for c in compiled if isinstance(c, WhitenedNorm)]
    assert {c.scales_in_graph for c in whitened} == {likelihood != "beta"}
    assert means.dims == ("chain", "draw", "feature")
    assert np.isnan(means.values[..., 2]).all()
    np.testing.assert_allclose(means.values, local.mean("point").values, rtol=1e-12)

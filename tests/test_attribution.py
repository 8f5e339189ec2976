"""Integrated Gradients: exactness for linear models, completeness, linearity over draws."""

import numpy as np
import pymc as pm
import pytest
from scipy import special

import pm_sens
from tests.conftest import posterior


@pytest.fixture
def linear(rng):
    x = rng.normal(size=(12, 3))
    with pm.Model(coords={"obs": range(12), "col": ["a", "b", "c"]}) as model:
        xd = pm.Data("X", x, dims=("obs", "col"))
        beta = pm.Normal("beta", dims="col")
        pm.Normal("y", mu=1.0 + xd @ beta, sigma=1.0, observed=x[:, 0], dims="obs")
    draws = rng.normal(size=(2, 5, 3))
    return model, posterior({"beta": draws}, dims={"beta": ["col"]}), x, draws


def test_linear_model_ig_is_beta_times_displacement(linear):
    model, idata, x, draws = linear
    out = pm_sens.integrated_gradients(idata, model, progressbar=False)["attribution"]
    assert out["ig"].dims == ("chain", "draw", "obs", "feature")
    assert out["completeness_gap"].dims == ("chain", "draw", "obs")
    expected = draws[:, :, None, :] * (x - x.mean(0))
    np.testing.assert_allclose(out["ig"].values, expected, rtol=1e-12, atol=1e-13)
    scale = np.abs(out["value"].values - out["baseline_value"].values).max()
    assert np.abs(out["completeness_gap"].values).max() < 1e-8 * scale


def test_baseline_given_as_one_point(linear):
    model, idata, x, draws = linear
    base = np.array([0.5, -1.0, 2.0])
    out = pm_sens.integrated_gradients(idata, model, baseline={"X": base}, progressbar=False)[
        "attribution"
    ]
    np.testing.assert_allclose(out["ig"].values, draws[:, :, None, :] * (x - base), atol=1e-12)


def _logistic(rng):
    x = rng.normal(size=(10, 2))
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", shape=2)
        pm.Bernoulli("y", logit_p=0.3 + xd @ b, observed=np.zeros(10, int))
    b_draws = rng.normal([2.0, -1.0], 0.5, size=(1, 8, 2))
    return model, posterior({"b": b_draws}), x, b_draws[0]


def test_completeness_for_a_smooth_nonlinear_model(rng):
    model, idata, *_ = _logistic(rng)
    out = pm_sens.integrated_gradients(idata, model, progressbar=False)["attribution"]
    gap = np.abs(out["completeness_gap"].values)
    change = np.abs(out["value"].values - out["baseline_value"].values)
    assert gap.max() < 1e-5 * change.max()


def test_mean_over_draws_is_ig_of_the_predictive_mean(rng):
    """IG is linear in F: averaging per-draw IG gives IG of the mixture mean,
    here computed independently by quadrature of finite-difference gradients."""
    model, idata, x, b = _logistic(rng)
    out = pm_sens.integrated_gradients(idata, model, progressbar=False)["attribution"]
    base = x.mean(0)

    def mean_prediction(z):  # (..., 2) -> (...)
        return special.expit(0.3 + z @ b.T).mean(-1)

    t, w = np.polynomial.legendre.leggauss(50)
    t, w = (t + 1) / 2, w / 2
    h = 1e-6
    expected = np.zeros_like(x)
    for tk, wk in zip(t, w, strict=True):
        z = base + tk * (x - base)
        for d in range(2):
            e = np.eye(2)[d] * h
            grad = (mean_prediction(z + e) - mean_prediction(z - e)) / (2 * h)
            expected[:, d] += wk * grad * (x[:, d] - base[d])
    np.testing.assert_allclose(out["ig"].mean(("chain", "draw")).values, expected, rtol=1e-6)


def test_other_statistics(rng):
    model, idata, x, b = _logistic(rng)
    out = pm_sens.integrated_gradients(
        idata, model, statistic="p", progressbar=False, extend_inferencedata=False
    )["attribution"]
    p = special.expit(0.3 + x @ b.T).T  # (S, N)
    np.testing.assert_allclose(out["value"].values[0], p)
    assert out.attrs["statistic"] == "p"
    with pytest.raises(ValueError, match=r"statistic='sd' is not valid for a bernoulli"):
        pm_sens.integrated_gradients(idata, model, statistic="sd", progressbar=False)


def test_variance_statistic_of_a_heteroscedastic_model(rng):
    x = rng.normal(size=8)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        g = pm.Normal("g")
        pm.Normal("y", mu=0.0, sigma=pm.math.exp(g * xd), observed=x)
    g_draws = np.array([[0.5, -0.2]])
    out = pm_sens.integrated_gradients(
        posterior({"g": g_draws}), model, statistic="variance", progressbar=False
    )["attribution"]
    var = np.exp(2 * g_draws[0, :, None] * x)
    var_base = np.exp(2 * g_draws[0, :, None] * x.mean())
    np.testing.assert_allclose(out["ig"].values[0, :, :, 0], var - var_base, rtol=1e-9)


def test_bad_baseline(linear):
    model, idata, _, _ = linear
    with pytest.raises(ValueError, match=r"baseline has unknown name\(s\) \['Z'\]"):
        pm_sens.integrated_gradients(idata, model, baseline={"Z": 1.0})
    with pytest.raises(ValueError, match=r"baseline\['X'\] has shape \(2,\); expected \(3,\)"):
        pm_sens.integrated_gradients(idata, model, baseline={"X": np.ones(2)})
    with pytest.raises(TypeError, match=r"baseline=list is not valid"):
        pm_sens.integrated_gradients(idata, model, baseline=[1, 2, 3])
    with pytest.raises(ValueError, match=r"n_steps=0 is not valid"):
        pm_sens.integrated_gradients(idata, model, n_steps=0)


def test_summary_of_attributions(linear):
    model, idata, x, draws = linear
    idata = pm_sens.integrated_gradients(idata, model, progressbar=False)
    table = pm_sens.summary(idata, group="attribution")
    assert set(table.variable) == {"ig"}
    expected = np.abs(draws[:, :, None, :] * (x - x.mean(0))).mean(2).mean((0, 1))
    got = table.set_index("feature")["importance"]
    np.testing.assert_allclose(got.loc[["a", "b", "c"]].values, expected)


def test_one_feature_is_the_change_of_the_statistic(rng):
    """With one feature, IG is F(x) − F(b) (completeness), computed without the path."""
    x = rng.normal(size=9)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        pm.Bernoulli("y", logit_p=0.3 + b * xd, observed=np.zeros(9, int))
    b_draws = np.array([[1.5, -0.7, 3.0]])
    out = pm_sens.integrated_gradients(
        posterior({"b": b_draws}), model, baseline=0.5, n_steps=2, progressbar=False
    )["attribution"]
    p, p_base = (special.expit(0.3 + b_draws[0, :, None] * z) for z in (x, 0.5))
    np.testing.assert_allclose(out["ig"].values[0, :, :, 0], p - p_base, rtol=1e-12)
    np.testing.assert_array_equal(out["completeness_gap"].values, 0.0)


def test_path_nodes_are_gauss_legendre_on_the_unit_interval_and_kept_read_only():
    """The nodes and weights, computed once per count and shared by every chunk,
    integrate polynomials of degree 2n − 1 exactly on [0, 1] and cannot be changed."""
    from pm_sens.measures.integrated_gradients import path_nodes

    nodes, weights = path_nodes(5)
    assert path_nodes(5)[0] is nodes
    for k in range(10):
        np.testing.assert_allclose(weights @ nodes**k, 1 / (k + 1), rtol=1e-14)
    with pytest.raises(ValueError, match="read-only"):
        nodes[0] = 0.0

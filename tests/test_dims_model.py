"""Models written with ``pymc.dims``: lowered to tensors (`pm_sens.graph.frontends.dims`)."""

import numpy as np
import pymc as pm
import pymc.dims as pmd
import pytest

import pm_sens
from pm_sens.graph.frontends.dims import tensor_model
from tests.zoo._registry import known_posterior

QUIET = dict(progressbar=False, extend_inferencedata=False)


def _regression(n=20, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    coords = {"obs": np.arange(n), "feature": ["a", "b"]}
    with pm.Model(coords=coords) as model:
        X = pmd.Data("X", x, dims=("obs", "feature"))
        beta = pmd.Normal("beta", 0, 1, dims="feature")
        sigma = pmd.HalfNormal("sigma", 1)
        mu = pmd.Deterministic("mu", (X * beta).sum("feature"))
        pmd.Normal("y", mu, sigma, observed=pmd.as_xtensor(rng.normal(size=n), dims=("obs",)))
    return model


def test_the_lowered_model_is_the_same_model():
    """Same names, dims and log density (PyMC's own, of the dims model), at two points."""
    model = _regression()
    lowered = tensor_model(model)
    assert tensor_model(model) is lowered  # once per model
    assert {v.name for v in lowered.free_RVs} == {v.name for v in model.free_RVs}
    with_dims = {name: tuple(dims) for name, dims in model.named_vars_to_dims.items() if dims}
    assert {k: tuple(v) for k, v in lowered.named_vars_to_dims.items()} == with_dims
    point = model.initial_point()
    for shift in (0.0, 0.3):
        moved = {name: value + shift for name, value in point.items()}
        np.testing.assert_allclose(
            lowered.compile_logp()(moved), model.compile_logp()(moved), rtol=1e-12
        )


def test_rsens_of_a_dims_regression_is_the_closed_form():
    """Draw mode: R-sens of feature d is |β_d|/σ at every point."""
    model = _regression()
    idata = known_posterior(model)
    out = pm_sens.sensitivity(idata, model, mode="draw", **QUIET)["sensitivity"]
    beta = idata.posterior["beta"].values  # (chain, draw, feature)
    sigma = idata.posterior["sigma"].values[..., None]
    expected = np.broadcast_to((np.abs(beta) / sigma)[:, :, None, :], out["rsens"].shape)
    np.testing.assert_allclose(out["rsens"].values, expected, rtol=1e-12)
    assert list(out["feature"].values) == ["a", "b"]


def test_set_data_on_the_users_model_is_seen():
    """The lowered containers share the user's storage: new values are the points."""
    model = _regression()
    idata = known_posterior(model)
    tensor_model(model)
    new = np.ones((20, 2))
    pm.set_data({"X": new}, model=model)
    out = pm_sens.sensitivity(idata, model, **QUIET)["sensitivity"]
    np.testing.assert_array_equal(out["input_value"].values, new)


def test_a_transposed_distribution_is_refused_in_our_words():
    """An observed variable whose dims are in another order than its parameters'."""
    rng = np.random.default_rng(1)
    coords = {"date": np.arange(5), "geo": ["n", "s"]}
    with pm.Model(coords=coords) as model:
        x = pmd.Data("x", rng.normal(size=(5, 2)), dims=("date", "geo"))
        b = pmd.Normal("b")
        mu = (b * x).transpose("geo", "date")
        observed = pmd.as_xtensor(rng.normal(size=(5, 2)), dims=("date", "geo"))
        pmd.Normal("y", mu, 1.0, dims=("date", "geo"), observed=observed)
    with pytest.raises(ValueError, match=r"'y' .* lowers to a transposed distribution"):
        pm_sens.sensitivity(known_posterior(model), model, **QUIET)


def test_a_wide_table_read_transposed_is_refused_in_our_words():
    """Found with the dims models: a (date, geo) input under a (geo, date) table."""
    rng = np.random.default_rng(1)
    with pm.Model() as model:
        x = pm.Data("x", rng.normal(size=(5, 2)))
        b = pm.Normal("b")
        pm.Normal("y", (b * x).T, 1.0, observed=rng.normal(size=(2, 5)))
    with pytest.raises(ValueError, match=r"'x' \(5, 2\) is laid out as the observed table"):
        pm_sens.sensitivity(known_posterior(model), model, **QUIET)

"""Interactions the model did not write: moment-mode R-sens2 of an additive model.

For y ~ Normal(xᵀβ, σ) with draws β_s and a fixed σ, the moment-matched
predictive is Normal(xᵀβ̄, v(x)) with v(x) = σ² + xᵀΣ̂x, Σ̂ the draws' covariance
(1/S, the law of total variance). In the mean–variance parametrization the mean
is linear, so the only second derivative is ∂²v/∂x_d∂x_e = 2Σ̂_de, and
R-sens2_de = sqrt(α (2Σ̂_de)² / (2 v²)) = sqrt(2α) |Σ̂_de| / v(x). Each draw's
predictive has a linear mean and a fixed variance: R-sens2 = 0 in draw mode.
"""

import numpy as np
import pymc as pm
import pytest

import pm_sens
from tests.conftest import posterior

N, D, S = 12, 3, 400
SIGMA = 0.7


@pytest.fixture(scope="module")
def additive():
    rng = np.random.default_rng(11)
    x = rng.normal(size=(N, D))
    with pm.Model() as model:
        X = pm.Data("X", x)
        beta = pm.Normal("beta", 0, 1, shape=D)
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("y", X @ beta, sigma, observed=rng.normal(size=N))
    # correlated coefficient draws, as collinear inputs give
    cov = np.array([[1.0, 0.8, 0.0], [0.8, 1.0, -0.3], [0.0, -0.3, 1.0]]) * 0.04
    beta = rng.multivariate_normal([0.5, -1.0, 0.2], cov, size=S)
    draws = {"beta": beta.reshape(1, S, D), "sigma": np.full((1, S), SIGMA)}
    return model, posterior(draws), x, beta


def test_moment_mode_pairs_are_the_posterior_covariance_through_the_variance(additive):
    model, idata, x, beta = additive
    out = pm_sens.sensitivity(idata, model, interactions=True, progressbar=False)
    rsens2 = out["sensitivity"]["rsens2"].values  # (N, D, D)
    cov = np.cov(beta.T, bias=True)
    variance = SIGMA**2 + np.einsum("nd,de,ne->n", x, cov, x)
    expected = np.sqrt(2) * np.abs(cov)[None] / variance[:, None, None]
    off = ~np.eye(D, dtype=bool)
    np.testing.assert_allclose(rsens2[:, off], expected[:, off], rtol=1e-9)
    attrs = out["sensitivity"]["rsens2"].attrs
    assert attrs["interactions_from"] == "moment-matched predictive"
    assert "posterior correlation" in attrs["interactions_note"]


def test_draw_mode_has_no_pairs_in_an_additive_model(additive):
    model, idata, _, _ = additive
    out = pm_sens.sensitivity(idata, model, mode="draw", interactions=True, progressbar=False)
    rsens2 = out["sensitivity"]["rsens2"]
    off = ~np.eye(D, dtype=bool)
    assert np.abs(rsens2.values[..., off]).max() < 1e-12
    assert rsens2.attrs["interactions_from"] == "per-draw predictives"


def test_summary_says_which_predictive_the_pairs_describe(additive):
    model, idata, _, _ = additive
    for mode, source in (("moment", "moment-matched"), ("draw", "per-draw")):
        out = pm_sens.sensitivity(idata, model, mode=mode, interactions=True, progressbar=False)
        table = pm_sens.summary(out)
        pairs = table[table["variable"] == "rsens2"]
        assert (pairs["interactions_from"].str.startswith(source)).all()
        assert table[table["variable"] == "rsens"]["interactions_from"].isna().all()
        printed = str(table)
        assert "interactions_from" in printed.split("rsens2")[1]
        assert "interactions_from" not in printed.split("rsens2")[0]

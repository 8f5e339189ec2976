"""Inputs standardized inside the model: the mean and sd are held at the data's.

A model written ``(x - x.mean()) / x.std()`` on a pm.Data container must give
the results of the same model written with the training mean and sd as
numbers, in every public function and both modes, to 1e-10.
"""

import logging

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pm_sens
from tests.written_two_ways import assert_same_values, other_functions
from tests.zoo._registry import known_posterior

N = 20
QUIET = dict(progressbar=False, extend_inferencedata=False)


@pytest.fixture(scope="module")
def standardized():
    rng = np.random.default_rng(5)
    x, z = rng.normal(5, 2, size=N), rng.normal(size=N)
    y = rng.poisson(2, size=N)
    mean, sd = x.mean(), x.std()

    def build(inside):
        with pm.Model() as model:
            x_ = pm.Data("x", x)
            z_ = pm.Data("z", z)
            xs = (x_ - x_.mean()) / x_.std() if inside else (x_ - mean) / sd
            b = pm.Normal("b", 0, 0.5, shape=3)
            alpha = pm.Exponential("alpha", 1)
            mu = pm.math.exp(b[0] + b[1] * xs + b[2] * xs * z_)
            pm.NegativeBinomial("y", mu=mu, alpha=alpha, observed=y)
        return model

    inside, outside = build(True), build(False)
    return inside, outside, known_posterior(outside), x


@pytest.mark.parametrize("mode", ["moment", "draw"])
def test_sensitivity_holds_the_training_mean_and_sd(standardized, mode):
    inside, outside, idata, x = standardized
    points = {"x": np.linspace(0, 10, 7), "z": np.linspace(-1, 1, 7)}
    for kw in ({}, {"points": points}):  # new points are standardized as the data were
        kw = dict(mode=mode, interactions=True, method=["rsens", "kl", "var", "ead"], **kw)
        got = pm_sens.sensitivity(idata, inside, **QUIET, **kw)["sensitivity"]
        expected = pm_sens.sensitivity(idata, outside, **QUIET, **kw)["sensitivity"]
        assert_same_values(got, expected)
        assert got.attrs["held_statistics"] == ["mean of x", "std of x"]
        assert expected.attrs["held_statistics"] == []


def test_every_other_function_holds_them_too(standardized):
    inside, outside, idata, _ = standardized
    for group, call in other_functions(idata).items():
        got = call(inside)[group]
        assert_same_values(got, call(outside)[group])
        assert got.attrs["held_statistics"] == ["mean of x", "std of x"], group


def test_the_message_and_the_opt_out(standardized, caplog):
    inside, _, idata, _ = standardized
    fresh = pm_sens.Predictive.from_observed(inside)  # the message is said once per predictive
    with caplog.at_level(logging.INFO, logger="pm_sens"):
        pm_sens.sensitivity(idata, inside, predictive=fresh, **QUIET)
    message = " ".join(r.getMessage() for r in caplog.records if r.name == "pm_sens")
    assert "mean of x, std of x" in message and "hold_statistics=False" in message
    refusing = pm_sens.Predictive.from_observed(inside, hold_statistics=False)
    assert refusing.held_statistics == []
    # not held: every row depends on every other, the joint predictive's R-sens
    out = pm_sens.sensitivity(idata, inside, predictive=refusing, **QUIET)
    assert out["sensitivity"].attrs["dependence"].startswith("joint")


def test_a_statistic_of_the_parameters_is_not_held():
    """A sum over the points of something random is not a statistic of the data."""
    rng = np.random.default_rng(6)
    with pm.Model() as model:
        x = pm.Data("x", rng.normal(size=N))
        b = pm.Normal("b")
        pm.Normal("y", b * x - (b * x).mean(), 1.0, observed=rng.normal(size=N))
    assert pm_sens.Predictive.from_observed(model).held_statistics == []
    out = pm_sens.sensitivity(known_posterior(model), model, **QUIET)
    assert f"s{-(N - 1):+d} to s{N - 1:+d}" in out["sensitivity"].attrs["dependence"]


def test_a_robust_scaling_by_median_and_quartiles_is_held():
    """``(x − median(x)) / (q75 − q25)`` with the quartiles as sorted elements: as numbers."""
    rng = np.random.default_rng(8)
    x, y = rng.gamma(2, 2, size=N), rng.normal(size=N)
    ordered = np.sort(x)
    median, iqr = np.median(x), ordered[3 * N // 4] - ordered[N // 4]

    def build(inside):
        with pm.Model() as model:
            x_ = pm.Data("x", x)
            if inside:
                ordered_ = pt.sort(x_)
                xs = (x_ - pt.median(x_)) / (ordered_[3 * N // 4] - ordered_[N // 4])
            else:
                xs = (x_ - median) / iqr
            b = pm.Normal("b", shape=2)
            pm.Normal("y", b[0] + b[1] * xs**2, pm.HalfNormal("s"), observed=y)
        return model

    inside, outside = build(True), build(False)
    idata = known_posterior(outside)
    for mode in ("moment", "draw"):
        kw = dict(mode=mode, interactions=True, points={"x": np.linspace(0, 9, 5)}, **QUIET)
        got = pm_sens.sensitivity(idata, inside, **kw)["sensitivity"]
        assert_same_values(got, pm_sens.sensitivity(idata, outside, **kw)["sensitivity"])
    assert got.attrs["held_statistics"] == ["order statistic of x", "median of x"]
    for group, call in other_functions(idata).items():
        assert_same_values(call(inside)[group], call(outside)[group])

"""Points whose predictive is one value: a count law of mean 0 (a zero exposure).

Divergence rates have no value there (R-sens would be |∂λ|/sqrt(λ) at λ = 0):
every measure is NaN at such points, the result's ``degenerate`` marks them,
and summary and importance are those of the other points. Checked against the
same model fitted without those rows (an independent computation of "the rest").
"""

import logging

import numpy as np
import pymc as pm
import pytest

import pm_sens
from tests.zoo._registry import known_posterior

QUIET = dict(progressbar=False, extend_inferencedata=False)


def _exposure_model(x, exposure, family):
    with pm.Model() as model:
        x_ = pm.Data("x", x)
        t_ = pm.Data("exposure", exposure)
        b = pm.Normal("b", 0, 0.5, shape=2)
        mu = t_ * pm.math.exp(b[0] + b[1] * x_)
        y = np.ones(len(x), dtype=int)
        if family == "poisson":
            pm.Poisson("y", mu=mu, observed=y)
        else:
            pm.NegativeBinomial("y", mu=mu, alpha=pm.Exponential("alpha", 0.2), observed=y)
    return model


@pytest.fixture(scope="module", params=["poisson", "negative_binomial"])
def fitted(request):
    rng = np.random.default_rng(3)
    n = 16
    x = rng.normal(size=n)
    exposure = rng.uniform(0.5, 2.0, n)
    zero = np.zeros(n, bool)
    zero[[2, 7, 11]] = True
    exposure[zero] = 0.0
    model = _exposure_model(x, exposure, request.param)
    idata = known_posterior(model, draws=4)
    # the same model on the rows with an exposure, at the same draws
    rest = _exposure_model(x[~zero], exposure[~zero], request.param)
    return model, idata, rest, zero


@pytest.mark.parametrize("mode", ["moment", "draw"])
def test_degenerate_points_are_left_out_and_the_rest_computed(fitted, mode, caplog):
    model, idata, rest, zero = fitted
    kw = dict(mode=mode, method=["rsens", "kl"], interactions=True, **QUIET)
    out = pm_sens.sensitivity(idata, model, **kw)
    local = out["sensitivity"]
    marked = local["degenerate"].values
    assert (marked == (zero if mode == "moment" else np.broadcast_to(zero, marked.shape))).all()
    for name in ("rsens", "rsens2", "kl"):
        assert local[name].isel(point=zero).isnull().all(), name
    expected = pm_sens.sensitivity(idata, rest, **kw)["sensitivity"]
    # KL's step is delta × each input's sd over the points, which the rows left out change
    for name, rtol in (("rsens", 1e-10), ("rsens2", 1e-10), ("kl", 1e-3)):
        got = local[name].isel(point=~zero).transpose(*expected[name].dims)
        np.testing.assert_allclose(got.values, expected[name].values, rtol=rtol, err_msg=name)
    with caplog.at_level(logging.INFO, logger="pm_sens"):
        table = pm_sens.summary(out)
        importance = pm_sens.importance(out)
    assert "3 of 16 points" in caplog.text and "left out" in caplog.text
    reference = pm_sens.summary(pm_sens.sensitivity(idata, rest, **kw))
    np.testing.assert_allclose(
        table.query("variable == 'rsens'")["importance"].to_numpy(),
        reference.query("variable == 'rsens'")["importance"].to_numpy(),
        rtol=1e-10,
    )
    assert (table.query("variable == 'rsens'")["nonfinite"] > 0).all()  # counted
    np.testing.assert_allclose(
        importance.values,
        pm_sens.importance(pm_sens.sensitivity(idata, rest, **kw)).values,
        rtol=1e-10,
    )


def test_means_over_points_leave_them_out(fitted):
    """local=False, by blocks of points: each draw's mean over the other points."""
    model, idata, rest, zero = fitted
    kw = dict(mode="draw", method=["rsens", "kl"], **QUIET)
    means = pm_sens.sensitivity(idata, model, local=False, memory_limit=2e4, **kw)
    expected = pm_sens.sensitivity(idata, rest, local=False, **kw)["sensitivity"]
    for name, rtol in (("rsens", 1e-10), ("kl", 1e-3)):
        np.testing.assert_allclose(
            means["sensitivity"][name].values, expected[name].values, rtol=rtol
        )
    assert (means["sensitivity"]["degenerate"].values == zero.sum()).all()
    alone = pm_sens.sensitivity(idata, model, local=False, **{**kw, "method": "rsens"})
    np.testing.assert_allclose(
        alone["sensitivity"]["rsens"].values, expected["rsens"].values, rtol=1e-10
    )

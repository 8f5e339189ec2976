"""R-sens to the limits of float64 (issue 13): closed forms at parameters whose
squares, or whose Fisher information, over- or underflow.

One input x, linear predictor ``b·x`` with b = 1 (two identical draws), so that
the points themselves sweep the parameter across its range.
"""

import warnings

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pm_sens
from tests.conftest import posterior


def _logistic_factor(eta):
    """``sqrt(σ(η)σ(−η))`` without rounding."""
    return np.exp(-np.abs(eta) / 2) / (1 + np.exp(-np.abs(eta)))


def _model(kind, x):
    """The model and the closed-form R-sens at the points x."""
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        eta = b * xd
        zeros = np.zeros(len(x), dtype=int)
        if kind == "poisson":  # rate e^x: R-sens = sqrt(rate)
            pm.Poisson("y", mu=pm.math.exp(eta), observed=zeros)
            truth = np.exp(x / 2)
        elif kind == "gamma":  # mean e^x, shape 4: R-sens = sqrt(4)
            pm.Gamma("y", alpha=4.0, beta=4.0 / pm.math.exp(eta), observed=np.ones(len(x)))
            truth = np.full(len(x), 2.0)
        elif kind == "negative_binomial":  # mean e^x, alpha up to 1e300: the Poisson limit
            alpha = 10.0 ** np.array([0, 8, 13, 16, 100, 300])
            pm.NegativeBinomial("y", mu=pm.math.exp(eta), alpha=alpha, observed=zeros)
            truth = np.sqrt(np.exp(x) / (1 + np.exp(x) / alpha))
        elif kind == "normal_mean":  # mean s·x, sd s: R-sens = 1 for s = 1e±300
            scale = pm.Data("s", 10.0 ** np.array([-300, -200, 0, 200, 300]))
            pm.Normal("y", mu=scale * eta, sigma=scale, observed=np.zeros(len(x)))
            truth = np.ones(len(x))
        elif kind == "normal_sd":  # sd e^x: R-sens = √2
            pm.Normal("y", mu=0.0, sigma=pm.math.exp(eta), observed=np.zeros(len(x)))
            truth = np.full(len(x), np.sqrt(2))
        elif kind == "normal_both":  # mean c·x, sd e^(c·x): R-sens = c·sqrt(sd⁻² + 2)
            # c = 1e±170: the two whitened derivatives are fine, their squares are not
            c = 10.0 ** np.array([-170, -170, 0, 170, 170])
            pm.Normal("y", mu=c * eta, sigma=pm.math.exp(c * eta), observed=np.zeros(len(x)))
            truth = c * np.sqrt(np.exp(-2 * c * x) + 2)
        elif kind == "binomial":  # 4 trials, logit x
            pm.Binomial("y", n=4, logit_p=eta, observed=zeros)
            truth = 2 * _logistic_factor(x)
        else:  # logistic, logit x
            pm.Bernoulli("y", logit_p=eta, observed=zeros)
            truth = _logistic_factor(x)
    return model, truth


POINTS = {
    "poisson": [-690.0, -300.0, 0.0, 300.0, 690.0],
    "gamma": [-700.0, -300.0, 0.0, 300.0, 700.0],
    "negative_binomial": [0.5, 1.0, 0.0, -1.0, 2.0, 0.3],
    "normal_mean": [0.3, -1.0, 1.0, 2.0, -0.5],
    "normal_sd": [-690.0, -300.0, 0.0, 300.0, 690.0],
    "normal_both": [0.0, 1.0, 0.5, 1e-170, 0.0],
    "logistic": [-700.0, -40.0, 0.0, 40.0, 700.0],
    "binomial": [-700.0, -40.0, 0.0, 40.0, 700.0],
}

#: points whose moment-matched family cannot be represented (its variance over-
#: or underflows): moment mode refuses them and points to mode="draw"
MOMENT_UNREPRESENTABLE = {
    "gamma": [0, 4],
    "normal_mean": [0, 1, 3, 4],
    "normal_sd": [0, 4],
}


def _rsens(model, mode, points=None, local=True):
    idata = posterior({"b": np.ones((1, 2))})
    out = pm_sens.sensitivity(
        idata,
        model,
        inputs=["x"],
        points=points,
        mode=mode,
        local=local,
        progressbar=False,
        extend_inferencedata=False,
    )["sensitivity"]
    return out["rsens"].values.reshape(-1, out.sizes["point"] if local else 1)


@pytest.mark.parametrize("kind", list(POINTS))
def test_draw_mode_reaches_the_limits_of_float64(kind):
    x = np.array(POINTS[kind])
    model, truth = _model(kind, x)
    got = _rsens(model, "draw")
    assert np.isfinite(got).all() and (got > 0).all()
    np.testing.assert_allclose(got, np.broadcast_to(truth, got.shape), rtol=1e-6)


@pytest.mark.parametrize("kind", [*POINTS, "normal_both_tiny"])
def test_draw_mode_means_over_the_points_reach_the_limits_of_float64(kind):
    """``local=False`` sums the points inside the graph; where a square behind the
    sums over- or underflowed (``normal_both``: whitened derivatives of 1e±170;
    ``normal_both_tiny``: all of them 1e-170, whose squares are 0), the chunk is
    summed from its derivatives."""
    if kind == "normal_both_tiny":  # mean c·x, sd e^(c·x) ≈ 1: R-sens = c·√3
        x, c = np.linspace(-1.0, 1.0, 5), 1e-170
        with pm.Model() as model:
            eta = pm.Normal("b") * pm.Data("x", x)
            pm.Normal("y", mu=c * eta, sigma=pm.math.exp(c * eta), observed=np.zeros(5))
        truth = np.full(5, c * np.sqrt(3))
    else:
        model, truth = _model(kind, np.array(POINTS[kind]))
    got = _rsens(model, "draw", local=False)
    np.testing.assert_allclose(got, truth.mean(), rtol=1e-6)


@pytest.mark.parametrize("kind", list(POINTS))
def test_moment_mode_is_exact_or_refuses_with_the_cause(kind):
    x = np.array(POINTS[kind])
    model, truth = _model(kind, x)
    bad = MOMENT_UNREPRESENTABLE.get(kind, [])
    keep = np.setdiff1d(np.arange(len(x)), bad)

    def subset(rows):
        points = {"x": x[rows]}
        if kind == "normal_mean":
            points["s"] = model["s"].get_value()[rows]
        return points

    if kind == "negative_binomial":  # alpha is a fixed array: every point
        np.testing.assert_allclose(_rsens(model, "moment")[0], truth, rtol=1e-6)
        return
    np.testing.assert_allclose(_rsens(model, "moment", subset(keep))[0], truth[keep], rtol=1e-6)
    if bad:
        with pytest.raises(ValueError, match="mode='draw'"):
            _rsens(model, "moment", subset(bad))


def test_beta_binomial_at_zero_and_many_trials_and_extreme_concentrations():
    """Rows of 0 to 100 trials, draws of concentration κ = 1e6 (the binomial limit)
    and 1e-3 (the mass at 0 and n): every function's results are finite, with no
    floating-point warning, and draw-mode R-sens equals the central finite-difference
    KL, and where one trial makes it a Bernoulli, that law's closed form. In moment
    mode the rows of 0 trials (a predictive of one value) are degenerate points."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=12)
    trials = np.array([0, 1, 2, 5, 40, 0, 3, 7, 100, 1, 9, 30])
    with pm.Model() as model:
        xd = pm.Data("x", x)
        a, b, kappa = pm.Normal("a"), pm.Normal("b"), pm.HalfNormal("kappa", 10)
        p = pm.math.invlogit(a + b * xd)
        pm.BetaBinomial(
            "y", n=trials, alpha=p * kappa, beta=(1 - p) * kappa, observed=np.minimum(trials, 1)
        )
    kappa = np.repeat([[1e6], [1e-3]], 20, axis=1)
    idata = posterior(
        {"a": rng.normal(size=(2, 20)), "b": rng.normal(size=(2, 20)), "kappa": kappa}
    )
    observed = xr.Dataset({"y": ("y_dim_0", np.minimum(trials, 1))})
    idata["observed_data"] = xr.DataTree(observed)
    quiet = dict(progressbar=False, extend_inferencedata=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        out = pm_sens.sensitivity(
            idata, model, mode="draw", interactions=True, method=["rsens", "kl"], **quiet
        )["sensitivity"]
        results = [out] + [
            call(idata, model, **quiet)
            for call in (
                pm_sens.permutation_importance,
                pm_sens.partial_dependence,
                pm_sens.integrated_gradients,
            )
        ]
    for result in results:
        for dataset in [result, *getattr(result, "children", {}).values()]:
            for name, values in getattr(dataset, "data_vars", {}).items():
                assert np.isfinite(values.values).all(), name
    np.testing.assert_allclose(out["rsens"].values, out["kl"].values, rtol=1e-4, atol=1e-12)
    # one trial: a Bernoulli of p for any κ, whose R-sens is |b| sqrt(p (1 − p))
    a, b = (idata["posterior"][name].values[..., None] for name in ("a", "b"))
    p = 1 / (1 + np.exp(-(a + b * x)))
    one = trials == 1
    expected = (np.abs(b) * np.sqrt(p * (1 - p)))[..., one]
    np.testing.assert_allclose(out["rsens"].values[..., one, 0], expected, rtol=1e-8)
    # moment mode: a row of 0 trials has a predictive of one value (matched mean 0),
    # marked degenerate and left out; the others are computed
    moment = pm_sens.sensitivity(idata, model, **quiet)["sensitivity"]
    assert (moment["degenerate"].values == (trials == 0)).all()
    assert np.isnan(moment["rsens"].values[trials == 0]).all()
    assert np.isfinite(moment["rsens"].values[trials > 0]).all()


@pytest.mark.parametrize("mode", ["moment", "draw"])
def test_negative_binomial_rates_beyond_any_support_sum_are_refused_in_our_words(mode):
    """Rates of 1e14 with a dispersion that differs between draws (bambi's default
    priors on unscaled predictors): the Fisher information of alpha and the KL
    between draws' laws sum over the support, which would need terabytes; our
    error names the cause instead of NumPy's MemoryError."""
    x = np.linspace(0.0, 1.0, 5)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        alpha = pm.Gamma("alpha", 2, 1)
        pm.NegativeBinomial("y", mu=pm.math.exp(32.0 + b * xd), alpha=alpha, observed=np.ones(5))
    idata = posterior({"b": np.array([[0.5, 0.6]]), "alpha": np.array([[0.5, 5.0]])})
    with pytest.raises(ValueError, match=r"negative_binomial predictive puts mass on counts"):
        pm_sens.sensitivity(idata, model, mode=mode, method=["rsens", "kl"], progressbar=False)

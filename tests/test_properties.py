"""Property-based checks (hypothesis, seeded, bounded): random small models of
every closed-form family, random points, draws and arguments.

For each case either a finite result equal to the closed form, or a
ValueError/TypeError whose message names the argument; never another exception,
a nan, or a change to the user's model or posterior.

Models are built once per family (a module-level cache), so the examples reuse
their compiled graphs; hypothesis varies points, draws and arguments.
"""

import functools

import numpy as np
import pymc as pm
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.special import expit, polygamma

import pm_sens
from tests.conftest import posterior

SETTINGS = settings(
    max_examples=25,
    derandomize=True,  # fixed seed: the same examples in every run
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)

S, NU, KAPPA, SHAPE, ALPHA, TRIALS = 0.7, 5.0, 5.0, 3.0, 2.5, 4


def _beta_rsens(b, eta):
    p, q = expit(eta), expit(-eta)
    return np.abs(b) * p * q * KAPPA * np.sqrt(polygamma(1, KAPPA * p) + polygamma(1, KAPPA * q))


#: family -> (likelihood on the linear predictor η = a + b·x, observed values,
#: per-draw R-sens(b, η), moment-mode R-sens(b, η) with identical draws)
FAMILIES = {
    "normal": (
        lambda eta, obs: pm.Normal("y", mu=eta, sigma=S, observed=obs),
        np.zeros,
        lambda b, eta: np.abs(b) / S,
        None,
    ),
    "studentt": (
        lambda eta, obs: pm.StudentT("y", nu=NU, mu=eta, sigma=S, observed=obs),
        np.zeros,
        lambda b, eta: np.abs(b) / S * np.sqrt((NU + 1) / (NU + 3)),
        None,  # the Student-t match of one law is that law
    ),
    "laplace": (
        lambda eta, obs: pm.Laplace("y", mu=eta, b=S, observed=obs),
        np.zeros,
        lambda b, eta: np.abs(b) / S,
        lambda b, eta: np.abs(b) / (np.sqrt(2) * S),  # Normal with variance 2b²
    ),
    "lognormal": (
        lambda eta, obs: pm.LogNormal("y", mu=eta, sigma=S, observed=obs),
        np.ones,
        lambda b, eta: np.abs(b) / S,
        # Gamma by moments: shape m²/v = 1/(e^{σ²} − 1), fixed; its log mean moves by b
        lambda b, eta: np.abs(b) / np.sqrt(np.expm1(S**2)),
    ),
    "gamma": (
        lambda eta, obs: pm.Gamma("y", alpha=SHAPE, beta=SHAPE / pm.math.exp(eta), observed=obs),
        np.ones,
        lambda b, eta: np.sqrt(SHAPE) * np.abs(b),
        None,
    ),
    "exponential": (
        lambda eta, obs: pm.Exponential("y", lam=pm.math.exp(-eta), observed=obs),
        np.ones,
        lambda b, eta: np.abs(b),
        None,
    ),
    "beta": (
        lambda eta, obs: pm.Beta(
            "y",
            alpha=KAPPA * pm.math.sigmoid(eta),
            beta=KAPPA * pm.math.sigmoid(-eta),
            observed=obs,
        ),
        lambda n: np.full(n, 0.5),
        _beta_rsens,
        None,
    ),
    "bernoulli": (
        lambda eta, obs: pm.Bernoulli("y", logit_p=eta, observed=obs),
        lambda n: np.zeros(n, dtype=int),
        lambda b, eta: np.abs(b) * np.sqrt(expit(eta) * expit(-eta)),
        None,
    ),
    "binomial": (
        lambda eta, obs: pm.Binomial("y", n=TRIALS, logit_p=eta, observed=obs),
        lambda n: np.zeros(n, dtype=int),
        lambda b, eta: np.abs(b) * np.sqrt(TRIALS * expit(eta) * expit(-eta)),
        None,
    ),
    "poisson": (
        lambda eta, obs: pm.Poisson("y", mu=pm.math.exp(eta), observed=obs),
        lambda n: np.zeros(n, dtype=int),
        lambda b, eta: np.abs(b) * np.exp(eta / 2),
        None,
    ),
    "negative_binomial": (
        lambda eta, obs: pm.NegativeBinomial("y", mu=pm.math.exp(eta), alpha=ALPHA, observed=obs),
        lambda n: np.zeros(n, dtype=int),
        lambda b, eta: np.abs(b) * np.sqrt(np.exp(eta) / (1 + np.exp(eta) / ALPHA)),
        None,
    ),
}

N_DATA = 6


@functools.cache
def _model(family):
    make, observed, *_ = FAMILIES[family]
    x = np.linspace(-1, 1, N_DATA)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        a = pm.Normal("a")
        b = pm.Normal("b")
        make(a + b * xd, observed(N_DATA))
    return model


def _snapshot(model, idata):
    return model["x"].get_value().copy(), {k: v.values.copy() for k, v in idata.posterior.items()}


def _unchanged(model, idata, before):
    x, draws = before
    np.testing.assert_array_equal(model["x"].get_value(), x)
    assert set(idata.children) == {"posterior"}
    for k, v in draws.items():
        np.testing.assert_array_equal(idata.posterior[k].values, v)


points = st.lists(st.floats(-3, 3), min_size=1, max_size=5).map(np.array)
coefficients = st.tuples(st.floats(-2, 2), st.floats(-2, 2))


@pytest.mark.parametrize("mode", ["moment", "draw"])
@pytest.mark.parametrize("family", sorted(FAMILIES))
@settings(SETTINGS, max_examples=6)
@given(
    x=points,
    draws=st.lists(coefficients, min_size=1, max_size=4),
    alpha=st.floats(0.1, 4.0),
)
def test_rsens_is_finite_and_matches_the_closed_form(mode, family, x, draws, alpha):
    *_, per_draw, matched = FAMILIES[family]
    model = _model(family)
    if mode == "moment":  # identical draws: the mixture is the one law
        draws = [draws[0]] * 2
    a, b = (np.array(c)[None, :] for c in zip(*draws, strict=True))
    idata = posterior({"a": a, "b": b})
    before = _snapshot(model, idata)
    out = pm_sens.sensitivity(
        idata,
        model,
        points={"x": x},
        mode=mode,
        alpha=alpha,
        progressbar=False,
        extend_inferencedata=True,
    )["sensitivity"]["rsens"].values.reshape(-1, len(x))
    closed = (matched or per_draw) if mode == "moment" else per_draw
    b, eta = b.reshape(-1, 1), a.reshape(-1, 1) + b.reshape(-1, 1) * x
    expected = np.sqrt(alpha) * closed(b, eta)
    if mode == "moment":
        expected = expected[:1]
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, np.broadcast_to(expected, out.shape), rtol=1e-7, atol=1e-300)
    del idata["sensitivity"]
    _unchanged(model, idata, before)


#: argument -> values that are never valid, for every public function that takes it
INVALID = {
    "method": [5, "nope", ["rsens", "nope"], []],
    "mode": [None, "moments", 1],
    "alpha": [0, -1.0, np.nan, np.inf, "a", None],
    "delta": [0, -1e-4, np.nan, "a", 1e300],
    "kl_scheme": ["backward", 1],
    "var_nodes": [0, 1.5, "a"],
    "interactions": ["yes", None, 2],
    "family": ["", "poisson", ["normal"], 3],
    "inputs": [5, ["x", "x"], ["nope"], []],
    "num_draws": [0, -2, 1.5, "a"],
    "random_seed": ["abc", -1, 1.5],
    "memory_limit": [0, -1, "a"],
    "points": [{"x": np.zeros(0)}, {"x": [np.nan, 1.0]}, {"nope": [1.0]}, 5],
    "var_name": ["nope", 5],
}
SENSITIVITY_ARGS = sorted(INVALID)
PERMUTATION_ARGS = {
    "kind": [None, "nope", []],
    "n_repeats": [0, -1, 1.5, "a"],
    "features": [[], ["nope"], 5],
    "inputs": INVALID["inputs"],
    "points": INVALID["points"],
    "random_seed": INVALID["random_seed"],
}
DEPENDENCE_ARGS = {
    "kind": [None, "nope", []],
    "grid_resolution": [0, 1, 1.5, "a"],
    "percentiles": [0.5, (0.1, 0.5, 0.9), ("a", "b"), (0.9, 0.1), (-0.1, 0.5)],
    "features": [[], ["nope"], 5],
    "ice": ["yes", None],
}
GRADIENT_ARGS = {
    "n_steps": [0, -1, 1.5, "a"],
    "statistic": ["nope", None, 3],
    "baseline": ["nope", {"nope": 0.0}, {"x": [np.nan]}],
    "points": INVALID["points"],
}
SUMMARY_ARGS = {
    "group": ["nope", 5],
    "var_names": [5, [], ["nope"]],
    "ci_prob": [0, 1, 1.5, "x"],
    "kind": ["nope", None],
    "scale": ["nope", None],
    "top_k": [0, -1, "a"],
    "n_bootstrap": [0, -1, 1.5],
    "random_seed": ["abc"],
    "skipna": ["yes", None],
    "by": ["nope", 5],
}


def _argument_cases(table):
    return st.sampled_from(sorted(table)).flatmap(
        lambda name: st.tuples(st.just(name), st.sampled_from(table[name]))
    )


@pytest.fixture(scope="module")
def normal_fit():
    model = _model("normal")
    rng = np.random.default_rng(5)
    idata = posterior({"a": rng.normal(size=(1, 3)), "b": rng.normal(size=(1, 3))})
    return model, idata


def _raises_naming(call, argument, model, idata):
    before = _snapshot(model, idata)
    with pytest.raises((ValueError, TypeError)) as error:
        call()
    assert argument in str(error.value), f"{argument}: {error.value}"
    _unchanged(model, idata, before)


@SETTINGS
@given(case=_argument_cases(INVALID))
def test_sensitivity_names_every_bad_argument(normal_fit, case):
    model, idata = normal_fit
    name, value = case
    kwargs = {name: value, "progressbar": False}
    if name == "random_seed":
        kwargs["num_draws"] = 2
    _raises_naming(lambda: pm_sens.sensitivity(idata, model, **kwargs), name, model, idata)


@SETTINGS
@given(
    function=st.sampled_from(["permutation_importance", "partial_dependence", "integrated"]),
    data=st.data(),
)
def test_other_functions_name_every_bad_argument(normal_fit, function, data):
    model, idata = normal_fit
    table = {
        "permutation_importance": PERMUTATION_ARGS,
        "partial_dependence": DEPENDENCE_ARGS,
        "integrated": GRADIENT_ARGS,
    }[function]
    name, value = data.draw(_argument_cases(table))
    call = {
        "permutation_importance": pm_sens.permutation_importance,
        "partial_dependence": pm_sens.partial_dependence,
        "integrated": pm_sens.integrated_gradients,
    }[function]
    kwargs = {name: value, "progressbar": False}
    if function == "permutation_importance" and name != "points":
        kwargs["observed"] = np.zeros(N_DATA)
    _raises_naming(lambda: call(idata, model, **kwargs), name, model, idata)


@pytest.fixture(scope="module")
def result(normal_fit):
    model, idata = normal_fit
    return pm_sens.sensitivity(idata, model, progressbar=False, extend_inferencedata=False)


@SETTINGS
@given(case=_argument_cases(SUMMARY_ARGS))
def test_summary_names_every_bad_argument(result, case):
    name, value = case
    before = result["sensitivity"].to_dataset().copy(deep=True)
    with pytest.raises((ValueError, TypeError)) as error:
        pm_sens.summary(result, **{name: value})
    assert name in str(error.value), f"{name}: {error.value}"
    assert result["sensitivity"].to_dataset().identical(before)


PLOT_ARGS = {
    "plot_importance": {
        "group": ["nope", 5],
        "var_names": [5, [], ["nope"]],
        "ci_prob": [0, 1.5, "x"],
        "scale": ["nope", None],
        "backend": ["nope", 5],
    },
    "plot_local": {
        "var_name": ["nope", 5],
        "group": ["nope", 5],
        "features": ["nope", 5, []],
        "color_by": ["nope", 5],
        "backend": ["nope", 5],
    },
    "plot_interactions": {
        "var_name": ["nope", "rsens", 5],
        "group": ["nope", 5],
        "scale": ["nope", None],
        "backend": ["nope", 5],
    },
}


PLOT_ARGS["plot_partial_dependence"] = {
    "kind": ["nope", None, 5],
    "features": ["nope", 5, []],
    "ci_prob": [0, 5, "x"],
    "backend": ["nope", 5],
}
PLOT_ARGS["plot_permutation_importance"] = {
    "var_names": [5, [], ["nope"]],
    "ci_prob": [0, 1.5, "x"],
}


@pytest.fixture(scope="module")
def all_groups(normal_fit):
    """One result of every function, for the plots."""
    model, idata = normal_fit
    out = pm_sens.sensitivity(
        idata, model, interactions=True, progressbar=False, extend_inferencedata=False
    )
    for function, kwargs in [
        (pm_sens.partial_dependence, {"kind": "mean", "grid_resolution": 3}),
        (
            pm_sens.permutation_importance,
            {"kind": "likelihood", "n_repeats": 2, "observed": np.zeros(N_DATA)},
        ),
    ]:
        result = function(idata, model, progressbar=False, extend_inferencedata=False, **kwargs)
        for name, group in result.children.items():
            out[name] = group
    return out


@SETTINGS
@given(plot=st.sampled_from(sorted(PLOT_ARGS)), data=st.data())
def test_plots_name_every_bad_argument(all_groups, plot, data):
    pytest.importorskip("arviz_plots")
    name, value = data.draw(_argument_cases(PLOT_ARGS[plot]))
    import matplotlib.pyplot as plt

    before = {k: v.to_dataset().copy(deep=True) for k, v in all_groups.children.items()}
    figures = plt.get_fignums()
    with pytest.raises((ValueError, TypeError)) as error:
        getattr(pm_sens, plot)(all_groups, **{name: value})
    assert name in str(error.value), f"{name}: {error.value}"
    assert plt.get_fignums() == figures, f"{name}={value!r}: a figure was made before the error"
    for k, v in before.items():
        assert all_groups[k].to_dataset().identical(v)

"""Every public argument: a bad value gets a ValueError/TypeError naming it, before compiling."""

import numpy as np
import pymc as pm
import pytest

import pm_sens
from pm_sens._core import context as _context
from tests.conftest import posterior


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(3)
    n = 12
    x = rng.normal(size=(n, 2))
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", shape=2)
        pm.Normal("y", xd @ b, 1.0, observed=x[:, 0])
    idata = posterior({"b": rng.normal(size=(1, 4, 2))})
    return model, idata, x


def _check(call, argument):
    with pytest.raises((ValueError, TypeError)) as error:
        call()
    assert argument in str(error.value), str(error.value)


SENSITIVITY = [
    ({"points": {"X": np.zeros((0, 2))}}, "points"),
    ({"method": 5}, "method"),
    ({"inputs": 5}, "inputs"),
    ({"inputs": ["X", "X"]}, "inputs"),
    ({"random_seed": "abc", "num_draws": 2}, "random_seed"),
    ({"family": ""}, "family"),
    ({"categorical": ["X[0]"]}, "categorical"),
]


@pytest.mark.parametrize(("kwargs", "argument"), SENSITIVITY)
def test_sensitivity_arguments(fitted, kwargs, argument):
    model, idata, _ = fitted
    _context._PREDICTIVES.pop(
        model, None
    )  # what other tests compiled must not hide a compile here
    _check(lambda: pm_sens.sensitivity(idata, model, progressbar=False, **kwargs), argument)
    predictive = _context._PREDICTIVES.get(model, {}).get(None)
    assert predictive is None or not predictive.compiled, "compiled before validating"


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"points": {"X": np.zeros((0, 2))}}, "points"),
        ({"features": []}, "features"),
        ({"n_repeats": 0}, "n_repeats"),
        ({"kind": None}, "kind"),
    ],
)
def test_permutation_importance_arguments(fitted, kwargs, argument):
    model, idata, x = fitted
    _check(
        lambda: pm_sens.permutation_importance(
            idata, model, observed=x[:, 0], progressbar=False, **kwargs
        ),
        argument,
    )


@pytest.mark.parametrize(
    "percentiles", [0.5, (0.1, 0.5, 0.9), ("a", "b"), (0.9, 0.1), (-0.1, 0.5)]
)
def test_partial_dependence_percentiles(fitted, percentiles):
    model, idata, _ = fitted
    _check(
        lambda: pm_sens.partial_dependence(
            idata, model, percentiles=percentiles, progressbar=False
        ),
        "percentiles",
    )


def test_integrated_gradients_empty_points(fitted):
    model, idata, _ = fitted
    _check(
        lambda: pm_sens.integrated_gradients(
            idata, model, points={"X": np.zeros((0, 2))}, progressbar=False
        ),
        "points",
    )


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"ci_prob": "x"}, "ci_prob"),
        ({"ci_prob": 0}, "ci_prob"),
        ({"ci_prob": 1.5}, "ci_prob"),
        ({"top_k": "a"}, "top_k"),
        ({"top_k": 0}, "top_k"),
        ({"n_bootstrap": -1}, "n_bootstrap"),
        ({"n_bootstrap": 0}, "n_bootstrap"),
        ({"var_names": []}, "var_names"),
        ({"var_names": 5}, "var_names"),
        ({"kind": None}, "kind"),
        ({"skipna": "yes"}, "skipna"),
        ({"random_seed": "abc"}, "random_seed"),
    ],
)
def test_summary_arguments(fitted, kwargs, argument):
    model, idata, _ = fitted
    idata = pm_sens.sensitivity(idata, model, progressbar=False)
    _check(lambda: pm_sens.summary(idata, **kwargs), argument)


@pytest.mark.parametrize(
    ("plot", "kwargs", "argument"),
    [
        ("plot_importance", {"group": "nope"}, "group"),
        ("plot_importance", {"backend": "nope"}, "backend"),
        ("plot_local", {"group": "nope"}, "group"),
        ("plot_interactions", {"group": "nope"}, "group"),
    ],
)
def test_plot_arguments(fitted, plot, kwargs, argument):
    model, idata, _ = fitted
    idata = pm_sens.sensitivity(idata, model, progressbar=False)
    _check(lambda: getattr(pm_sens, plot)(idata, **kwargs), argument)


def test_partial_dependence_plot_arguments(fitted):
    model, idata, _ = fitted
    idata = pm_sens.partial_dependence(idata, model, grid_resolution=5, progressbar=False)
    _check(lambda: pm_sens.plot_partial_dependence(idata, features="nope"), "features")
    _check(lambda: pm_sens.plot_partial_dependence(idata, ci_prob=5), "ci_prob")


@pytest.mark.parametrize(
    ("args", "kwargs", "argument"),
    [
        ((["poisson"], {}, []), {}, "family"),
        (("poisson", {"mu": "abc"}, []), {}, "parameters"),
        (("poisson", [1.0], []), {}, "parameters"),
        (("poisson", {"mu": 1.0}, None), {}, "inputs"),
        (("poisson", {"mu": 1.0}, "X"), {}, "inputs"),
    ],
)
def test_predictive_arguments(args, kwargs, argument):
    _check(lambda: pm_sens.Predictive(*args, **kwargs), argument)


def test_predictive_of_another_model_and_wrong_feature_names(fitted):
    model, idata, x = fitted
    with pm.Model():
        other = pm.Data("X", x)
        b = pm.Normal("b", shape=2)
        foreign = pm_sens.Predictive("normal", {"mu": other @ b, "sigma": 1.0}, [other])
    _check(lambda: pm_sens.sensitivity(idata, model, predictive=foreign), "predictive")
    xd = model["X"]
    named = pm_sens.Predictive(
        "normal", {"mu": xd @ model["b"], "sigma": 1.0}, [xd], feature_names=["a"]
    )
    _check(
        lambda: pm_sens.sensitivity(idata, model, predictive=named, progressbar=False),
        "feature_names",
    )


@pytest.mark.parametrize(
    "call",
    [
        pm_sens.sensitivity,
        pm_sens.permutation_importance,
        pm_sens.partial_dependence,
        pm_sens.integrated_gradients,
    ],
)
def test_the_posterior_and_model_swapped(fitted, call):
    """``f(model, idata)`` instead of ``f(idata, model)``: said in our words."""
    model, idata, _ = fitted
    with pytest.raises(TypeError, match=r"model=DataTree is not valid.*posterior comes first"):
        call(model, idata, progressbar=False)


def test_a_number_as_baseline(fitted):
    """baseline=0.0 starts every input at 0: the same as a dict of zeros."""
    model, idata, _ = fitted
    quiet = dict(progressbar=False, extend_inferencedata=False)
    by_number = pm_sens.integrated_gradients(idata, model, baseline=0.0, **quiet)
    by_dict = pm_sens.integrated_gradients(idata, model, baseline={"X": np.zeros(2)}, **quiet)
    np.testing.assert_array_equal(by_number["attribution"]["ig"], by_dict["attribution"]["ig"])
    _check(
        lambda: pm_sens.integrated_gradients(idata, model, baseline=np.nan, **quiet), "baseline"
    )

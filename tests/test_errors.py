"""Bad input: each error names the argument, the value and what is valid,
and is raised before any graph is compiled."""

import numpy as np
import pymc as pm
import pytest

import pm_sens
from pm_sens._core import context as _context
from tests.conftest import posterior


@pytest.fixture
def setup(rng):
    n = 12
    x = rng.normal(size=(n, 2))
    with pm.Model(coords={"obs": range(n)}) as model:
        xd = pm.Data("X", x, dims=("obs", "col"))
        group = pm.Data("group", np.arange(n) % 3)
        b = pm.Normal("b", shape=2)
        a = pm.Normal("a", shape=3)
        pm.Normal("y", mu=a[group] + xd @ b, sigma=1.0, observed=x[:, 0], dims="obs")
    idata = posterior({"b": rng.normal(size=(1, 8, 2)), "a": rng.normal(size=(1, 8, 3))})
    return model, idata, x


def _raises(setup, match, **kwargs):
    model, idata, _ = setup
    with pytest.raises((ValueError, TypeError), match=match):
        pm_sens.sensitivity(idata, model, progressbar=False, **kwargs)
    predictive = _context._PREDICTIVES.get(model, {}).get(kwargs.get("var_name"))
    assert predictive is None or not predictive.compiled, "compiled before validating"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"var_name": "z"}, r"var_name='z' is not an observed variable.*valid: \['y'\]"),
        ({"inputs": "nope"}, r"inputs='nope' is not a data container.*valid: \['X', 'group'\]"),
        ({"alpha": 0}, r"alpha=0 is not valid; it must be a finite number > 0"),
        ({"alpha": -1.5}, r"alpha=-1.5 is not valid"),
        ({"mode": "mean"}, r"mode='mean' is not valid; valid: \['moment', 'draw'\]"),
        ({"method": "shap"}, r"method='shap' is not valid; valid: \['rsens', 'kl', 'var'"),
        ({"method": ["rsens", "eah"]}, r"method=\['eah'\] needs interactions=True"),
        ({"delta": 0.0}, r"delta=0.0 is not valid"),
        ({"kl_scheme": "backward"}, r"kl_scheme='backward' is not valid; valid: \['forward'"),
        ({"family": "weibull"}, r"family='weibull' is not a known family; valid: \["),
        ({"family": "gamma"}, r"family='gamma' does not fit the normal likelihood.*valid: \["),
        ({"mode": "draw", "family": "normal"}, r"family='normal' is not valid with mode='draw'"),
        ({"num_draws": 0}, r"num_draws=0 is not valid"),
        ({"interactions": "yes"}, r"interactions='yes' is not valid"),
        ({"points": [1, 2]}, r"points=list is not valid"),
        ({"points": {"Z": np.ones((3, 2))}}, r"points has unknown name\(s\) \['Z'\]"),
        ({"points": {"X": np.ones((3, 5))}}, r"points\['X'\] has shape \(3, 5\); expected"),
        ({"points": {"X": np.ones(3)}}, r"points\['X'\] has shape \(3,\)"),
        (
            {"points": {"X": np.full((12, 2), np.nan)}},
            r"points\['X'\] has 24 non-finite value\(s\)",
        ),
        (
            {"points": {"X": np.ones((5, 2))}},
            r"points give 5 rows but \['group'\] still hold",
        ),
        (
            {"points": {"X": np.ones((5, 2)), "group": np.zeros(4, int)}},
            r"points have different numbers of rows",
        ),
        ({"predictive": "normal"}, r"predictive=str is not valid"),
    ],
)
def test_bad_arguments(setup, kwargs, match):
    _raises(setup, match, **kwargs)


def test_posterior_missing_a_free_variable(setup, rng):
    model, _, _ = setup
    idata = posterior({"b": rng.normal(size=(1, 8, 2))})
    with pytest.raises(ValueError, match=r"idata.posterior lacks \['a'\].*holds \['b'\]"):
        pm_sens.sensitivity(idata, model, progressbar=False)


def test_posterior_with_wrong_shape(setup, rng):
    model, _, _ = setup
    idata = posterior({"b": rng.normal(size=(1, 8, 3)), "a": rng.normal(size=(1, 8, 3))})
    with pytest.raises(ValueError, match=r"posterior\['b'\] has shape \(3,\).*shape \(2,\)"):
        pm_sens.sensitivity(idata, model, progressbar=False)


def test_no_posterior_group(setup):
    model, _, _ = setup
    with pytest.raises(ValueError, match=r"idata=dict has no 'posterior' group"):
        pm_sens.sensitivity({}, model, progressbar=False)


def test_model_without_observed_variable():
    with pm.Model() as model:
        pm.Normal("a")
    with pytest.raises(ValueError, match="model has no observed random variable"):
        pm_sens.sensitivity(posterior({"a": np.zeros((1, 2))}), model, progressbar=False)


def test_several_observed_variables_need_var_name(rng):
    with pm.Model() as model:
        x = pm.Data("x", rng.normal(size=5))
        b = pm.Normal("b")
        pm.Normal("y1", b * x, 1, observed=np.zeros(5))
        pm.Normal("y2", b * x, 1, observed=np.zeros(5))
    with pytest.raises(ValueError, match=r"several observed variables \['y1', 'y2'\]"):
        pm_sens.sensitivity(posterior({"b": np.zeros((1, 2))}), model, progressbar=False)


def test_predictions_that_depend_on_no_input(rng):
    with pm.Model() as model:
        b = pm.Normal("b")
        pm.Normal("y", b * np.ones(5), 1, observed=np.zeros(5))
    with pytest.raises(ValueError, match="depend on no float input with one row per obs"):
        pm_sens.sensitivity(posterior({"b": np.zeros((1, 2))}), model, progressbar=False)


def test_a_numpy_series_read_in_shifted_slices_is_named(rng):
    # one more value than observations, sliced in the graph: x[1:] and x[:-1]
    x = pm.math.constant(rng.normal(size=6))
    with pm.Model() as model:
        b = pm.Normal("b", shape=2)
        pm.Normal("y", b[0] * x[1:] + b[1] * x[:-1], 1, observed=np.zeros(5))
    with pytest.raises(ValueError, match=r"\{'NumPy array 0': \(6,\)\}.*shifted slices"):
        pm_sens.sensitivity(posterior({"b": np.zeros((1, 2, 2))}), model, progressbar=False)


def test_a_normal_match_needs_finite_variance(rng):
    x = rng.normal(size=6)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        pm.StudentT("y", nu=1.5, mu=b * xd, sigma=1, observed=x)
    idata = posterior({"b": np.ones((1, 3))})
    with pytest.raises(ValueError, match=r"variance is infinite at .*nu <= 2.*family='studentt'"):
        pm_sens.sensitivity(idata, model, family="normal", progressbar=False)
    # the default Student-t match needs no variance
    result = pm_sens.sensitivity(idata, model, progressbar=False)["sensitivity"]
    assert result.attrs["family"] == "studentt"


def test_studentt_family_needs_a_studentt_likelihood(rng):
    x = rng.normal(size=6)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        pm.Normal("y", b * xd, 1, observed=x)
    with pytest.raises(ValueError, match=r"family='studentt' does not fit.*valid: \['laplace'"):
        pm_sens.sensitivity(
            posterior({"b": np.ones((1, 3))}), model, family="studentt", progressbar=False
        )


def test_inputs_standardized_inside_the_model_couple_the_rows_when_asked(rng):
    x = rng.normal(size=100)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        z = (xd - xd.mean()) / xd.std()
        pm.Normal("y", b * z, 1, observed=x)
    idata = posterior({"b": np.ones((1, 3))})
    # held at the data's mean and sd by default; with hold_statistics=False every
    # row depends on every other: too long a series for a dense Jacobian
    refusing = pm_sens.Predictive.from_observed(model, hold_statistics=False)
    kw = dict(predictive=refusing, progressbar=False)
    match = r"depend on the inputs of up to 199 rows.*at most 64 rows.*outside, on the data"
    with pytest.raises(ValueError, match=match):
        pm_sens.sensitivity(idata, model, **kw)
    with pytest.raises(ValueError, match=match):
        pm_sens.sensitivity(idata, model, method="kl", **kw)
    # measures that evaluate whole series take it, and say so
    pfi = pm_sens.permutation_importance(idata, model, kind="entropy", **kw)
    assert pfi["permutation_importance"].attrs["dependence"].startswith("joint")


def test_nothing_of_the_user_is_mutated(setup):
    model, idata, x = setup
    before = {k: idata[k].to_dataset().copy(deep=True) for k in idata.children}
    pm_sens.sensitivity(idata, model, points={"X": x[:12] + 1.0}, progressbar=False)
    np.testing.assert_array_equal(model["X"].get_value(), x)
    assert set(idata.children) == {*before, "sensitivity"}
    for k, ds in before.items():
        assert idata[k].to_dataset().identical(ds)
    new = pm_sens.sensitivity(idata, model, progressbar=False, extend_inferencedata=False)
    assert set(new.children) == {"sensitivity"}


def test_dependence_is_found_at_a_single_point(rng):
    """With one point, a copy of it stands in for the other rows; the joint
    predictive of a one-point series centred by its own mean does not move."""
    x = rng.normal(size=(10, 2))
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", shape=2)
        # centred by a mean over the points of something random: not held
        pm.Normal("y", xd @ b - (xd @ b).mean(), 1, observed=x[:, 0])
    idata = posterior({"b": np.ones((1, 3, 2))})
    out = pm_sens.sensitivity(idata, model, points={"X": x[:1]}, progressbar=False)
    assert out["sensitivity"].attrs["dependence"].startswith("joint")
    np.testing.assert_allclose(out["sensitivity"]["rsens"].values, 0, atol=1e-12)


def test_non_finite_posterior_draws_are_named(setup):
    model, idata, _ = setup
    b = idata.posterior["b"].values.copy()
    b[0, 2, 1] = np.nan
    bad = posterior({"b": b, "a": idata.posterior["a"].values})
    with pytest.raises(
        ValueError, match=r"posterior\['b'\] has 1 draw\(s\) with non-finite.*chain=0, draw=2"
    ):
        pm_sens.sensitivity(bad, model, progressbar=False)


def test_non_finite_model_data_are_named_before_any_work(setup):
    """A nan put into an input's container by pm.set_data (pm.Data refuses one)."""
    model, idata, x = setup
    bad = x.copy()
    bad[3, 1] = np.nan
    model.set_data("X", bad)
    with pytest.raises(ValueError, match=r"the model's data 'X' has 1 non-finite value"):
        pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)


def _undefined_at_large_x():
    """log(b·x − 3) is nan for b·x < 3; exp(b·x) overflows at x = 800."""
    x = np.array([1.0, 5.0, 800.0])
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        pm.Poisson("y", mu=pm.math.exp(b * xd), observed=[0, 0, 0])
    with pm.Model() as log_model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        pm.Normal("y", mu=pm.math.log(b * xd - 3), sigma=1, observed=[0, 0, 0])
    return model, log_model, posterior({"b": np.ones((2, 3))})


def test_numerical_failures_name_the_quantity_the_point_and_the_draw():
    overflow, undefined, idata = _undefined_at_large_x()
    with pytest.raises(
        ValueError,
        match=r"derivative of the per-draw mean is not finite \(inf\) at point 2, chain=0, "
        r"draw=0 \(6 such value\(s\) among draws 0 to 5\): .*overflowing exp",
    ):
        pm_sens.sensitivity(idata, overflow, mode="draw", progressbar=False)
    with pytest.raises(
        ValueError,
        match=r"the per-draw mean is nan at point 0, chain=0, draw=0 \(6 such value\(s\) "
        r"among draws 0 to 5\): the model's expression is undefined",
    ):
        pm_sens.sensitivity(idata, undefined, mode="draw", progressbar=False)
    # an entropy from the graph: its chunks hold the statistics, not the parameters
    with pytest.raises(
        ValueError,
        match=r"the per-draw mean is nan at point 0, chain=0, draw=0 \(36 such value\(s\) "
        r"among draws 0 to 5\): the model's expression is undefined",
    ):
        pm_sens.permutation_importance(idata, undefined, kind="entropy", progressbar=False)
    # moment mode: not mistaken for a locality failure, named on the mixture
    with pytest.raises(
        ValueError,
        match=r"the mixture mean is nan at point 0 \(the mixture of draws 0 to 5; 2 such",
    ):
        pm_sens.sensitivity(idata, undefined, progressbar=False)


def test_a_fixed_per_observation_array_cannot_follow_new_points():
    x = np.linspace(-1, 1, 6)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        alpha = np.arange(1.0, 7.0)  # one value per observation, but no pm.Data
        pm.NegativeBinomial("y", mu=pm.math.exp(b * xd), alpha=alpha, observed=np.zeros(6, int))
    idata = posterior({"b": np.ones((1, 3))})
    for mode in ("moment", "draw"):
        with pytest.raises(
            ValueError, match=r"\['numpy_input_0'\] still hold.*NumPy arrays.*pm.Data"
        ):
            pm_sens.sensitivity(idata, model, mode=mode, points={"x": x[:3]}, progressbar=False)


def test_rates_beyond_any_support_sum_get_our_error(rng):
    """exp(60) ≈ 1e26 expected counts: the entropy's support sum cannot be held."""
    x = np.linspace(0, 1, 5)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        pm.Poisson("y", mu=pm.math.exp(b * xd), observed=np.ones(5, dtype=int))
    idata = posterior({"b": np.array([[60.0, 1.0]])})
    with pytest.raises(ValueError, match=r"poisson predictive puts mass on counts beyond"):
        pm_sens.permutation_importance(idata, model, kind="entropy", progressbar=False)
    with pytest.raises(ValueError, match=r"counts beyond the first 16,777,216"):
        pm_sens.partial_dependence(idata, model, kind="entropy", progressbar=False)

"""NumPy arrays passed straight into a model are inputs, as pm.Data containers are.

Each check compares a model written with NumPy arrays against the same model
written with pm.Data, on the same posterior draws: every public function, both
modes, to 1e-10.
"""

import logging

import numpy as np
import pymc as pm
import pytest
from pytensor.graph.basic import Constant
from pytensor.graph.traversal import ancestors

import pm_sens
from tests.written_two_ways import assert_same_values, other_functions
from tests.zoo._registry import known_posterior

N = 20
QUIET = dict(progressbar=False)
RTOL = 1e-10


def _glm(as_data):
    """The negative-binomial GLM notebook's model, with NumPy arrays or with pm.Data."""
    rng = np.random.default_rng(7)
    x1, x2 = rng.normal(size=(2, N))
    y = rng.poisson(3, N)
    with pm.Model() as model:
        v1 = pm.Data("x1", x1) if as_data else x1
        v2 = pm.Data("x2", x2) if as_data else x2
        b0 = pm.Normal("b0", 1, 0.5)
        b1 = pm.Normal("b1", 0, 0.3)
        b2 = pm.Normal("b2", 0, 0.3)
        alpha = pm.Exponential("alpha", 0.5)
        mu = pm.math.exp(b0 + b1 * v1 + b2 * v2)
        pm.NegativeBinomial("y", mu=mu, alpha=alpha, observed=y)
    return model, (x1, x2)


@pytest.fixture(scope="module")
def glm():
    (numpy_model, arrays), (data_model, _) = _glm(False), _glm(True)
    return numpy_model, data_model, known_posterior(data_model), arrays


def _same(got, expected):
    assert got.keys() == expected.keys()
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=RTOL, atol=1e-300)


def _values(dataset):
    return {k: np.asarray(v.values) for k, v in dataset.data_vars.items()}


@pytest.mark.parametrize("mode", ["moment", "draw"])
def test_sensitivity_equals_the_pm_data_model(glm, mode):
    numpy_model, data_model, idata, _ = glm
    kw = dict(
        mode=mode,
        method=["rsens", "kl", "var", "ead", "aed"],
        interactions=True,
        extend_inferencedata=False,
        **QUIET,
    )
    got = pm_sens.sensitivity(idata, numpy_model, **kw)["sensitivity"]
    expected = pm_sens.sensitivity(idata, data_model, **kw)["sensitivity"]
    assert list(got.feature.values) == ["x_b1", "x_b2"]
    assert got.attrs["numpy_inputs"] == ["x_b1", "x_b2"]
    assert expected.attrs["numpy_inputs"] == []
    _same(_values(got.to_dataset()), _values(expected.to_dataset()))


def test_uncertainty_and_attribution_equal_the_pm_data_model(glm):
    numpy_model, data_model, idata, _ = glm
    for group, call in other_functions(idata).items():
        got, expected = call(numpy_model)[group], call(data_model)[group]
        assert got.attrs["numpy_inputs"] == ["x_b1", "x_b2"], group
        assert_same_values(got, expected)


@pytest.mark.parametrize("mode", ["moment", "draw"])
def test_new_points_and_inputs_by_the_names_the_result_uses(glm, mode):
    numpy_model, data_model, idata, _ = glm
    new = np.random.default_rng(1).normal(size=(2, 7))
    kw = dict(mode=mode, extend_inferencedata=False, **QUIET)
    got = pm_sens.sensitivity(
        idata, numpy_model, points={"x_b1": new[0], "x_b2": new[1]}, inputs="x_b2", **kw
    )["sensitivity"]
    expected = pm_sens.sensitivity(
        idata, data_model, points={"x1": new[0], "x2": new[1]}, inputs="x2", **kw
    )["sensitivity"]
    assert list(got.feature.values) == ["x_b2"]
    _same(_values(got.to_dataset()), _values(expected.to_dataset()))


def test_an_unknown_point_name_lists_the_generated_names(glm):
    numpy_model, _, idata, _ = glm
    with pytest.raises(ValueError, match=r"x1.*x_b1"):
        pm_sens.sensitivity(idata, numpy_model, points={"x1": np.zeros(3)}, **QUIET)


def test_the_message_names_the_arrays_once_and_the_model_is_unchanged(glm, caplog):
    _, _, idata, _ = glm
    numpy_model, (x1, _) = _glm(False)  # a model no other test has asked about
    before = set(numpy_model.named_vars)
    with caplog.at_level(logging.INFO, logger="pm_sens"):
        pm_sens.sensitivity(idata, numpy_model, extend_inferencedata=False, **QUIET)
        pm_sens.permutation_importance(idata, numpy_model, n_repeats=1, **QUIET)
    said = [r.getMessage() for r in caplog.records if r.name == "pm_sens"]
    message = " ".join(said)
    assert sum("takes the NumPy array(s)" in m for m in said) == 1  # once per model
    assert "'x_b1' (20,), 'x_b2' (20,)" in message
    assert "points=" in message and "inputs=" in message
    # the model's graph still reads the arrays themselves
    assert set(numpy_model.named_vars) == before
    constants = [
        v
        for v in ancestors([numpy_model["y"]])
        if isinstance(v, Constant) and np.size(v.data) == N
    ]
    assert any(np.array_equal(c.data, x1) for c in constants)


def test_a_design_matrix_gets_its_coefficients_coords_and_equals_pm_data():
    rng = np.random.default_rng(2)
    x, z = rng.normal(size=(N, 3)), rng.normal(size=N)
    y = rng.normal(size=N)
    coords = {"predictor": ["dose", "age", "weight"]}

    def build(as_data):
        with pm.Model(coords=coords) as model:
            design = pm.Data("X", x, dims=("obs", "predictor")) if as_data else x
            extra = pm.Data("z", z) if as_data else z
            beta = pm.Normal("beta", 0, 1, dims="predictor")
            b = pm.Normal("b", 0, 1, shape=2)
            g = pm.Normal("g", 0, 0.3)
            # the same array in the mean and, through g * z, in the scale
            pm.Normal("y", design @ beta + b[1] * extra, pm.math.exp(g * extra), observed=y)
        return model

    numpy_model, data_model = build(False), build(True)
    idata = known_posterior(data_model)
    for mode in ("moment", "draw"):
        kw = dict(mode=mode, interactions=True, extend_inferencedata=False, **QUIET)
        got = pm_sens.sensitivity(idata, numpy_model, **kw)["sensitivity"]
        expected = pm_sens.sensitivity(idata, data_model, **kw)["sensitivity"]
        labels = ["X_beta[dose]", "X_beta[age]", "X_beta[weight]", "x_b[1]"]
        assert list(got.feature.values) == labels
        _same(_values(got.to_dataset()), _values(expected.to_dataset()))


def test_integer_arrays_and_censoring_bounds_are_held_and_said(caplog):
    rng = np.random.default_rng(4)
    x = rng.normal(size=N)
    trials = rng.integers(5, 15, size=N)
    with pm.Model() as model:
        b = pm.Normal("b", 0, 1, shape=2)
        pm.Binomial("y", n=trials, logit_p=b[0] + b[1] * x, observed=trials // 2)
    idata = known_posterior(model)
    with caplog.at_level(logging.INFO, logger="pm_sens"):
        out = pm_sens.sensitivity(idata, model, extend_inferencedata=False, **QUIET)
    assert out["sensitivity"].attrs["inputs"] == ["x_b[1]"]
    message = " ".join(r.getMessage() for r in caplog.records if r.name == "pm_sens")
    assert "integer array(s)" in message and "float pm.Data" in message


def test_a_numpy_group_index_is_a_categorical_input_like_a_pm_data_one():
    """The radon notebook's form: a[county] + b * floor with NumPy arrays."""
    rng = np.random.default_rng(8)
    n, n_counties = 40, 5
    county = rng.integers(0, n_counties, n)
    floor = rng.integers(0, 2, n).astype(float)
    coords = {"county": [f"c{j}" for j in range(n_counties)], "obs_id": np.arange(n)}

    def build(as_data):
        with pm.Model(coords=coords) as model:
            index = pm.Data("county_idx", county, dims="obs_id") if as_data else county
            level = pm.Data("floor", floor, dims="obs_id") if as_data else floor
            a = pm.Normal("a", 0, 1, dims="county")
            b = pm.Normal("b", 0, 1)
            sigma = pm.Exponential("sigma", 1)
            pm.Normal("y", a[index] + b * level, sigma, observed=rng.normal(size=n))
        return model

    numpy_model, data_model = build(False), build(True)
    idata = known_posterior(data_model)
    kw = dict(extend_inferencedata=False, **QUIET)
    for mode in ("moment", "draw"):
        got = pm_sens.sensitivity(idata, numpy_model, mode=mode, **kw)["sensitivity"]
        expected = pm_sens.sensitivity(idata, data_model, mode=mode, **kw)["sensitivity"]
        # named after the indexed variable's dims; its levels compared
        assert list(got.feature.values) == ["x_b", "county"]
        assert got.attrs["categorical_inputs"] == ["county"]
        np.testing.assert_allclose(got["rsens"].values, expected["rsens"].values, rtol=RTOL)
        np.testing.assert_allclose(
            got["levels_county"].values, expected["levels_county_idx"].values, rtol=RTOL
        )
    got = pm_sens.permutation_importance(idata, numpy_model, random_seed=2, **kw)
    expected = pm_sens.permutation_importance(idata, data_model, random_seed=2, **kw)
    _same(
        _values(got["permutation_importance"].to_dataset()),
        _values(expected["permutation_importance"].to_dataset()),
    )


def test_a_numpy_group_level_predictor_is_an_input_like_a_pm_data_one():
    """The radon notebook's hierarchical_intercept: county uranium ``u`` a NumPy array in
    ``mu_a = gamma_0 + gamma_1 * u`` (a Deterministic), read per house through
    ``alpha[county]`` with a NumPy ``county``: the same values as ``u`` and ``county``
    in pm.Data, uranium named after its coefficient."""
    rng = np.random.default_rng(9)
    n, n_counties = 30, 5
    county = np.r_[np.arange(n_counties), rng.integers(0, n_counties, n - n_counties)]
    floor = rng.normal(size=n)
    u = rng.normal(size=n_counties)

    def build(as_data):
        with pm.Model(coords={"county": np.arange(n_counties)}) as model:
            uranium = pm.Data("uranium", u, dims="county") if as_data else u
            index = pm.Data("county_idx", county) if as_data else county
            gamma_0 = pm.Normal("gamma_0", 0, 1)
            gamma_1 = pm.Normal("gamma_1", 0, 1)
            mu_a = pm.Deterministic("mu_a", gamma_0 + gamma_1 * uranium)
            epsilon_a = pm.Normal("epsilon_a", 0, 1, dims="county")
            alpha = pm.Deterministic("alpha", mu_a + 0.5 * epsilon_a, dims="county")
            beta = pm.Normal("beta", 0, 1)
            pm.Normal("y", alpha[index] + beta * floor, 1.0, observed=rng.normal(size=n))
        return model

    numpy_model, data_model = build(False), build(True)
    idata = known_posterior(data_model)
    kw = dict(extend_inferencedata=False, **QUIET)
    renamed = {"x_gamma_1": "uranium", "county": "county_idx", "x_beta": "x_beta"}
    for mode in ("moment", "draw"):
        got = pm_sens.sensitivity(idata, numpy_model, mode=mode, interactions=True, **kw)
        expected = pm_sens.sensitivity(idata, data_model, mode=mode, interactions=True, **kw)
        got, expected = got["sensitivity"], expected["sensitivity"]
        assert sorted(renamed[f] for f in got.feature.values) == sorted(expected.feature.values)
        order = [list(got.feature.values).index(k) for k, v in renamed.items()]
        want = [list(expected.feature.values).index(v) for v in renamed.values()]
        np.testing.assert_allclose(
            got["rsens"].values[..., order], expected["rsens"].values[..., want], rtol=RTOL
        )
        np.testing.assert_allclose(
            got["levels_county"].values, expected["levels_county_idx"].values, rtol=RTOL
        )
    # at new points, the uranium each house reads follows its county
    moved = pm_sens.sensitivity(
        idata, numpy_model, mode="draw", points={"county": county[::-1], "x_beta": floor}, **kw
    )["sensitivity"]
    np.testing.assert_allclose(
        moved["input_value"].sel(feature="x_gamma_1").values, u[county[::-1]], rtol=0
    )


def test_a_mask_computed_from_a_bool_container_picks_the_rows_as_a_numpy_mask():
    """The parametric survival notebook's ``eta[~censored]`` with a bool container
    ``censored`` (and ``eta = beta.dot(predictors.T)``): the same results as the mask
    given as a NumPy array."""
    rng = np.random.default_rng(10)
    n = 24
    X = np.column_stack([np.ones(n), rng.normal(size=n), rng.integers(0, 2, n)])
    event = rng.random(n) < 0.6

    def build(as_container):
        with pm.Model() as model:
            predictors = pm.Data("predictors", X)
            censored = pm.Data("censored", ~event) if as_container else ~event
            beta = pm.Normal("beta", 0, 1, shape=3)
            eta = beta.dot(predictors.T)
            s = pm.HalfNormal("s", 1.0)
            pm.Gumbel("events", eta[~censored], s, observed=rng.normal(size=event.sum()))
        return model

    container, numpy_mask = build(True), build(False)
    idata = known_posterior(numpy_mask)
    kw = dict(extend_inferencedata=False, **QUIET)
    for mode in ("moment", "draw"):
        got = pm_sens.sensitivity(idata, container, mode=mode, **kw)["sensitivity"]
        expected = pm_sens.sensitivity(idata, numpy_mask, mode=mode, **kw)["sensitivity"]
        assert got.sizes["point"] == event.sum()
        assert_same_values(got, expected)
    for name, call in other_functions(idata).items():
        assert_same_values(call(container)[name], call(numpy_mask)[name])

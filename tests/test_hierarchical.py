"""Group-level predictors read through a group index are features of every point."""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pm_sens
from tests.conftest import posterior


@pytest.fixture
def radon_like(rng):
    n, counties = 40, 5
    idx = rng.integers(0, counties, n)
    uranium = rng.normal(size=counties)
    floor = rng.integers(0, 2, n).astype(float)
    with pm.Model(coords={"obs_id": range(n)}) as model:
        county = pm.Data("county_idx", idx, dims="obs_id")
        u = pm.Data("uranium", uranium)
        f = pm.Data("floor", floor, dims="obs_id")
        a = pm.Normal("a", shape=counties)
        g = pm.Normal("g")
        b = pm.Normal("b")
        mu = a[county] + g * u[county] * (1 + 0.5 * f) + b * f
        pm.Normal("y", mu, 1.0, observed=np.zeros(n), dims="obs_id")
    draws = {
        "a": rng.normal(size=(1, 4, counties)),
        "g": rng.normal(size=(1, 4)),
        "b": rng.normal(size=(1, 4)),
    }
    return model, posterior(draws), idx, uranium, floor, draws


def test_group_level_input_is_differentiated_per_point(radon_like):
    model, idata, idx, uranium, floor, draws = radon_like
    out = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)["sensitivity"]
    assert list(out["feature"].values) == ["floor", "uranium", "county_idx"]
    g, b = draws["g"][0][:, None], draws["b"][0][:, None]
    rsens = out["rsens"].values[0]
    np.testing.assert_allclose(rsens[..., 1], np.abs(g * (1 + 0.5 * floor)), rtol=1e-12)
    np.testing.assert_allclose(rsens[..., 0], np.abs(g * 0.5 * uranium[idx] + b), rtol=1e-12)


def test_new_points_take_their_group_value_through_the_index(radon_like):
    model, idata, _, uranium, _, draws = radon_like
    points = {"county_idx": np.array([0, 4]), "floor": np.array([1.0, 0.0])}
    out = pm_sens.sensitivity(idata, model, points=points, mode="draw", progressbar=False)[
        "sensitivity"
    ]
    g, b = draws["g"][0][:, None], draws["b"][0][:, None]
    np.testing.assert_allclose(
        out["rsens"].values[0, :, :, 0], np.abs(g * 0.5 * uranium[[0, 4]] + b), rtol=1e-12
    )
    # or a household's own value of the group predictor, given directly
    points["uranium"] = np.array([2.0, -1.0])
    out = pm_sens.sensitivity(idata, model, points=points, mode="draw", progressbar=False)[
        "sensitivity"
    ]
    np.testing.assert_allclose(
        out["rsens"].values[0, :, :, 0], np.abs(g * 0.5 * np.array([2.0, -1.0]) + b), rtol=1e-12
    )


def test_group_copy_is_held_when_not_an_input(radon_like):
    model, idata, idx, uranium, floor, draws = radon_like
    out = pm_sens.sensitivity(idata, model, inputs="floor", mode="draw", progressbar=False)[
        "sensitivity"
    ]
    g, b = draws["g"][0][:, None], draws["b"][0][:, None]
    assert list(out["feature"].values) == ["floor"]
    np.testing.assert_allclose(
        out["rsens"].values[0, :, :, 0], np.abs(g * 0.5 * uranium[idx] + b), rtol=1e-12
    )


def test_lazy_points_take_their_group_value_through_a_lazy_index(radon_like):
    model, idata, _, uranium, _, draws = radon_like
    dask_array = pytest.importorskip("dask.array")
    index, floor = np.array([0, 4, 2, 2, 1]), np.array([1.0, 0.0, 1.0, 0.0, 1.0])
    points = {
        "county_idx": dask_array.from_array(index, chunks=2),
        "floor": dask_array.from_array(floor, chunks=2),
    }
    out = pm_sens.sensitivity(idata, model, points=points, mode="draw", progressbar=False)[
        "sensitivity"
    ]
    assert out["rsens"].chunks is not None
    g, b = draws["g"][0][:, None], draws["b"][0][:, None]
    np.testing.assert_allclose(
        out["rsens"].values[0, :, :, 0], np.abs(g * 0.5 * uranium[index] + b), rtol=1e-12
    )
    np.testing.assert_allclose(
        out["rsens"].values[0, :, :, 1], np.abs(g * (1 + 0.5 * floor)), rtol=1e-12
    )
    np.testing.assert_array_equal(out["county_idx"].values, index)


def _radon_notebook_model(county, floor, uranium, form):
    """The radon notebook's hierarchical intercept with county uranium, written as
    ``alpha[county_idx]`` of a Deterministic (``form="notebook"``) or per point."""
    coords = {"County": range(len(uranium)), "obs_id": range(len(county))}
    with pm.Model(coords=coords) as model:
        floor_idx = pm.Data("floor_idx", floor, dims="obs_id")
        county_idx = pm.Data("county_idx", county, dims="obs_id")
        u = pm.Data("uranium", uranium, dims="County")
        gamma = pm.Normal("gamma", 0.0, 10.0, shape=2)
        sigma_a = pm.Exponential("sigma_a", 1)
        epsilon_a = pm.Normal("epsilon_a", mu=0, sigma=1, dims="County")
        beta = pm.Normal("beta", 0, 10)
        sigma_y = pm.Exponential("sigma_y", 1)
        if form == "notebook":
            mu_a = pm.Deterministic("mu_a", gamma[0] + gamma[1] * u)
            alpha = pm.Deterministic("alpha", mu_a + sigma_a * epsilon_a, dims="County")
            theta = alpha[county_idx] + beta * floor_idx
        else:
            theta = (
                gamma[0]
                + gamma[1] * u[county_idx]
                + sigma_a * epsilon_a[county_idx]
                + beta * floor_idx
            )
        pm.Normal("y", theta, sigma_y, observed=np.zeros(len(county)), dims="obs_id")
    return model


def test_group_level_predictor_inside_an_indexed_expression(rng):
    """``(gamma_0 + gamma_1 u)[county]`` through Deterministics is the same model as
    ``gamma_0 + gamma_1 u[county]``: same features, same values."""
    n, counties = 30, 5
    county = rng.integers(0, counties, n)
    floor = rng.integers(0, 2, n).astype(float)
    uranium = rng.normal(size=counties)
    draws = {
        "gamma": rng.normal(size=(1, 4, 2)),
        "sigma_a": rng.gamma(2, 0.5, size=(1, 4)),
        "epsilon_a": rng.normal(size=(1, 4, counties)),
        "beta": rng.normal(size=(1, 4)),
        "sigma_y": rng.gamma(5, 0.2, size=(1, 4)),
    }
    results = {}
    for form in ("notebook", "per_point"):
        model = _radon_notebook_model(county, floor, uranium, form)
        out = pm_sens.sensitivity(posterior(draws), model, mode="draw", progressbar=False)
        results[form] = out["sensitivity"]
    notebook, per_point = results["notebook"], results["per_point"]
    assert list(notebook["feature"].values) == ["floor_idx", "uranium", "county_idx"]
    np.testing.assert_allclose(notebook["rsens"], per_point["rsens"], rtol=1e-12)
    # per draw: |gamma_1| / sigma_y for uranium (Normal, sigma not depending on inputs)
    expected = np.abs(draws["gamma"][0, :, 1]) / draws["sigma_y"][0]
    np.testing.assert_allclose(
        notebook["rsens"].sel(feature="uranium").values[0], np.tile(expected, (n, 1)).T
    )


def test_nested_hierarchy_and_group_level_design_matrix(rng):
    """A state predictor read per county (``u_state[state_of_county]``) and a county
    design matrix (``U @ b``), both indexed per household."""
    n, counties = 24, 6
    county = rng.integers(0, counties, n)
    state_of_county = np.array([0, 0, 1, 1, 2, 2])
    with pm.Model() as model:
        c = pm.Data("county_idx", county)
        s = pm.Data("state_of_county", state_of_county)
        u_state = pm.Data("u_state", rng.normal(size=3))
        design = pm.Data("U", rng.normal(size=(counties, 2)))
        g = pm.Normal("g")
        b = pm.Normal("b", shape=2)
        county_mean = pm.Deterministic("county_mean", g * u_state[s] + design @ b)
        pm.Poisson("y", pm.math.exp(county_mean[c]), observed=np.zeros(n))
    draws = {"g": rng.normal(size=(1, 3)), "b": rng.normal(size=(1, 3, 2))}
    out = pm_sens.sensitivity(posterior(draws), model, mode="draw", progressbar=False)
    out = out["sensitivity"]
    assert set(out["feature"].values) == {"u_state", "U[0]", "U[1]", "county_idx"}
    g, b = draws["g"][0], draws["b"][0]
    eta = (
        g[:, None] * u_state.get_value()[state_of_county[county]]
        + (design.get_value()[county] @ b.T).T
    )
    root = np.sqrt(np.exp(eta))  # Poisson, log link: R-sens = |∂η| sqrt(μ)
    rsens = out["rsens"].isel(chain=0)
    np.testing.assert_allclose(rsens.sel(feature="u_state"), np.abs(g)[:, None] * root)
    np.testing.assert_allclose(rsens.sel(feature="U[1]"), np.abs(b[:, 1])[:, None] * root)


def test_float_data_that_cannot_be_an_input_is_named_in_a_warning(rng):
    n = 10
    with pm.Model() as model:
        c = pm.Data("county_idx", rng.integers(0, 3, n))
        u = pm.Data("uranium", rng.normal(size=3))
        x = pm.Data("x", rng.normal(size=n))
        g = pm.Normal("g")
        pm.Normal("y", g * pt.cumsum(u)[c] + x, 1.0, observed=np.zeros(n))
    idata = posterior({"g": rng.normal(size=(1, 2))})
    with pytest.warns(UserWarning, match=r"depend on the float data 'uranium' \(3,\)"):
        out = pm_sens.sensitivity(idata, model, progressbar=False)
    assert list(out["sensitivity"]["feature"].values) == ["x", "county_idx"]


def test_data_in_a_prior_only_is_not_an_input(rng):
    """A measurement-error model: x_obs informs the prior of the true x, which the
    predictions read; given the posterior draws of x_true, x_obs changes nothing."""
    n = 12
    with pm.Model() as model:
        x_obs = pm.Data("x_obs", rng.normal(size=n))
        z = pm.Data("z", rng.normal(size=n))
        x_true = pm.Normal("x_true", x_obs, 0.1)
        b = pm.Normal("b", shape=2)
        pm.Normal("y", b[0] * x_true + b[1] * z, 1.0, observed=np.zeros(n))
    draws = {"x_true": rng.normal(size=(1, 2, n)), "b": rng.normal(size=(1, 2, 2))}
    out = pm_sens.sensitivity(posterior(draws), model, progressbar=False)
    assert list(out["sensitivity"]["feature"].values) == ["z"]


def test_results_say_which_containers_were_inputs(radon_like):
    model, idata, *_ = radon_like
    group = pm_sens.sensitivity(idata, model, progressbar=False)["sensitivity"]
    assert group.attrs["inputs"] == ["floor", "uranium"]  # uranium read per house
    assert group.attrs["categorical_inputs"] == ["county_idx"]
    only = pm_sens.permutation_importance(
        idata, model, inputs="floor", kind="entropy", n_repeats=1, progressbar=False
    )["permutation_importance"]
    assert only.attrs["inputs"] == ["floor"] and only.attrs["categorical_inputs"] == []

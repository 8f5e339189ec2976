"""Group-level predictors read through a group index are features of every point."""

import numpy as np
import pymc as pm
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

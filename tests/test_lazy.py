"""Dask-backed points and posteriors: local results come back as dask arrays,
block by block, equal to the in-memory results whatever the chunking."""

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pm_sens
from pm_sens._run.blocks import BlockJob
from tests.conftest import interaction_model, posterior

pytest.importorskip("dask")

METHODS = ["rsens", "kl", "var", "ead", "aed"]
QUIET = dict(progressbar=False, extend_inferencedata=False)


@pytest.fixture(scope="module")
def heteroscedastic():
    rng = np.random.default_rng(11)
    model, idata = interaction_model(rng, 30, 2, 12)
    points = xr.Dataset(
        {"X": (("obs", "col"), rng.normal(size=(50, 2)))},
        coords={"obs": np.arange(100, 150), "col": ["a", "b"]},
    )
    return model, idata, points


def _assert_same(lazy, eager, names):
    for name in names:
        assert lazy[name].chunks is not None, f"{name} should be dask-backed"
        np.testing.assert_allclose(lazy[name].values, eager[name].values, rtol=1e-10, atol=1e-14)
        assert lazy[name].dims == eager[name].dims
    for coord in eager.coords:
        if eager[coord].dtype.kind == "f":  # input_sd: dask's sum order, to round-off
            np.testing.assert_allclose(lazy[coord].values, eager[coord].values, rtol=1e-14)
        else:
            np.testing.assert_array_equal(lazy[coord].values, eager[coord].values)


@pytest.mark.parametrize("mode", ["moment", "draw"])
@pytest.mark.parametrize("rows", [7, 50])
def test_lazy_points_give_dask_results_equal_to_in_memory(heteroscedastic, mode, rows):
    model, idata, points = heteroscedastic
    kw = dict(method=METHODS, mode=mode, interactions=True, **QUIET)
    eager = pm_sens.sensitivity(idata, model, points=points, **kw)["sensitivity"]
    lazy = pm_sens.sensitivity(idata, model, points=points.chunk(obs=rows), **kw)["sensitivity"]
    _assert_same(lazy, eager, eager.data_vars)
    # one block per chunk of points
    expected = (rows,) * (50 // rows) + ((50 % rows,) if 50 % rows else ())
    assert lazy["rsens"].chunksizes["obs"] == expected


def test_lazy_points_in_draw_mode_split_the_draws_by_memory(heteroscedastic):
    model, idata, points = heteroscedastic
    kw = dict(mode="draw", interactions=True, **QUIET)
    eager = pm_sens.sensitivity(idata, model, points=points, **kw)["sensitivity"]
    # room for about 5 draws of (10 points x (2 + 2 x 2) features) per block
    small = pm_sens.sensitivity(
        idata, model, points=points.chunk(obs=10), memory_limit=5 * 8 * 10 * 6, **kw
    )["sensitivity"]
    assert small["rsens"].chunksizes["draw"] == (5, 5, 2)
    assert small["rsens"].chunksizes["chain"] == (1, 1)
    _assert_same(small, eager, ["rsens", "rsens2"])


def test_lazy_posterior_in_draw_mode_gives_results_chunked_like_it(heteroscedastic, tmp_path):
    model, idata, _ = heteroscedastic
    path = tmp_path / "posterior.nc"
    idata["posterior"].to_dataset().copy(deep=True).drop_attrs().to_netcdf(path, engine="scipy")
    with xr.open_dataset(path, engine="scipy", chunks={"draw": 5}) as opened:
        lazy_idata = xr.DataTree.from_dict({"posterior": opened})
        kw = dict(mode="draw", method=METHODS, interactions=True, **QUIET)
        eager = pm_sens.sensitivity(idata, model, **kw)["sensitivity"]
        lazy = pm_sens.sensitivity(lazy_idata, model, **kw)["sensitivity"]
        assert lazy["rsens"].chunksizes["draw"] == (5, 5, 2)
        _assert_same(lazy, eager, eager.data_vars)
        eager = pm_sens.integrated_gradients(idata, model, **QUIET)["attribution"]
        lazy = pm_sens.integrated_gradients(lazy_idata, model, **QUIET)["attribution"]
        _assert_same(lazy, eager, eager.data_vars)


def test_integrated_gradients_with_lazy_points_and_baselines(heteroscedastic):
    model, idata, points = heteroscedastic
    baseline = {"X": np.linspace(-1, 1, 100).reshape(50, 2)}
    for given in (None, baseline):
        kw = dict(baseline=given, **QUIET)
        eager = pm_sens.integrated_gradients(idata, model, points=points, **kw)["attribution"]
        lazy = pm_sens.integrated_gradients(idata, model, points=points.chunk(obs=8), **kw)
        _assert_same(lazy["attribution"], eager, eager.data_vars)


def test_summary_of_lazy_results(heteroscedastic):
    model, idata, points = heteroscedastic
    lazy_points = points.chunk(obs=9)
    for mode in ("draw", "moment"):
        kw = dict(mode=mode, **QUIET)
        eager = pm_sens.summary(pm_sens.sensitivity(idata, model, points=points, **kw))
        lazy = pm_sens.summary(pm_sens.sensitivity(idata, model, points=lazy_points, **kw))
        np.testing.assert_allclose(lazy["importance"], eager["importance"], rtol=1e-12)
        if mode == "draw":  # intervals over the same draws
            np.testing.assert_allclose(lazy["ci_lower"], eager["ci_lower"], rtol=1e-12)
        else:  # bootstrap weights drawn per chunk: another sample of the same distribution
            assert np.all(lazy["ci_lower"] < lazy["importance"])
            assert np.all(lazy["importance"] < lazy["ci_upper"])


def test_permutation_importance_reads_lazy_points_into_memory(heteroscedastic):
    model, idata, points = heteroscedastic
    observed = {"observed": np.zeros(50), "random_seed": 2, "n_repeats": 2, **QUIET}
    eager = pm_sens.permutation_importance(idata, model, points=points, **observed)
    lazy = pm_sens.permutation_importance(idata, model, points=points.chunk(obs=9), **observed)
    for name in ("entropy_pfi", "likelihood_pfi"):
        np.testing.assert_allclose(
            lazy["permutation_importance"][name].values,
            eager["permutation_importance"][name].values,
            rtol=1e-12,
        )


def test_non_finite_lazy_points_fail_when_their_block_is_read(heteroscedastic):
    model, idata, points = heteroscedastic
    # beyond the first rows, which are checked at once (PROBE_ROWS)
    bad = xr.concat([points, points], "obs").drop_vars("obs")
    bad["X"][90, 1] = np.nan
    result = pm_sens.sensitivity(idata, model, points=bad.chunk(obs=10), **QUIET)
    with pytest.raises(ValueError, match=r"points\['X'\] has 1 non-finite value"):
        result["sensitivity"]["rsens"].compute()
    assert np.isnan(bad["X"].values[90, 1])  # the user's points are untouched
    bad["X"][90, 1] = 0.0
    bad["X"][3, 0] = np.inf
    with pytest.raises(ValueError, match=r"points\['X'\] has 1 non-finite value"):
        pm_sens.sensitivity(idata, model, points=bad.chunk(obs=10), **QUIET)


def test_a_bad_lazy_request_fails_before_any_block_runs(rng):
    n = 100
    x = rng.normal(size=n)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        # centred by the mean of b * x over the points: every point depends on all,
        # too long a series for the dense Jacobian
        pm.Normal("y", mu=b * xd - (b * xd).mean(), sigma=1, observed=x)
    idata = posterior({"b": rng.normal(size=(1, 5))})
    points = xr.Dataset({"x": ("obs", rng.normal(size=n))}).chunk(obs=5)
    with pytest.raises(ValueError, match="depend on the inputs of up to .* rows"):
        pm_sens.sensitivity(idata, model, points=points, **QUIET)


def test_summary_runs_each_block_once_for_all_variables(heteroscedastic, monkeypatch):
    model, idata, points = heteroscedastic
    runs = []
    run = BlockJob.run
    monkeypatch.setattr(BlockJob, "run", lambda job, *args: runs.append(1) or run(job, *args))
    kw = dict(mode="draw", interactions=True, **QUIET)
    result = pm_sens.sensitivity(idata, model, points=points.chunk(obs=25), **kw)
    table = pm_sens.summary(result)
    assert set(table["variable"]) == {"rsens", "rsens2"}
    assert len(runs) == np.prod(result["sensitivity"]["rsens"].data.numblocks) == 4

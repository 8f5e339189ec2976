"""The same features and values from in-memory input, dask-backed points, a lazy
posterior, and (for hierarchical models) a dask.distributed cluster."""

import numpy as np
import pytest
import xarray as xr

import pm_sens
from tests.zoo import ZOO_MODULES  # noqa: F401 (registers the models)
from tests.zoo._registry import ZOO

pytest.importorskip("dask")

#: one model per form where laziness has broken before: categorical inputs,
#: group-level predictors, generic likelihoods, held per-point values
MODELS = [
    "varying_intercepts",
    "group_level_predictor",
    "bernoulli_far_apart_levels",
    "flag_and_one_hot",
    "poisson_offset",
    "truncated_normal",
    "censored_normal_per_row_bounds",
    "binomial_trials",
]
QUIET = dict(interactions=True, progressbar=False, extend_inferencedata=False)


def _points(case):
    """The model's per-point containers as a Dataset (rows along ``obs``)."""
    n = len(next(iter(case.idata["observed_data"].to_dataset().data_vars.values())))
    data = {}
    for name, var in case.model.named_vars.items():
        value = var.get_value() if hasattr(var, "get_value") else None
        if value is None or np.ndim(value) not in (1, 2) or len(value) != n:
            continue
        dims = ("obs",) if np.ndim(value) == 1 else ("obs", f"{name}_column")
        data[name] = (dims, value)
    return xr.Dataset(data)


def _lazy_posterior(case):
    lazy = case.idata.copy()
    lazy["posterior"] = xr.DataTree(case.idata["posterior"].to_dataset().chunk(draw=2))
    return lazy


def _assert_same(got, expected):
    got, expected = got.to_dataset().compute(), expected.to_dataset()
    assert list(got["feature"].values) == list(expected["feature"].values)
    assert set(got.data_vars) == set(expected.data_vars)
    for name, var in expected.data_vars.items():
        assert np.isfinite(var.values).any(), f"{name} has no finite value to compare"
        # round-off: the moment sums are merged in another order per block
        np.testing.assert_allclose(got[name].values, var.values, rtol=1e-8, atol=1e-14)


@pytest.mark.parametrize("mode", ["moment", "draw"])
@pytest.mark.parametrize("name", MODELS)
def test_dask_points_and_lazy_posteriors_give_the_in_memory_results(name, mode):
    case = ZOO[name]()
    points = _points(case)
    eager = pm_sens.sensitivity(case.idata, case.model, points=points, mode=mode, **QUIET)
    chunked = pm_sens.sensitivity(
        case.idata, case.model, points=points.chunk(obs=7), mode=mode, **QUIET
    )
    _assert_same(chunked["sensitivity"], eager["sensitivity"])
    eager = pm_sens.sensitivity(case.idata, case.model, mode=mode, **QUIET)
    lazy = pm_sens.sensitivity(_lazy_posterior(case), case.model, mode=mode, **QUIET)
    _assert_same(lazy["sensitivity"], eager["sensitivity"])


@pytest.mark.slow
def test_hierarchical_models_on_a_cluster_equal_in_process():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with distributed.Client(cluster):
        for name in ("varying_intercepts", "group_level_predictor"):
            case = ZOO[name]()
            for mode in ("moment", "draw"):
                eager = pm_sens.sensitivity(case.idata, case.model, mode=mode, **QUIET)
                lazy = pm_sens.sensitivity(_lazy_posterior(case), case.model, mode=mode, **QUIET)
                _assert_same(lazy["sensitivity"], eager["sensitivity"])
                points = _points(case)
                remote = pm_sens.sensitivity(
                    case.idata, case.model, points=points.chunk(obs=10), mode=mode, **QUIET
                )
                _assert_same(remote["sensitivity"], eager["sensitivity"])
    cluster.close()

"""The same features and values from in-memory input, dask-backed points, a lazy
posterior, and (for hierarchical models) a dask.distributed cluster."""

from functools import partial

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pm_sens
from tests.zoo import ZOO_MODULES  # noqa: F401 (registers the models)
from tests.zoo._registry import ZOO

pytest.importorskip("dask")

#: every model whose sensitivity runs (not a declared error)
MODELS = sorted(
    name
    for name in ZOO
    if not {"sensitivity_moment", "sensitivity_draw"} & set(ZOO[name]().errors)
)
#: forms where laziness has broken before (categorical inputs, group-level
#: predictors, generic likelihoods, held per-point values): with interactions
#: too; the other models' second-order graphs are the in-memory zoo test's
WITH_INTERACTIONS = {
    "varying_intercepts",
    "group_level_predictor",
    "bernoulli_far_apart_levels",
    "flag_and_one_hot",
    "poisson_offset",
    "truncated_normal",
    "censored_normal_per_row_bounds",
    "binomial_trials",
}
QUIET = dict(progressbar=False, extend_inferencedata=False)


def _points(case):
    """The model's per-point values as a Dataset (rows along ``obs``), or None.

    A GP predictive's one input ``X`` defaults to its training inputs; a bambi
    model takes data columns, not containers (its lazy posterior is checked).
    """
    predictive = case.kwargs.get("predictive")
    if predictive is not None:
        x = next(iter(predictive.defaults.values()))
        return xr.Dataset({"X": (("obs", "X_column"), x)})
    if not isinstance(case.model, pm.Model):
        return None
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
    interactions = name in WITH_INTERACTIONS
    run = partial(
        pm_sens.sensitivity,
        model=case.model,
        mode=mode,
        interactions=interactions,
        **QUIET,
        **case.kwargs,
    )
    points = _points(case)
    if points is not None:
        eager = run(case.idata, points=points)
        chunked = run(case.idata, points=points.chunk(obs=7))
        _assert_same(chunked["sensitivity"], eager["sensitivity"])
    eager = run(case.idata)
    lazy = run(_lazy_posterior(case))
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
                eager = pm_sens.sensitivity(
                    case.idata, case.model, mode=mode, interactions=True, **QUIET
                )
                lazy = pm_sens.sensitivity(
                    _lazy_posterior(case), case.model, mode=mode, interactions=True, **QUIET
                )
                _assert_same(lazy["sensitivity"], eager["sensitivity"])
                points = _points(case)
                remote = pm_sens.sensitivity(
                    case.idata,
                    case.model,
                    points=points.chunk(obs=10),
                    mode=mode,
                    interactions=True,
                    **QUIET,
                )
                _assert_same(remote["sensitivity"], eager["sensitivity"])
    cluster.close()

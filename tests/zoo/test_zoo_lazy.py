"""Hierarchical zoo models on a dask.distributed cluster: the in-process results.

Every zoo model's lazy posterior and dask-backed points are compared with its
in-memory results in its own run (`tests.zoo.run`, step ``dask_and_lazy``).
"""

import pytest

import pm_sens
from tests.zoo import ZOO_MODULES  # noqa: F401 (registers the models)
from tests.zoo._lazy import assert_same, lazy_posterior, model_points
from tests.zoo._registry import ZOO

QUIET = dict(interactions=True, progressbar=False, extend_inferencedata=False)


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
                lazy = pm_sens.sensitivity(lazy_posterior(case), case.model, mode=mode, **QUIET)
                assert_same(lazy["sensitivity"], eager["sensitivity"], f"{name}, lazy, {mode}")
                points = model_points(case).chunk(obs=10)
                remote = pm_sens.sensitivity(
                    case.idata, case.model, points=points, mode=mode, **QUIET
                )
                assert_same(remote["sensitivity"], eager["sensitivity"], f"{name}, {mode}")
    cluster.close()

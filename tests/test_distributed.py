"""The same results on a dask.distributed cluster (2 worker processes) as in process."""

import importlib

import numpy as np
import pytest
import xarray as xr

import pm_sens
from tests.conftest import interaction_model

distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bart_case():
    """The zoo's fitted BART regression, built before the cluster starts: pymc-bart
    forks a Manager process per BART variable, which can hang once the client's
    threads run."""
    from tests.zoo import ZOO_MODULES  # noqa: F401 (registers the models)
    from tests.zoo._registry import ZOO

    return ZOO["bart_regression"]()


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with distributed.Client(cluster) as client:
        yield client
    cluster.close()


def test_bart_is_evaluated_in_the_process_that_holds_its_trees(bart_case, client):
    """pymc-bart keeps the trees in the fitting process: with a cluster active, a BART
    model's lazily loaded posterior is read (on the cluster) and evaluated here, with
    the in-memory results."""
    from tests.zoo._lazy import lazy_posterior

    quiet = dict(progressbar=False, extend_inferencedata=False)
    local = pm_sens.sensitivity(bart_case.idata, bart_case.model, mode="draw", **quiet)
    lazy = lazy_posterior(bart_case)
    remote = pm_sens.sensitivity(lazy, bart_case.model, mode="draw", **quiet)
    np.testing.assert_allclose(
        remote["sensitivity"]["kl"].values, local["sensitivity"]["kl"].values, rtol=1e-12
    )


def test_results_on_a_cluster_equal_in_process(client, tmp_path):
    rng = np.random.default_rng(3)
    model, idata = interaction_model(rng, 40, 2, 30)
    path = tmp_path / "posterior.nc"
    idata["posterior"].to_dataset().copy(deep=True).drop_attrs().to_netcdf(path, engine="scipy")
    lazy = xr.open_dataset(path, engine="scipy", chunks={"draw": 10})
    lazy_idata = xr.DataTree.from_dict(
        {"posterior": lazy, "observed_data": idata["observed_data"].to_dataset()}
    )
    small = dict(progressbar=False, extend_inferencedata=False, memory_limit=5e4)

    def both(function, **kw):
        local = function(idata, model, **small, **kw)
        remote = function(lazy_idata, model, **small, **kw)
        return local, remote

    # draw-mode R-sens alone runs its own graph (`WhitenedNorm`), rebuilt on the
    # workers; R-sens2 on the workers: with dask-backed points, below
    for mode, interactions in (("moment", False), ("draw", False)):
        # local=True: the small memory limit would otherwise keep only the in-process means
        local, remote = both(pm_sens.sensitivity, mode=mode, interactions=interactions, local=True)
        for name in ("rsens", "rsens2")[: 1 + interactions]:
            np.testing.assert_allclose(
                remote["sensitivity"][name].values, local["sensitivity"][name].values, rtol=1e-10
            )
    local, remote = both(pm_sens.permutation_importance, random_seed=1)
    for name in ("entropy_pfi", "likelihood_pfi"):
        np.testing.assert_allclose(
            remote["permutation_importance"][name].values,
            local["permutation_importance"][name].values,
            rtol=1e-10,
            atol=1e-14,
        )
    local, remote = both(pm_sens.integrated_gradients)
    np.testing.assert_allclose(
        remote["attribution"]["ig"].values, local["attribution"]["ig"].values, rtol=1e-10
    )
    # dask-backed points: one task per block of points, run on the workers
    points = xr.Dataset({"X": (("obs", "col"), rng.normal(size=(60, 2)))})
    for mode, interactions in (("moment", True), ("draw", False)):
        kw = dict(mode=mode, interactions=interactions, local=True, **small)
        local = pm_sens.sensitivity(idata, model, points=points, **kw)["sensitivity"]
        remote = pm_sens.sensitivity(idata, model, points=points.chunk(obs=25), **kw)
        for name in ("rsens", "rsens2")[: 1 + interactions]:
            assert remote["sensitivity"][name].chunks is not None
            np.testing.assert_allclose(
                remote["sensitivity"][name].values, local[name].values, rtol=1e-10
            )
    local = pm_sens.integrated_gradients(idata, model, points=points, **small)
    remote = pm_sens.integrated_gradients(idata, model, points=points.chunk(obs=25), **small)
    np.testing.assert_allclose(
        remote["attribution"]["ig"].values, local["attribution"]["ig"].values, rtol=1e-10
    )
    # the chunks and blocks really ran on the workers
    cached = client.run(
        lambda: list(importlib.import_module("pm_sens._run.cluster")._WORKER_CACHE)
    )
    assert any(cached.values())
    lazy.close()

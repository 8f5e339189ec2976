import multiprocessing
import sys

import arviz_base as azb
import numpy as np
import pymc as pm
import pytensor
import pytest
import xarray as xr

import pm_sens

# a rewrite that fails is skipped by PyTensor, with a traceback on the user's
# terminal: in the tests it is an error
pytensor.config.on_opt_error = "raise"


def pytest_sessionfinish(session):
    """Stop the processes tests leave running, so none outlives the run.

    pymc-bart starts a multiprocessing Manager (a server process) for every
    BART variable and never stops it; forked from a worker with threads, it
    can hang on a lock and keep the run's output open after pytest is done.
    """
    for child in multiprocessing.active_children():
        child.terminate()


def posterior(draws, dims=None, coords=None):
    """DataTree with a posterior group from arrays shaped (chain, draw, ...)."""
    return azb.from_dict({"posterior": draws}, dims=dims or {}, coords=coords or {})


@pytest.fixture(autouse=True)
def _close_figures():
    """Close the figures a test made (matplotlib keeps them open until told)."""
    yield
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close("all")


@pytest.fixture(autouse=True, scope="session")
def _one_core_per_worker():
    """Calls run on one core: the test command runs two pytest workers, one per core.

    `tests/test_cores.py` sets more where it checks the threads.
    """
    with pm_sens.set_options(cores=1):
        yield


@pytest.fixture
def rng():
    return np.random.default_rng(20261123)


def interaction_model(rng, n, chains, draws):
    """Normal regression on X (obs, col) with an a:b interaction and sigma depending
    on b, and a posterior of known draws (with observed_data)."""
    x = rng.normal(size=(n, 2))
    with pm.Model(coords={"obs": range(n), "col": ["a", "b"]}) as model:
        xd = pm.Data("X", x, dims=("obs", "col"))
        b = pm.Normal("b", dims="col")
        g = pm.Normal("g")
        mu = xd @ b + g * xd[:, 0] * xd[:, 1]
        pm.Normal("y", mu=mu, sigma=pm.math.exp(0.2 * xd[:, 1]), observed=x[:, 0], dims="obs")
    draws = {"b": rng.normal(size=(chains, draws, 2)), "g": rng.normal(size=(chains, draws))}
    idata = posterior(draws, dims={"b": ["col"]}, coords={"col": ["a", "b"]})
    idata["observed_data"] = xr.DataTree(xr.Dataset({"y": ("obs", x[:, 0])}))
    return model, idata

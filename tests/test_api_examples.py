"""The Examples section of every public docstring runs as written, its printed
values as shown: on the quickstart's model (examples/quickstart.py) with known
posterior draws, the model and posterior the examples name."""

import doctest
import importlib.util
import inspect
import sys
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from rich.console import Console

import pm_sens
from pm_sens._run import progress
from tests.conftest import posterior

EXAMPLES = Path(__file__).parent.parent / "examples"
PUBLIC = sorted(n for n in pm_sens.__all__ if n != "__version__")
METHODS = ["Predictive.from_observed", "Predictive.from_gp"]


def _quickstart():
    if str(EXAMPLES) not in sys.path:  # the example imports its figures helper
        sys.path.insert(0, str(EXAMPLES))
    spec = importlib.util.spec_from_file_location("quickstart", EXAMPLES / "quickstart.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def fitted():
    """The quickstart's model on 60 of its observations, and 2 chains × 6 known draws
    near the data's true values."""
    quickstart = _quickstart()
    rng = np.random.default_rng(3)
    x, y = quickstart.generate(rng, n=60)
    model = quickstart.build_model(x, y)
    shape = (2, 6)
    draws = {
        "intercept": rng.normal(0.0, 0.05, shape),
        "beta": rng.normal([1.0, 0.4, 0.0, 0.0, 0.0], 0.05, (*shape, 5)),
        "temp_x_humidity": rng.normal(0.8, 0.05, shape),
        "log_sd": rng.normal(np.log(0.5), 0.05, shape),
        "gamma": rng.normal([0.0, 0.0, 0.0, 0.0, 0.6], 0.05, (*shape, 5)),
    }
    idata = posterior(
        draws,
        dims={"beta": ["feature"], "gamma": ["feature"]},
        coords={"feature": quickstart.FEATURES},
    )
    idata["observed_data"] = xr.DataTree(xr.Dataset({"y": ("obs_id", y)}))
    return model, idata


def _docstring(name):
    owner, _, method = name.partition(".")
    value = getattr(pm_sens, owner)
    return inspect.getdoc(getattr(value, method) if method else value)


@pytest.mark.parametrize("name", PUBLIC + METHODS)
def test_docstring_examples_run(name, fitted, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # figures the examples save land here
    # progress bars go to stderr here, so that stdout holds what the examples print
    monkeypatch.setattr(
        progress, "Progress", partial(progress.Progress, console=Console(stderr=True))
    )
    model, idata = fitted
    docstring = _docstring(name)
    examples = docstring[docstring.index("Examples\n--------") :]
    test = doctest.DocTestParser().get_doctest(
        examples, {"model": model, "idata": idata.copy()}, name, None, 0
    )
    assert test.examples, f"{name} has no runnable example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test, out=lambda text: pytest.fail(text))
    assert runner.failures == 0

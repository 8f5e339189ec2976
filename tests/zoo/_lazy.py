"""The same call on dask-backed points and on a lazy posterior, compared with in-memory."""

import numpy as np
import pymc as pm
import xarray as xr
from pytensor.graph.traversal import ancestors

import pm_sens


def model_points(case):
    """The model's per-point values as a Dataset (rows along ``obs``), or None.

    Its ``pm.Data`` containers with one row per observation, the NumPy arrays
    pm_sens takes as inputs (by the names it gives them) and the raw inputs of
    a predictive built with ``design=``.

    A GP predictive's one input ``X`` defaults to its training inputs; a bambi
    model takes data columns, not containers (only its lazy posterior is checked).
    """
    predictive = case.kwargs.get("predictive")
    if predictive is not None and not predictive.raw_inputs:  # a GP's
        x = next(iter(predictive.defaults.values()))
        return xr.Dataset({"X": (("obs", "X_column"), x)})
    if not isinstance(case.model, pm.Model):
        return None
    n = len(next(iter(case.idata["observed_data"].to_dataset().data_vars.values())))
    data = {}
    # observed data in a container (as given, or cast to the outcome's dtype)
    outcomes = set(ancestors([case.model.rvs_to_values[rv] for rv in case.model.observed_RVs]))
    for name, var in case.model.named_vars.items():
        if var in outcomes:
            continue
        value = var.get_value() if hasattr(var, "get_value") else None
        if value is None or np.ndim(value) not in (1, 2) or len(value) != n:
            continue
        if predictive is not None and var not in predictive.inputs:
            continue  # design columns replaced by raw inputs
        dims = ("obs",) if np.ndim(value) == 1 else ("obs", f"{name}_column")
        data[name] = (dims, value)
    # NumPy arrays taken as inputs, by the names pm_sens gives them, and raw inputs
    found = predictive or pm_sens.Predictive.from_observed(case.model, case.kwargs.get("var_name"))
    for var in [*found.numpy_inputs, *found.raw_inputs]:
        value = found.defaults[var]
        dims = ("obs",) if np.ndim(value) == 1 else ("obs", f"{var.name}_column")
        data[var.name] = (dims, value)
    return xr.Dataset(data) if data else None


def lazy_posterior(case):
    """The case's idata with its posterior dask-backed, two draws per chunk."""
    lazy = case.idata.copy()
    lazy["posterior"] = xr.DataTree(case.idata["posterior"].to_dataset().chunk(draw=2))
    return lazy


def assert_same(got, expected, where, rtol=1e-8):
    """Same features, variables and values (to ``rtol``), each with finite values.

    ``got``, ``expected``: result nodes (DataTree) or their datasets.
    """
    got, expected = (x if isinstance(x, xr.Dataset) else x.to_dataset() for x in (got, expected))
    got = got.compute()
    assert list(got["feature"].values) == list(expected["feature"].values), where
    assert set(got.data_vars) == set(expected.data_vars), where
    for name, var in expected.data_vars.items():
        # all NaN only where the result documents it (a wide table's row joints of
        # categorical inputs)
        documented = bool(var.attrs.get("nan"))
        assert documented or np.isfinite(var.values).any(), f"{where}: {name}: nothing to compare"
        # round-off: moment sums are merged in another order per block, and a
        # matrix product of another block shape rounds differently, which the
        # finite-difference KL divides by delta² (the latent GP's delta is 1e-6)
        np.testing.assert_allclose(
            got[name].values,
            var.values,
            rtol=1e-5 if name == "kl" else rtol,
            atol=1e-14,
            err_msg=f"{where}: {name}",
        )

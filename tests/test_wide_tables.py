"""Wide observation tables: each cell a point, equal to the model written in long format.

The survival notebook's piecewise-constant hazard model observes a patients ×
intervals table with an exposure per cell. Written as the notebook writes it
(NumPy arrays, ``pt.outer``), every public function must give the results of
the same model in long format (one row per patient and interval, the
interval an integer index), to 1e-10, in both modes.
"""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pm_sens
from tests.written_two_ways import assert_same_values, other_functions
from tests.zoo._registry import known_posterior

QUIET = dict(progressbar=False, extend_inferencedata=False)
ROWS, COLUMNS = 12, 5


@pytest.fixture(scope="module")
def survival():
    rng = np.random.default_rng(0)
    metastasized = rng.normal(size=ROWS)  # a per-patient covariate
    exposure = rng.uniform(0.2, 1.0, (ROWS, COLUMNS))
    death = rng.poisson(0.3, (ROWS, COLUMNS))
    coords = {"patients": range(ROWS), "intervals": range(COLUMNS)}
    with pm.Model(coords=coords) as wide:
        lambda0 = pm.Gamma("lambda0", 2, 2, dims="intervals")
        beta = pm.Normal("beta", 0, 1)
        hazard = pm.Deterministic(
            "lambda_", pt.outer(pt.exp(beta * metastasized), lambda0), dims=coords
        )
        pm.Poisson("obs", exposure * hazard, observed=death, dims=("patients", "intervals"))
    # the names pm_sens gives the wide model's arrays: x_<coefficient>, numpy_input_<k>,
    # and the column index named after the table's second dim
    with pm.Model() as long:  # no "intervals" dim: the index container takes the name
        x = pm.Data("x_beta", np.repeat(metastasized, COLUMNS))
        e = pm.Data("numpy_input_1", exposure.ravel())
        interval = pm.Data("intervals", np.tile(np.arange(COLUMNS), ROWS))
        lambda0 = pm.Gamma("lambda0", 2, 2, shape=COLUMNS)
        beta = pm.Normal("beta", 0, 1)
        pm.Poisson("obs", e * pt.exp(beta * x) * lambda0[interval], observed=death.ravel())
    return wide, long, known_posterior(long)


@pytest.mark.parametrize("mode", ["moment", "draw"])
def test_sensitivity_of_the_cells_equals_the_long_model(survival, mode):
    wide, long, idata = survival
    kw = dict(mode=mode, interactions=True, method=["rsens", "kl", "ead", "var"], **QUIET)
    got = pm_sens.sensitivity(idata, wide, **kw)["sensitivity"]
    expected = pm_sens.sensitivity(idata, long, **kw)["sensitivity"]
    assert list(got["feature"].values) == ["x_beta", "numpy_input_1", "intervals"]
    assert_same_values(got, expected)


def test_every_other_function_equals_the_long_model(survival):
    wide, long, idata = survival
    for group, call in other_functions(idata).items():
        assert_same_values(call(wide)[group], call(long)[group])


def test_a_rows_joint_predictive_from_its_cells(survival):
    """The row's cells are independent given the parameters: its joint R-sens² is the sum
    over its cells. For the Poisson hazard, ``|β| sqrt(Σ_t μ_it)`` per draw (∂μ/∂x = βμ)."""
    wide, _, idata = survival
    out = pm_sens.sensitivity(idata, wide, mode="draw", **QUIET)["sensitivity"]
    rsens = out["rsens"].sel(feature="x_beta")
    joint = np.sqrt((rsens**2).groupby("patients").sum("cell"))
    draws = idata["posterior"].to_dataset()
    beta = draws["beta"].values.reshape(-1)
    rng = np.random.default_rng(0)  # the fixture's arrays, drawn again
    metastasized = rng.normal(size=ROWS)
    exposure = rng.uniform(0.2, 1.0, (ROWS, COLUMNS))
    lambda0 = draws["lambda0"].values.reshape(-1, COLUMNS)
    mu = exposure * np.exp(beta[:, None, None] * metastasized[:, None]) * lambda0[:, None, :]
    expected = np.abs(beta)[:, None] * np.sqrt(mu.sum(-1))
    np.testing.assert_allclose(joint.values.reshape(expected.shape), expected, rtol=1e-12)

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
from scipy import special, stats

import pm_sens
from pm_sens.measures.permutation import permutations
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


def _cells(result):
    """A wide table's result without its per-row variables (``*_row``)."""
    dataset = result.to_dataset()
    return dataset.drop_vars([n for n in dataset.data_vars if "_row" in n])


def _rows_of_long(values):
    """A long-format result's per-cell values (..., ROWS·COLUMNS, …) grouped by patient."""
    return values.reshape(*values.shape[:-2], ROWS, COLUMNS, values.shape[-1])


@pytest.mark.parametrize("mode", ["moment", "draw"])
def test_sensitivity_of_the_cells_and_rows_equals_the_long_model(survival, mode):
    """Cells: equal to the long model's. Rows: the long model's cells of each patient,
    their squares summed (the joint predictive of a row's independent cells)."""
    wide, long, idata = survival
    kw = dict(mode=mode, interactions=True, method=["rsens", "kl", "ead", "var"], **QUIET)
    got = pm_sens.sensitivity(idata, wide, **kw)["sensitivity"]
    expected = pm_sens.sensitivity(idata, long, **kw)["sensitivity"]
    assert list(got["feature"].values) == ["x_beta", "numpy_input_1", "intervals"]
    assert_same_values(_cells(got), expected)
    for name in ("rsens", "kl"):
        cells = expected[name].values
        rows = np.sqrt((cells.reshape(*cells.shape[:-2], ROWS, COLUMNS, 3) ** 2).sum(-2))
        rows[..., 2] = np.nan  # the interval: a cell's column, not a row's
        np.testing.assert_allclose(got[f"{name}_row"].values, rows, rtol=1e-10)
        assert got[f"{name}_row"].dims[-2:] == ("table_row", "feature")
    cells = expected["rsens2"].values
    rows = np.sqrt((cells.reshape(*cells.shape[:-3], ROWS, COLUMNS, 3, 3) ** 2).sum(-3))
    rows[..., 2, :] = rows[..., :, 2] = np.nan
    np.testing.assert_allclose(got["rsens2_row"].values, rows, rtol=1e-10)


def test_every_other_function_equals_the_long_model(survival):
    wide, long, idata = survival
    for group, call in other_functions(idata).items():
        assert_same_values(_cells(call(wide)[group]), call(long)[group])


def _row_log_density(idata, x, exposure, death):
    """Each patient's mixture log density of their cells together, by SciPy (ROWS,).

    ``x``: the covariate per cell (ROWS, COLUMNS), or per row (ROWS, 1).
    """
    draws = idata["posterior"].to_dataset()
    beta = draws["beta"].values.reshape(-1)
    lambda0 = draws["lambda0"].values.reshape(-1, COLUMNS)
    mu = exposure * np.exp(beta[:, None, None] * x) * lambda0[:, None, :]
    per_draw = stats.poisson.logpmf(death, mu).sum(-1)  # (S, ROWS)
    return special.logsumexp(per_draw, axis=0) - np.log(len(beta))


@pytest.mark.parametrize("passes", ["one", "per grid value"])
def test_log_likelihood_of_each_row(survival, passes, monkeypatch):
    """The PDP's per-row curves and the likelihood PFI per row, by SciPy from the draws;
    the same in one pass over the draws or in one per copy of the points."""
    if passes == "per grid value":
        monkeypatch.setattr("pm_sens.uncertainty.passes.PASS_ROWS", 1)
    wide, _, idata = survival
    rng = np.random.default_rng(0)  # the fixture's arrays, drawn again
    x, exposure = rng.normal(size=ROWS), rng.uniform(0.2, 1.0, (ROWS, COLUMNS))
    death = rng.poisson(0.3, (ROWS, COLUMNS))
    out = pm_sens.partial_dependence(
        idata, wide, kind="log_likelihood", grid_resolution=3, features="x_beta", **QUIET
    )["partial_dependence"]
    for g, value in enumerate(out["grid_value"].values[0]):
        expected = _row_log_density(idata, np.full((ROWS, 1), value), exposure, death)
        np.testing.assert_allclose(
            out["log_likelihood_row_ice"].values[0, g], expected, rtol=1e-10
        )
        np.testing.assert_allclose(out["log_likelihood_row_pdp"].values[0, g], expected.mean())
    pfi = pm_sens.permutation_importance(
        idata, wide, kind="likelihood", n_repeats=2, random_seed=3, features="x_beta", **QUIET
    )["permutation_importance"]
    order = permutations(ROWS * COLUMNS, 2, 1, np.random.default_rng(3))  # as pm_sens draws them
    base = _row_log_density(idata, x[:, None], exposure, death)
    for repeat in range(2):
        moved = np.repeat(x, COLUMNS)[order[repeat, 0]].reshape(ROWS, COLUMNS)
        shifted = _row_log_density(idata, moved, exposure, death)
        expected = np.mean(base - shifted)
        np.testing.assert_allclose(
            pfi["likelihood_pfi_row"].values[repeat, 0], expected, rtol=1e-10
        )


def test_a_rows_joint_predictive_from_its_cells(survival):
    """The row's cells are independent given the parameters: its joint R-sens² is the sum
    over its cells. For the Poisson hazard, ``|β| sqrt(Σ_t μ_it)`` per draw (∂μ/∂x = βμ)."""
    wide, _, idata = survival
    out = pm_sens.sensitivity(idata, wide, mode="draw", **QUIET)["sensitivity"]
    joint = out["rsens_row"].sel(feature="x_beta")
    draws = idata["posterior"].to_dataset()
    beta = draws["beta"].values.reshape(-1)
    rng = np.random.default_rng(0)  # the fixture's arrays, drawn again
    metastasized = rng.normal(size=ROWS)
    exposure = rng.uniform(0.2, 1.0, (ROWS, COLUMNS))
    lambda0 = draws["lambda0"].values.reshape(-1, COLUMNS)
    mu = exposure * np.exp(beta[:, None, None] * metastasized[:, None]) * lambda0[:, None, :]
    expected = np.abs(beta)[:, None] * np.sqrt(mu.sum(-1))
    np.testing.assert_allclose(joint.values.reshape(expected.shape), expected, rtol=1e-12)

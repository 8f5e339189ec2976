"""Design columns from raw inputs: a model written on a design matrix, ranked per raw input.

The same model written on the raw inputs gives the reference, to 1e-10 in every
public function and both modes (the finite-difference KL to 1e-7: its step
of 1e-4 sd turns the two graphs' different rounding, 1e-16, into 1e-8).
"""

import logging

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pm_sens
from tests.written_two_ways import other_functions
from tests.zoo._registry import known_posterior

N = 25
QUIET = dict(progressbar=False, extend_inferencedata=False)
METHODS = ["rsens", "kl", "var", "ead"]


def _product(x1, x2):
    return pt.stack([x1, x2, x1 * x2], axis=-1)


@pytest.fixture(scope="module")
def product():
    """``x1 * x2`` as a NumPy design matrix (the out-of-sample notebook), and on raw inputs."""
    rng = np.random.default_rng(0)
    x1, x2 = rng.normal(size=N), rng.normal(size=N)
    design = np.column_stack([x1, x2, x1 * x2])
    y = rng.poisson(2, N)
    with pm.Model() as on_columns:
        b, a = pm.Normal("b", 0, 0.3, shape=3), pm.Normal("a")
        pm.Poisson("y", pm.math.exp(a + design @ b), observed=y)
    with pm.Model() as on_raw:
        d1, d2 = pm.Data("x1", x1), pm.Data("x2", x2)
        b, a = pm.Normal("b", 0, 0.3, shape=3), pm.Normal("a")
        pm.Poisson("y", pm.math.exp(a + b[0] * d1 + b[1] * d2 + b[2] * d1 * d2), observed=y)
    predictive = pm_sens.Predictive.from_observed(
        on_columns, raw_inputs={"x1": x1, "x2": x2}, design=_product
    )
    return predictive, on_columns, on_raw, known_posterior(on_raw)


def _assert_same(got, expected):
    """Equal to 1e-10 (of each variable's largest value: VAR spans 1e-7 to 1e-17 here), the
    finite-difference KL to 1e-7 (see the module's docstring)."""
    got, expected = got.to_dataset(), expected.to_dataset()
    assert list(got.data_vars) == list(expected.data_vars)
    for name in expected.data_vars:
        want = expected[name].values
        rtol = 1e-7 if name == "kl" else 1e-10
        # IG's completeness gap is rounding (1e-15) of sums the size of the values
        scale = expected["value"] if name == "completeness_gap" else want
        atol = rtol * np.nanmax(np.abs(scale), initial=0.0)
        np.testing.assert_allclose(got[name].values, want, rtol=rtol, atol=atol, err_msg=name)


@pytest.mark.parametrize("mode", ["moment", "draw"])
def test_sensitivity_per_raw_input_equals_the_raw_model(product, mode):
    predictive, on_columns, on_raw, idata = product
    points = {"x1": np.linspace(-2, 2, 6), "x2": np.linspace(1, -1, 6)}
    for kw in ({}, {"points": points}):
        kw = dict(mode=mode, interactions=True, method=METHODS, **kw, **QUIET)
        got = pm_sens.sensitivity(idata, on_columns, predictive=predictive, **kw)
        expected = pm_sens.sensitivity(idata, on_raw, **kw)
        _assert_same(got["sensitivity"], expected["sensitivity"])
        assert list(got["sensitivity"]["feature"].values) == ["x1", "x2"]
        assert got["sensitivity"].attrs["raw_inputs"] == ["x1", "x2"]
        assert got["sensitivity"].attrs["design_columns"] == "a NumPy array (25, 3)"


def test_every_other_function_per_raw_input(product):
    predictive, on_columns, on_raw, idata = product
    with_design = other_functions(idata, predictive=predictive)
    for group, call in other_functions(idata).items():
        _assert_same(with_design[group](on_columns)[group], call(on_raw)[group])


def test_a_polynomial_in_a_data_container(rng):
    """``[x, x², x³]`` in a pm.Data container: the raw model's cubic."""
    x, y = rng.normal(size=N), rng.normal(size=N)
    with pm.Model() as on_columns:
        columns = pm.Data("X", np.column_stack([x, x**2, x**3]))
        b = pm.Normal("b", shape=3)
        pm.Normal("y", columns @ b, pm.HalfNormal("s"), observed=y)
    with pm.Model() as on_raw:
        raw = pm.Data("x", x)
        b = pm.Normal("b", shape=3)
        pm.Normal("y", b[0] * raw + b[1] * raw**2 + b[2] * raw**3, pm.HalfNormal("s"), observed=y)
    predictive = pm_sens.Predictive.from_observed(
        on_columns, raw_inputs={"x": x}, design=lambda x: pt.stack([x, x**2, x**3], -1)
    )
    assert predictive.design_replaced == "X (25, 3)"
    idata = known_posterior(on_raw)
    for mode in ("moment", "draw"):
        kw = dict(mode=mode, interactions=True, method=METHODS, **QUIET)
        got = pm_sens.sensitivity(idata, on_columns, predictive=predictive, **kw)
        _assert_same(got["sensitivity"], pm_sens.sensitivity(idata, on_raw, **kw)["sensitivity"])


def test_the_message_names_the_raw_inputs_and_the_columns(product, caplog):
    used, on_columns, _, idata = product
    # a predictive no other test has used (the message is said once per predictive)
    raw = {v.name: used.defaults[v] for v in used.raw_inputs}
    predictive = pm_sens.Predictive.from_observed(on_columns, raw_inputs=raw, design=_product)
    with caplog.at_level(logging.INFO, logger="pm_sens"):
        pm_sens.sensitivity(idata, on_columns, predictive=predictive, **QUIET)
    message = " ".join(r.getMessage() for r in caplog.records if r.name == "pm_sens")
    assert "raw inputs ['x1', 'x2']" in message and "a NumPy array (25, 3)" in message


def test_bad_designs_get_our_words(product):
    _, on_columns, _, _ = product
    x1 = np.zeros(N)
    build = pm_sens.Predictive.from_observed
    with pytest.raises(ValueError, match="no array of the model's likelihood holds"):
        build(on_columns, raw_inputs={"x1": x1, "x2": x1}, design=_product)
    with pytest.raises(TypeError, match="write it with pytensor.tensor operations"):
        build(on_columns, raw_inputs={"x1": x1}, design=lambda x1: np.column_stack([x1, x1]))
    with pytest.raises(ValueError, match="has 3 rows; the model has 25 observations"):
        build(on_columns, raw_inputs={"x1": x1[:3]}, design=lambda x1: x1)
    with pytest.raises(ValueError, match="raw_inputs= and design= go together"):
        build(on_columns, raw_inputs={"x1": x1})
    with pytest.raises(ValueError, match=r"raw_inputs\['x1'\] is not valid"):
        build(on_columns, raw_inputs={"x1": np.array(["a"] * N)}, design=lambda x1: x1)


def test_bspline_basis_is_patsys_bs_and_scipys():
    """The basis and its derivative against patsy's bs() and SciPy's BSpline."""
    import patsy
    import pytensor
    from scipy.interpolate import BSpline

    rng = np.random.default_rng(1)
    year = np.sort(rng.uniform(800, 2000, 60))
    inner = np.quantile(year, np.linspace(0, 1, 8)[1:-1])
    knots = np.r_[[year.min()] * 4, inner, [year.max()] * 4]
    expected = patsy.dmatrix(
        "bs(year, knots=inner, degree=3, include_intercept=True) - 1",
        {"year": year, "inner": inner},
    )
    symbol = pt.vector("year")
    basis = pm_sens.bspline_basis(symbol, knots)
    # the Python linker: C would compile each function for seconds on an empty cache
    values = pytensor.function([symbol], basis, mode="FAST_COMPILE")(year)
    np.testing.assert_allclose(values, np.asarray(expected), atol=1e-13)
    weights = rng.normal(size=values.shape[1])
    slope = pytensor.function(
        [symbol], pt.grad((basis @ weights).sum(), symbol), mode="FAST_COMPILE"
    )
    derivative = BSpline(knots, weights, 3).derivative()
    np.testing.assert_allclose(slope(year), derivative(year), rtol=1e-10, atol=1e-14)
    with pytest.raises(ValueError, match="knots=.* is not valid"):
        pm_sens.bspline_basis(symbol, [3.0, 1.0, 2.0])


def test_a_patsy_spline_model_per_year(rng):
    """The spline notebook's model: R-sens of year is |Σ_j w_j B_j′(year)|/σ per draw."""
    import patsy
    from scipy.interpolate import BSpline

    year, temp = np.sort(rng.uniform(800, 2000, 40)), rng.normal(size=40)
    inner = np.quantile(year, np.linspace(0, 1, 6)[1:-1])
    basis = np.asarray(
        patsy.dmatrix(
            "bs(year, knots=inner, degree=3, include_intercept=True) - 1",
            {"year": year, "inner": inner},
        )
    )
    with pm.Model() as model:
        w = pm.Normal("w", 0, 3, shape=basis.shape[1])
        c = pm.Normal("c")
        mu = pm.Deterministic("mu", pm.math.dot(basis, w) + c * temp)
        pm.Normal("doy", mu, pm.HalfNormal("sigma"), observed=rng.normal(size=40))
    knots = np.r_[[year.min()] * 4, inner, [year.max()] * 4]
    predictive = pm_sens.Predictive.from_observed(
        model, raw_inputs={"year": year}, design=lambda year: pm_sens.bspline_basis(year, knots)
    )
    idata = known_posterior(model)
    out = pm_sens.sensitivity(
        idata, model, predictive=predictive, mode="draw", method=["rsens", "kl"], **QUIET
    )["sensitivity"]
    assert list(out["feature"].values) == ["x_c", "year"]  # temp, by its coefficient; year
    draws = idata["posterior"].to_dataset()
    w = draws["w"].values.reshape(-1, basis.shape[1])
    sigma = draws["sigma"].values.reshape(-1)
    slopes = np.stack([BSpline(knots, weights, 3).derivative()(year) for weights in w])
    np.testing.assert_allclose(
        out["rsens"].sel(feature="year").values.reshape(slopes.shape),
        np.abs(slopes) / sigma[:, None],
        rtol=1e-10,
    )
    # the finite-difference KL (central, 1e-4 sd) agrees up to its O(step) curvature term,
    # on the data's last year too (the basis continues beyond the boundary knots)
    rsens = out["rsens"].values
    np.testing.assert_allclose(out["kl"].values, rsens, rtol=1e-3, atol=1e-3 * rsens.max())


def test_inputs_picks_a_raw_input_and_statistics_inside_design_are_held(rng):
    """``inputs=`` names raw inputs; a design that centres and scales its raw input by the
    data's mean and sd is the model with those numbers (held, as in the model's graph)."""
    x, y = rng.normal(3, 2, size=N), rng.normal(size=N)
    z = rng.normal(size=N)
    mean, sd = x.mean(), x.std()
    with pm.Model() as on_columns:
        X = pm.Data("X", np.column_stack([(x - mean) / sd, ((x - mean) / sd) ** 2]))
        b, c = pm.Normal("b", shape=2), pm.Normal("c")
        pm.Normal("y", X @ b + c * pm.Data("z", z), pm.HalfNormal("s"), observed=y)

    def standardized(x):
        xs = (x - x.mean()) / x.std()
        return pt.stack([xs, xs**2], axis=-1)

    predictive = pm_sens.Predictive.from_observed(
        on_columns, raw_inputs={"x": x}, design=standardized
    )
    assert predictive.held_statistics == ["mean of x", "std of x"]
    idata = known_posterior(on_columns)
    out = pm_sens.sensitivity(
        idata, on_columns, predictive=predictive, inputs=["x"], mode="draw", **QUIET
    )["sensitivity"]
    assert list(out["feature"].values) == ["x"]
    draws = idata["posterior"].to_dataset()
    b = draws["b"].values.reshape(-1, 2)
    s = draws["s"].values.reshape(-1)
    xs = (x - mean) / sd
    slope = (b[:, :1] + 2 * b[:, 1:] * xs) / sd  # d/dx of b0 xs + b1 xs²
    np.testing.assert_allclose(
        out["rsens"].values.reshape(slope.shape), np.abs(slope) / s[:, None], rtol=1e-10
    )

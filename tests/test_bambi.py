"""bambi models: rebuilt on pm.Data inputs, equal to hand-written PyMC models."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pymc as pm
import pytensor
import pytest

import pm_sens
from tests.conftest import posterior

bmb = pytest.importorskip("bambi")

LEVELS = ["a", "b", "c"]
GROUPS = ["g1", "g2", "g3", "g4"]


@pytest.fixture
def data(rng):
    n = 30
    frame = pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "z": rng.uniform(1, 3, n),
            "cat": rng.choice(LEVELS, n),
            "g": rng.choice(GROUPS, n),
        }
    )
    frame["y"] = frame.x + rng.normal(size=n)
    frame["count"] = rng.poisson(2.0, n)
    return frame


def _codes(column, levels):
    return np.searchsorted(levels, column.to_numpy())


def _draws(rng, shape=(2, 4)):
    return {
        "Intercept": rng.normal(size=shape),
        "x": rng.normal(size=shape),
        "cat": rng.normal(size=(*shape, 2)),
        "sigma": np.exp(0.3 * rng.normal(size=shape)),
        "1|g": rng.normal(size=(*shape, len(GROUPS))),
        "x|g": rng.normal(size=(*shape, len(GROUPS))),
    }


def _bambi_posterior(draws, names):
    dims = {"cat": ["cat_dim"], "1|g": ["g__factor_dim"], "x|g": ["g__factor_dim"]}
    coords = {"cat_dim": LEVELS[1:], "g__factor_dim": GROUPS}
    return posterior({k: draws[k] for k in names}, dims=dims, coords=coords)


def _hand_written(data, likelihood, group_terms=False):
    """The same model in PyMC with pm.Data inputs (treatment coding, 'a' the reference)."""
    with pm.Model() as model:
        x = pm.Data("x", data.x.to_numpy())
        cat = pm.Data("cat", _codes(data.cat, LEVELS))
        intercept = pm.Flat("Intercept")
        slope = pm.Flat("slope")
        effects = pm.Flat("cat_effects", shape=2)
        eta = intercept + slope * x + pm.math.concatenate([[0.0], effects])[cat]
        if group_terms:
            g = pm.Data("g", _codes(data.g, GROUPS))
            eta = eta + pm.Flat("1|g", shape=4)[g] + pm.Flat("x|g", shape=4)[g] * x
        if likelihood == "normal":
            pm.Normal("y", eta, pm.Flat("sigma"), observed=data.y.to_numpy())
        else:
            pm.Poisson("count", pm.math.exp(eta), observed=data["count"].to_numpy())
    return model


@pytest.mark.parametrize(
    ("formula", "family", "likelihood", "mode"),
    [
        ("y ~ x + cat", "gaussian", "normal", "draw"),
        ("count ~ x + cat", "poisson", "poisson", "moment"),
    ],
)
def test_bambi_equals_the_hand_written_model(rng, data, formula, family, likelihood, mode):
    model = bmb.Model(formula, data, family=family)
    model.build()
    draws = _draws(rng)
    names = ["Intercept", "x", "cat"] + (["sigma"] if likelihood == "normal" else [])
    idata = _bambi_posterior(draws, names)
    hand = _hand_written(data, likelihood)
    hand_draws = {k: draws[k] for k in names}
    hand_draws["cat_effects"] = hand_draws.pop("cat")
    hand_draws["slope"] = hand_draws.pop("x")
    options = dict(mode=mode, method=["rsens", "kl"], progressbar=False)
    ours = pm_sens.sensitivity(idata, model, extend_inferencedata=False, **options)
    expected = pm_sens.sensitivity(posterior(hand_draws), hand, **options)
    ours, expected = ours["sensitivity"], expected["sensitivity"]
    assert list(ours["feature"].values) == ["x", "cat"]
    assert list(ours["feature_kind"].values) == ["rate", "level"]
    for name in ("rsens", "kl", "levels_cat"):
        assert np.isfinite(ours[name].values).all()
        np.testing.assert_allclose(ours[name].values, expected[name].values, rtol=1e-8)
    assert "sensitivity" not in idata.children  # extend_inferencedata=False


def test_group_specific_intercept_and_slope(rng, data):
    model = bmb.Model("y ~ x + cat + (1 + x | g)", data)
    model.build()
    draws = _draws(rng)
    names = ["Intercept", "x", "cat", "sigma", "1|g", "x|g"]
    hand = _hand_written(data, "normal", group_terms=True)
    hand_draws = {k: draws[k] for k in names}
    hand_draws["cat_effects"] = hand_draws.pop("cat")
    hand_draws["slope"] = hand_draws.pop("x")
    ours = pm_sens.sensitivity(
        _bambi_posterior(draws, names), model, mode="draw", progressbar=False
    )
    expected = pm_sens.sensitivity(posterior(hand_draws), hand, mode="draw", progressbar=False)
    ours, expected = ours["sensitivity"], expected["sensitivity"]
    assert set(ours["feature"].values) == {"x", "cat", "g"}
    for feature in ("x", "cat", "g"):
        np.testing.assert_allclose(
            ours["rsens"].sel(feature=feature), expected["rsens"].sel(feature=feature), rtol=1e-8
        )
    np.testing.assert_allclose(ours["levels_g"], expected["levels_g"], rtol=1e-8)


def test_transformed_terms_are_differentiated_in_the_raw_column(rng, data):
    """``scale(x)`` and ``np.log(z)``: R-sens per draw |∂μ/∂x| / σ with the chain rule
    through the transform bambi stored (x's mean and sd)."""
    model = bmb.Model("y ~ scale(x) + np.log(z)", data)
    model.build()
    shape = (1, 3)
    draws = {
        "Intercept": rng.normal(size=shape),
        "scale(x)": rng.normal(size=shape),
        "np.log(z)": rng.normal(size=shape),
        "sigma": np.exp(0.3 * rng.normal(size=shape)),
    }
    out = pm_sens.sensitivity(posterior(draws), model, mode="draw", progressbar=False)
    out = out["sensitivity"]["rsens"].isel(chain=0)
    sigma = draws["sigma"][0][:, None]
    expected_x = np.abs(draws["scale(x)"][0][:, None] / data.x.std(ddof=0)) / sigma
    expected_z = np.abs(draws["np.log(z)"][0][:, None] / data.z.to_numpy()) / sigma
    np.testing.assert_allclose(out.sel(feature="x"), np.broadcast_to(expected_x, (3, 30)))
    np.testing.assert_allclose(out.sel(feature="z"), expected_z)


PREDICT_CASES = {
    "distributional": (
        ("y ~ x + np.log(z) + x:cat + (1 | g)", "sigma ~ x"),
        "gaussian",
        ["mu", "sigma"],
    ),
    "ordinal": ("rank ~ x + cat", "cumulative", ["p"]),
    # HSGP, spline and polynomial terms rebuilt on the raw column x
    "hsgp": ("y ~ hsgp(x, m=8, c=2) + z", "gaussian", ["mu"]),
    # one GP per level of cat, each on its own box
    "hsgp_by": ("y ~ hsgp(x, by=cat, m=6, c=2) + z", "gaussian", ["mu"]),
    "bases": ("y ~ bs(x, df=5) + poly(z, 2)", "gaussian", ["mu"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(PREDICT_CASES))
def test_rebuilt_parameters_match_bambi_predict(data, rng, case):
    """The rebuilt graph's likelihood parameters equal bambi's own predictions (which
    use the uncentred intercept its posterior stores): interactions, transforms,
    group terms, a distributional sigma, an ordinal response; and permutation
    importance and partial dependence run on it (a categorical term permuted as
    one feature, its PDP over its levels)."""
    formula, family, names = PREDICT_CASES[case]
    data = data.assign(
        rank=pd.Categorical(rng.choice(["lo", "mid", "hi"], len(data)), ["lo", "mid", "hi"])
    )
    formula = bmb.Formula(*formula) if isinstance(formula, tuple) else formula
    model = bmb.Model(formula, data, family=family)
    # a posterior of bambi's own form, sampled with PyTensor's Python linker: its
    # functions (the sampler's, the trace's) compile in seconds, C's in a minute
    with pytensor.config.change_flags(mode="FAST_COMPILE"):
        idata = model.fit(draws=20, tune=20, chains=1, random_seed=3, progressbar=False)
    predicted = model.predict(idata, kind="response_params", inplace=False).posterior
    from pm_sens.graph.frontends.choice import pymc_model_for

    rebuilt, info = pymc_model_for(model)
    observed = rebuilt.observed_RVs[0]
    targets = [
        observed.owner.op.dist_params(observed.owner)[0] if name == "p" else rebuilt[name]
        for name in names
    ]
    function = pytensor.function(
        rebuilt.free_RVs, targets, on_unused_input="ignore", mode="FAST_COMPILE"
    )
    posterior = [info.posterior_names.get(v.name, v.name) for v in rebuilt.free_RVs]
    for draw in range(3):
        got = function(*[idata.posterior[name].values[0, draw] for name in posterior])
        for name, value in zip(names, got, strict=True):
            np.testing.assert_allclose(value, predicted[name].values[0, draw], rtol=1e-8)
    if case == "distributional":
        pdp = pm_sens.partial_dependence(idata, model, features=["cat"], progressbar=False)
        assert list(pdp["partial_dependence"]["grid_value"].values[0]) == [0, 1, 2]
        pfi = pm_sens.permutation_importance(idata, model, n_repeats=2, progressbar=False)
        assert set(pfi["permutation_importance"]["feature"].values) == {"x", "z", "cat", "g"}


def test_points_as_a_data_frame_and_unknown_levels(rng, data):
    model = bmb.Model("y ~ x + cat", data)
    model.build()
    draws = _draws(rng)
    idata = _bambi_posterior(draws, ["Intercept", "x", "cat", "sigma"])
    new = pd.DataFrame({"x": [0.0, 1.0], "cat": ["c", "a"]})
    out = pm_sens.sensitivity(idata, model, points=new, mode="draw", progressbar=False)
    sigma, effects = draws["sigma"], draws["cat"]
    # point 0 is at level c: divergence to a is |β_c| / σ
    np.testing.assert_allclose(
        out["sensitivity"]["levels_cat"].sel(cat_level=0).values[..., 0],
        np.abs(effects[..., 1]) / sigma,
    )
    with pytest.raises(ValueError, match=r"points\['cat'\] holds the level\(s\) \['d'\].*'a'"):
        pm_sens.sensitivity(idata, model, points=pd.DataFrame({"x": [0.0], "cat": ["d"]}))


def test_binomial_family_holds_the_trials(data):
    """p(count, trials) ~ x: bambi's trials (a NumPy constant per observation) are held
    at each point's value, never an input; per draw R-sens = |b| sqrt(n p (1 − p))."""
    data = data.assign(trials=data["count"] + 3)
    model = bmb.Model("p(count, trials) ~ x", data, family="binomial")
    model.build()
    draws = {"Intercept": np.array([[0.2, -0.1]]), "x": np.array([[0.7, -0.4]])}
    out = pm_sens.sensitivity(posterior(draws), model, mode="draw", progressbar=False)
    local = out["sensitivity"]
    assert list(local["feature"].values) == ["x"]
    p = 1 / (
        1 + np.exp(-(draws["Intercept"][0][:, None] + draws["x"][0][:, None] * data.x.values))
    )
    expected = np.abs(draws["x"][0][:, None]) * np.sqrt(data.trials.values * p * (1 - p))
    np.testing.assert_allclose(local["rsens"].values[0, ..., 0], expected, rtol=1e-10)


def test_unbuilt_bambi_model_is_refused(rng, data):
    model = bmb.Model("y ~ x", data)
    with pytest.raises(ValueError, match=r"bambi.Model that is not built"):
        pm_sens.sensitivity(_bambi_posterior(_draws(rng), ["Intercept", "x", "sigma"]), model)


def test_import_pm_sens_does_not_import_the_optional_extras():
    code = (
        "import sys, pm_sens\n"
        "plots = [n for n in pm_sens.__all__ if n.startswith('plot_')]\n"
        "assert len(plots) == 5 and set(plots) <= set(dir(pm_sens)), plots\n"
        "print(sorted(m for m in ('bambi', 'dask', 'arviz_plots') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"  # listing the plots does not load arviz-plots


def test_an_offset_column_is_an_input_until_left_out(rng, data):
    """``offset(np.log(z))`` in a Poisson formula: z is an input by default (the
    result's attrs say so) and leaves the inputs with ``inputs=``."""
    model = bmb.Model("count ~ x + offset(np.log(z))", data, family="poisson")
    model.build()
    draws = {"Intercept": rng.normal(size=(1, 3)), "x": rng.normal(size=(1, 3))}
    out = pm_sens.sensitivity(posterior(draws), model, mode="draw", progressbar=False)
    assert out["sensitivity"].attrs["inputs"] == ["x", "z"]
    # exp(a + b x + log z) = z exp(a + b x): R-sens of z per draw is sqrt(mu) / z
    mu = np.exp(draws["Intercept"][0][:, None] + draws["x"][0][:, None] * data.x.to_numpy())
    mu = mu * data.z.to_numpy()
    np.testing.assert_allclose(
        out["sensitivity"]["rsens"].isel(chain=0).sel(feature="z"),
        np.sqrt(mu) / data.z.to_numpy(),
    )
    left_out = pm_sens.sensitivity(
        posterior(draws), model, inputs="x", mode="draw", progressbar=False
    )["sensitivity"]
    assert left_out.attrs["inputs"] == ["x"] and list(left_out["feature"].values) == ["x"]


def _basis_slopes(columns, x, degree):
    """d/dx of each design column, each fitted exactly as a polynomial of x (NumPy)."""
    return np.column_stack(
        [np.polyval(np.polyder(np.polyfit(x, column, degree)), x) for column in columns.T]
    )


@pytest.mark.parametrize("term", ["bs(x, df=5)", "poly(x, 2)"])
def test_spline_and_polynomial_terms_are_differentiated_in_x(rng, data, term):
    """bambi's ``bs()`` and ``poly()``: R-sens per draw is |Σ_j w_j B_j′(x)| / σ, the basis
    derivatives from SciPy (knots as formulae places them) or from bambi's own columns."""
    from scipy.interpolate import BSpline

    model = bmb.Model(f"y ~ {term} + z", data)
    model.build()
    x = data.x.to_numpy()
    bambi_columns = np.asarray(model.parameters["mu"].common_terms[term].data)
    if term.startswith("bs"):
        inner = np.percentile(x, [100 / 3, 200 / 3])
        knots = np.r_[[x.min()] * 4, inner, [x.max()] * 4]
        slopes = np.column_stack(
            [BSpline(knots, np.eye(6)[j], 3).derivative()(x) for j in range(1, 6)]
        )
    else:
        slopes = _basis_slopes(bambi_columns, x, 2)
    width = bambi_columns.shape[1]
    shape = (1, 3)
    draws = {
        "Intercept": rng.normal(size=shape),
        term: rng.normal(size=(*shape, width)),
        "z": rng.normal(size=shape),
        "sigma": np.exp(0.3 * rng.normal(size=shape)),
    }
    dims = {term: [f"{term}_dim"]}
    idata = posterior(draws, dims=dims, coords={f"{term}_dim": np.arange(width)})
    out = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)["sensitivity"]
    assert list(out["feature"].values) == ["x", "z"]
    expected = np.abs(draws[term][0] @ slopes.T) / draws["sigma"][0][:, None]
    np.testing.assert_allclose(out["rsens"].sel(feature="x").isel(chain=0), expected, rtol=1e-9)

"""Models written with ``pymc.dims`` (named dimensions on every variable, as in
PyMC's dims docs and pymc-marketing), and pymc-marketing's marketing-mix model.

The pymc-marketing models need ``pip install pm_sens[marketing]`` (PyMC 6.3):
``scripts/test.sh`` runs them in ``.venv-marketing``; elsewhere they are skipped.
"""

import numpy as np
import pandas as pd
import pymc as pm
import pymc.dims as pmd
import pytest

from tests.zoo._registry import every_evaluation, known_posterior, zoo_model


@zoo_model("PyMC's dims docs: a linear regression on a (obs, feature) table with pymc.dims")
def dims_linear_regression(rng):
    n = 30
    x = rng.normal(size=(n, 3))
    y = 1.0 + x @ np.array([1.0, -0.5, 0.0]) + rng.normal(0, 0.5, n)
    coords = {"obs": np.arange(n), "feature": ["a", "b", "c"]}
    with pm.Model(coords=coords) as model:
        X = pmd.Data("X", x, dims=("obs", "feature"))
        intercept = pmd.Normal("intercept", 0, 2)
        beta = pmd.Normal("beta", 0, 1, dims="feature")
        sigma = pmd.HalfNormal("sigma", 1)
        mu = pmd.Deterministic("mu", intercept + (X * beta).sum("feature"))
        pmd.Normal("y", mu, sigma, observed=pmd.as_xtensor(y, dims=("obs",)))
    return model, known_posterior(model)


@zoo_model(
    "pymc.dims: a Poisson GLM with county effects read per point (a.isel(county=idx)) "
    "and a log link"
)
def dims_hierarchical_poisson(rng):
    n, groups = 40, 4
    idx = rng.integers(0, groups, n)
    x = rng.normal(size=n)
    coords = {"obs": np.arange(n), "county": [f"c{g}" for g in range(groups)]}
    with pm.Model(coords=coords) as model:
        county = pmd.Data("county_idx", idx, dims="obs")
        x_ = pmd.Data("x", x, dims="obs")
        a = pmd.Normal("a", 0, 1, dims="county")
        b = pmd.Normal("b", 0, 0.5)
        rate = pmd.math.exp(a.isel(county=county) + b * x_)
        pmd.Poisson("y", rate, observed=pmd.as_xtensor(rng.poisson(2.0, n), dims=("obs",)))
    return model, known_posterior(model)


def _weekly(rng, n=36):
    """The frame of pymc-marketing's MMM example as it builds it: weekly spend on two
    channels (floats), two event dummies (``.astype(float)``) and a trend
    ``df["t"] = range(n)`` (int64)."""
    frame = pd.DataFrame(
        {
            "date_week": pd.date_range("2023-01-02", periods=n, freq="W-MON"),
            "x1": rng.uniform(0, 1, n) * (rng.uniform(size=n) > 0.3),
            "x2": rng.uniform(0, 1, n),
            "event_1": (np.arange(n) == 10).astype(float),
            "event_2": (np.arange(n) == 30).astype(float),
        }
    )
    frame["t"] = range(n)
    frame["y"] = 2 + frame.x1 + 0.5 * frame.x2 + 0.01 * frame.t + rng.normal(0, 0.2, n)
    return frame


def _marketing():
    """pymc_marketing.mmm, or a skip where the extra is not installed."""
    return pytest.importorskip("pymc_marketing.mmm", reason="pip install pm_sens[marketing]")


def _mmm(frame, **kwargs):
    """A pymc-marketing MMM built on ``frame``, with prior draws as its posterior."""
    mmm = _marketing().MMM(date_column="date_week", channel_columns=["x1", "x2"], **kwargs)
    mmm.build_model(frame.drop(columns="y"), frame["y"])
    return mmm, known_posterior(mmm.model)


@zoo_model(
    "pymc-marketing's MMM example (mmm_example) as written: a date_week column, float "
    "spend, float event dummies and an int64 trend t = range(n) as controls, geometric "
    "adstock, logistic saturation, yearly seasonality"
)
def marketing_mmm_example(rng):
    mm = _marketing()
    return _mmm(
        _weekly(rng),
        adstock=mm.GeometricAdstock(l_max=6),
        saturation=mm.LogisticSaturation(),
        control_columns=["event_1", "event_2", "t"],
        yearly_seasonality=2,
    )


@zoo_model(
    "pymc-marketing's MMM with delayed adstock, Michaelis-Menten saturation applied "
    "first, and a time-varying intercept (an HSGP over the weeks)"
)
def marketing_mmm_delayed_michaelis_tvp(rng):
    mm = _marketing()
    return _mmm(
        _weekly(rng),
        adstock=mm.DelayedAdstock(l_max=6),
        saturation=mm.MichaelisMentenSaturation(),
        adstock_first=False,
        time_varying_intercept=True,
    )


@zoo_model(
    "pymc-marketing's MMM of a panel: the same channels in two geos (dims=('geo',))",
    errors=every_evaluation(r"MMM of a panel \(dims=\('geo',\)\).*one MMM per panel cell"),
)
def marketing_mmm_geo_panel(rng):
    mm = _marketing()
    frames = [_weekly(rng).assign(geo=geo) for geo in ("north", "south")]
    return _mmm(
        pd.concat(frames, ignore_index=True),
        adstock=mm.GeometricAdstock(l_max=4),
        saturation=mm.LogisticSaturation(),
        dims=("geo",),
    )

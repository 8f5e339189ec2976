"""summary: intervals, ranks, top-k probabilities, group-wise blocks."""

import numpy as np
import pymc as pm
import pytest
from arviz_base import rc_context

import pm_sens
from tests.conftest import posterior
from tests.test_hierarchical import radon_like  # noqa: F401 (fixture)


@pytest.fixture
def fitted(rng):
    n = 30
    x = rng.normal(size=(n, 3))
    with pm.Model(coords={"col": ["big", "mid", "none"]}) as model:
        xd = pm.Data("X", x, dims=("obs", "col"))
        b = pm.Normal("b", shape=3)
        pm.Bernoulli("y", logit_p=xd @ b, observed=rng.integers(0, 2, n))
    draws = rng.normal([2.0, 1.0, 0.0], [0.1, 0.5, 0.05], size=(2, 50, 3))
    return model, posterior({"b": draws})


def test_draw_mode_interval_and_top_k_come_from_the_posterior(fitted):
    model, idata = fitted
    idata = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)
    global_ = idata["sensitivity"]["rsens"].mean("obs").stack(s=("chain", "draw")).values
    with rc_context({"stats.ci_kind": "eti", "stats.ci_prob": 0.9}):
        table = pm_sens.summary(idata, top_k=2).set_index("feature")
    for j, name in enumerate(["big", "mid", "none"]):
        row = table.loc[name]
        np.testing.assert_allclose(row.importance, global_[j].mean())
        np.testing.assert_allclose(
            [row.ci_lower, row.ci_upper], np.quantile(global_[j], [0.05, 0.95]), rtol=0.02
        )
    ranks = (-global_.T).argsort(1).argsort(1) + 1
    np.testing.assert_allclose(
        table.loc[["big", "mid", "none"], "prob_top_2"], (ranks <= 2).mean(0)
    )
    assert table["prob_top_2"].sum() == pytest.approx(2)
    assert list(table["rank"]) == [1, 2, 3]


def test_moment_mode_bootstrap_is_seeded_and_brackets_the_estimate(fitted):
    model, idata = fitted
    idata = pm_sens.sensitivity(idata, model, progressbar=False)
    first, again = pm_sens.summary(idata), pm_sens.summary(idata)
    assert first.equals(again)
    assert (first.ci_lower <= first.importance).all() and (
        first.importance <= first.ci_upper
    ).all()
    other = pm_sens.summary(idata, random_seed=1)
    assert not np.allclose(other.ci_lower, first.ci_lower)
    with rc_context({"stats.ci_kind": "hdi"}):
        assert pm_sens.summary(idata).ci_upper.notna().all()


def test_by_gives_one_block_per_group(radon_like):  # noqa: F811
    model, idata, idx, *_ = radon_like
    idata = pm_sens.sensitivity(idata, model, progressbar=False)
    local = idata["sensitivity"]["rsens"]
    assert local["county_idx"].dims == ("obs_id",)
    table = pm_sens.summary(idata, by="county_idx")
    assert set(table.county_idx) == set(np.unique(idx))
    for county in np.unique(idx):
        block = table[table.county_idx == county].set_index("feature")
        expected = local.isel(obs_id=idx == county).mean("obs_id")
        features = ["floor", "uranium", "county_idx"]
        np.testing.assert_allclose(block.loc[features, "importance"], expected.values)
    with pytest.raises(ValueError, match=r"by='floor' is not a coordinate along the point"):
        pm_sens.summary(idata, by="floor")


def test_var_names_and_local_kind(fitted):
    model, idata = fitted
    idata = pm_sens.sensitivity(idata, model, method=["rsens", "ead"], progressbar=False)
    assert set(pm_sens.summary(idata, var_names="ead").variable) == {"ead"}
    local = pm_sens.summary(idata, kind="local")
    assert {"obs", "feature", "rsens", "ead"} <= set(local.columns)
    with pytest.raises(ValueError, match=r"var_names=\['kl'\] not in the group"):
        pm_sens.summary(idata, var_names=["kl"])
    with pytest.raises(ValueError, match=r"kind='pairs' is not valid"):
        pm_sens.summary(idata, kind="pairs")
    with pytest.raises(ValueError, match=r"group='attribution' is not in idata"):
        pm_sens.summary(idata, group="attribution")


def test_non_finite_local_values_are_counted_and_not_ranked():
    import xarray as xr

    local = xr.Dataset(
        {"rsens": (("point", "feature"), np.array([[1.0, 0.5], [np.nan, 0.7], [2.0, 0.6]]))},
        coords={"feature": ["a", "b"]},
    )
    idata = xr.DataTree.from_dict({"sensitivity": local})
    with pytest.warns(UserWarning, match=r"rsens\[a\]: 1 of 3 non-finite"):
        table = pm_sens.summary(idata).set_index("feature")
    assert np.isnan(table.loc["a", "importance"]) and table.loc["a", "nonfinite"] == 1
    assert table["rank"].isna().tolist() == [False, True]  # b ranked, a not
    table = pm_sens.summary(idata, skipna=True).set_index("feature")
    assert table.loc["a", "importance"] == pytest.approx(1.5)
    assert table.loc["a", "rank"] == 1

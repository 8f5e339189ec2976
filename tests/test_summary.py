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
    idata = pm_sens.sensitivity(
        idata, model, method=["rsens", "ead"], interactions=True, progressbar=False
    )
    assert set(pm_sens.summary(idata, var_names="ead").variable) == {"ead"}
    local = pm_sens.summary(idata, kind="local")
    assert list(local.columns[:4]) == ["variable", "feature", "obs", "feature_kind"]
    counts = local.groupby("variable").size()
    # one row per (point, feature) and per (point, pair): 30 points, 3 features, 3 pairs
    assert counts.to_dict() == {"rsens": 90, "ead": 90, "rsens2": 90, "eah": 90}
    first = local[local.variable == "rsens"].set_index(["obs", "feature"])["value"]
    expected = idata["sensitivity"]["rsens"].to_series()
    np.testing.assert_array_equal(first.loc[expected.index], expected)
    pairs = local[local.variable == "rsens2"].set_index(["obs", "feature"])["value"]
    rsens2 = idata["sensitivity"]["rsens2"]
    np.testing.assert_array_equal(
        pairs.xs("big:none", level="feature"), rsens2.sel(feature="big", feature_bis="none")
    )
    assert not any(f.split(":")[0] == f.split(":")[1] for f in pairs.index.get_level_values(1))
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


def test_partial_dependence_curves_as_tables(fitted):
    model, idata = fitted
    pd_only_mean = pm_sens.partial_dependence(
        idata, model, kind="mean", grid_resolution=4, progressbar=False
    )
    assert "component" not in pd_only_mean["partial_dependence"].dims  # no variable uses it
    with rc_context({"stats.ci_kind": "eti", "stats.ci_prob": 0.8}):
        table = pm_sens.summary(pd_only_mean, group="partial_dependence")
    curves = pd_only_mean["partial_dependence"]["mean_pdp"]
    row = table[(table.feature == "mid") & (table.grid == 2)].iloc[0]
    values = curves.sel(feature="mid", grid=2).values.ravel()
    assert row.value == pytest.approx(values.mean())
    np.testing.assert_allclose([row.ci_lower, row.ci_upper], np.quantile(values, [0.1, 0.9]))
    assert row.grid_value == pd_only_mean["partial_dependence"]["grid_value"].sel(
        feature="mid", grid=2
    )
    assert len(table) == 3 * 4  # 3 features x 4 grid values

    both = pm_sens.partial_dependence(
        idata, model, kind=("mean", "entropy"), grid_resolution=4, progressbar=False
    )
    table = pm_sens.summary(both, group="partial_dependence", var_names="entropy_pdp")
    assert set(table.component) == {"total", "aleatoric", "epistemic"} and len(table) == 36
    ice = pm_sens.summary(both, group="partial_dependence", kind="local", var_names="mean_ice")
    assert len(ice) == 3 * 4 * 30 and {"obs", "grid_value", "value"} <= set(ice.columns)
    with pytest.raises(ValueError, match=r"by='obs' does not apply to partial-dependence"):
        pm_sens.summary(both, group="partial_dependence", by="obs")
    with pytest.raises(ValueError, match=r"no PDP curves among var_names='mean_ice'"):
        pm_sens.summary(both, group="partial_dependence", var_names="mean_ice")


def test_printed_table_shows_every_row_within_100_columns(rng, monkeypatch):
    import xarray as xr

    names = [f"long_feature_name_{i:02d}" for i in range(20)]
    local = rng.gamma(2.0, size=(25, 20))
    pairs = rng.gamma(2.0, size=(25, 20, 20))
    group = xr.Dataset(
        {
            "rsens": (("obs", "feature"), local),
            "rsens2": (("obs", "feature", "feature_bis"), (pairs + pairs.transpose(0, 2, 1))),
        },
        coords={
            "feature": names,
            "feature_bis": names,
            "feature_kind": ("feature", ["rate"] * 20),
        },
    )
    idata = xr.DataTree.from_dict({"sensitivity": group})
    monkeypatch.setenv("COLUMNS", "100")
    table = pm_sens.summary(idata)
    text = str(table)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 100
    assert "..." not in text and len(table) == 20 + 190
    assert all(f in text for f in table.feature)  # every feature and pair printed
    assert lines[-1] == "[not shown: nonfinite (all 0), kind (all 'rate')]"
    assert "nonfinite" in table.columns  # the data keep them
    assert lines[0] == "rsens" and "rsens2" in lines  # one block per variable, under its name
    assert "variable" not in lines[1] and lines[1].split()[0] == "feature"
    assert type(table.head(3)) is type(table)


def test_importance_is_the_mean_over_points_with_the_draws_kept(fitted):
    model, idata = fitted
    draw = pm_sens.sensitivity(idata, model, mode="draw", interactions=True, progressbar=False)
    got = pm_sens.importance(draw)
    assert got.dims == ("chain", "draw", "feature") and got.name == "rsens"
    local = draw["sensitivity"]["rsens"]
    np.testing.assert_allclose(got.values, local.mean("obs").values)
    table = pm_sens.summary(draw, var_names="rsens").set_index("feature")
    np.testing.assert_allclose(
        table.loc[list(got["feature"].values), "importance"], got.mean(("chain", "draw"))
    )
    pairs = pm_sens.importance(draw, "rsens2")
    assert pairs.dims == ("chain", "draw", "feature", "feature_bis")
    sd = local["input_value"].std("obs").values
    np.testing.assert_allclose(
        pm_sens.importance(draw, scale="sd").values, got.values * sd, rtol=1e-12
    )
    moment = pm_sens.importance(pm_sens.sensitivity(idata, model, progressbar=False))
    assert moment.dims == ("feature",)
    ig = pm_sens.integrated_gradients(idata, model, n_steps=8, progressbar=False)
    np.testing.assert_allclose(
        pm_sens.importance(ig, "ig", group="attribution").values,
        abs(ig["attribution"]["ig"]).mean("obs").values,
    )
    with pytest.raises(ValueError, match=r"var_name='kl' is not a per-feature variable"):
        pm_sens.importance(draw, "kl")

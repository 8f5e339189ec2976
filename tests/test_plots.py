"""Plots with the real arviz-plots (matplotlib backend): structure and a PNG."""

import matplotlib
import numpy as np
import pymc as pm
import pytest

import pm_sens
from tests.conftest import posterior
from tests.test_hierarchical import radon_like  # noqa: F401 (fixture)

matplotlib.use("Agg")


@pytest.fixture
def idata(rng):
    x = rng.normal(size=(30, 3))
    with pm.Model(coords={"col": ["big", "mid", "none"]}) as model:
        xd = pm.Data("X", x, dims=("obs", "col"))
        b = pm.Normal("b", shape=3)
        c = pm.Normal("c")
        pm.Bernoulli("y", logit_p=xd @ b + c * xd[:, 0] * xd[:, 1], observed=np.zeros(30, int))
    draws = {"b": rng.normal([2.0, 1.0, 0.0], 0.2, size=(2, 20, 3)), "c": rng.normal(size=(2, 20))}
    out = pm_sens.sensitivity(
        posterior(draws), model, method=["rsens", "kl"], interactions=True, progressbar=False
    )
    return out


def test_plot_importance(idata, tmp_path):
    pc = pm_sens.plot_importance(idata, backend="matplotlib")
    for visual in ("point", "interval", "title"):
        assert set(pc.viz[visual].data_vars) == {"rsens", "kl", "rsens2"}
    pc.savefig(tmp_path / "importance.png")
    assert (tmp_path / "importance.png").stat().st_size > 1000
    only = pm_sens.plot_importance(idata, var_names="kl", visuals={"title": False})
    assert set(only.viz["point"].data_vars) == {"kl"}
    assert "title" not in only.viz.children


def test_plot_local_and_colour_groups(radon_like, tmp_path):  # noqa: F811
    model, draws_idata, *_ = radon_like
    out = pm_sens.sensitivity(draws_idata, model, mode="draw", progressbar=False)
    pc = pm_sens.plot_local(out, backend="matplotlib")
    assert pc.viz["points"]["rsens"].sizes == {"feature": 3}
    grouped = pm_sens.plot_local(out, color_by="county_idx", backend="matplotlib")
    assert sum(name.startswith("points_") for name in grouped.viz.children) == 5
    grouped.savefig(tmp_path / "local.png")
    assert (tmp_path / "local.png").stat().st_size > 1000
    with pytest.raises(ValueError, match=r"color_by='zz' is neither a coordinate"):
        pm_sens.plot_local(out, color_by="zz")


def test_plot_interactions(idata, tmp_path):
    pc = pm_sens.plot_interactions(idata, backend="matplotlib")
    assert "cells" in pc.viz.children
    pc.savefig(tmp_path / "interactions.png")
    assert (tmp_path / "interactions.png").stat().st_size > 1000
    with pytest.raises(ValueError, match=r"var_name='rsens' is not a pairwise measure"):
        pm_sens.plot_interactions(idata, var_name="rsens")


@pytest.fixture
def uncertainty(rng):
    import xarray as xr

    n = 40
    x = rng.normal(size=(n, 2))
    with pm.Model(coords={"col": ["a", "b"]}) as model:
        xd = pm.Data("X", x, dims=("obs", "col"))
        b = pm.Normal("b", shape=2)
        pm.Normal("y", mu=xd @ b, sigma=1.0, observed=x[:, 0], dims="obs")
    idata = posterior({"b": rng.normal([1.0, 0.3], 0.2, size=(2, 20, 2))})
    idata["observed_data"] = xr.DataTree(xr.Dataset({"y": ("obs", x[:, 0])}))
    idata = pm_sens.partial_dependence(
        idata,
        model,
        kind=("mean", "entropy", "log_likelihood"),
        grid_resolution=8,
        progressbar=False,
    )
    return pm_sens.permutation_importance(idata, model, random_seed=0, progressbar=False)


@pytest.mark.parametrize("kind", ["mean", "entropy", "log_likelihood"])
def test_plot_partial_dependence(uncertainty, kind, tmp_path):
    pc = pm_sens.plot_partial_dependence(uncertainty, kind=kind, backend="matplotlib")
    assert "ice" in pc.viz.children and "title" in pc.viz.children
    if kind == "mean":
        assert {"band", "pdp"} <= set(pc.viz.children)
    if kind == "entropy":
        assert {"pdp_total", "pdp_aleatoric", "pdp_epistemic"} <= set(pc.viz.children)
    pc.savefig(tmp_path / f"pdp_{kind}.png")
    assert (tmp_path / f"pdp_{kind}.png").stat().st_size > 1000


def test_plot_permutation_importance(uncertainty, tmp_path):
    pc = pm_sens.plot_permutation_importance(uncertainty, backend="matplotlib")
    expected = {"entropy_pfi[total]", "entropy_pfi[aleatoric]", "entropy_pfi[epistemic]"}
    assert set(pc.viz["point"].data_vars) == expected | {"likelihood_pfi"}
    pc.savefig(tmp_path / "pfi.png")
    assert (tmp_path / "pfi.png").stat().st_size > 1000


def test_plot_interactions_leaves_out_categorical_inputs(radon_like, tmp_path):  # noqa: F811
    model, draws_idata, *_ = radon_like
    out = pm_sens.sensitivity(draws_idata, model, interactions=True, progressbar=False)
    assert "county_idx" in out["sensitivity"]["feature"].values
    pc = pm_sens.plot_interactions(out, backend="matplotlib")
    assert list(pc.data["feature"].values) == ["floor", "uranium"]
    pc.savefig(tmp_path / "interactions.png")

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
    assert pc.viz["points"]["rsens"].sizes == {"feature": 2}
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

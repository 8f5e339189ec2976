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
    for visual in ("point", "title"):
        assert set(pc.viz[visual].data_vars) == {"rsens", "kl", "rsens2"}
    texts = assert_readable(pc)
    assert {"R-sens (per unit of input)", "KL method (per unit of input)"} <= set(texts)
    pc.savefig(tmp_path / "importance.png")
    assert (tmp_path / "importance.png").stat().st_size > 1000
    only = pm_sens.plot_importance(idata, var_names="kl", visuals={"title": False})
    assert set(only.viz["point"].data_vars) == {"kl"}
    assert "title" not in only.viz.children


def test_plot_local_and_colour_groups(radon_like, tmp_path):  # noqa: F811
    model, draws_idata, *_ = radon_like
    out = pm_sens.sensitivity(draws_idata, model, mode="draw", progressbar=False)
    pc = pm_sens.plot_local(out, backend="matplotlib")
    assert pc.viz["points_0"]["rsens"].sizes == {"feature": 3}
    assert "interval_0" in pc.viz.children  # draw mode: posterior intervals
    grouped = pm_sens.plot_local(out, color_by="county_idx", backend="matplotlib")
    assert sum(name.startswith("points_") for name in grouped.viz.children) == 5
    assert_readable(grouped)
    grouped.savefig(tmp_path / "local.png")
    assert (tmp_path / "local.png").stat().st_size > 1000
    with pytest.raises(ValueError, match=r"color_by='zz' is neither a coordinate"):
        pm_sens.plot_local(out, color_by="zz")


def test_plot_interactions(idata, tmp_path):
    pc = pm_sens.plot_interactions(idata, backend="matplotlib")
    texts = assert_readable(pc)
    pairs = idata["sensitivity"]["rsens2"].mean("obs")
    expected = [
        f"{pairs.isel(feature=i, feature_bis=j).item():.2g}" for i, j in [(1, 0), (2, 0), (2, 1)]
    ]
    assert [t for t in texts if t[0].isdigit()] == expected  # the pairs, not the diagonal
    per_sd = pm_sens.plot_interactions(idata, scale="sd", backend="matplotlib")
    sd = idata["sensitivity"]["input_value"].std("obs").values
    expected = [
        f"{pairs.isel(feature=i, feature_bis=j).item() * sd[i] * sd[j]:.2g}"
        for i, j in [(1, 0), (2, 0), (2, 1)]
    ]
    texts = assert_readable(per_sd)
    assert [t for t in texts if t[0].isdigit()] == expected
    assert "R-sens2 of each pair\nper sd of each input,\nmean over points" in texts
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
    assert_readable(pc)
    pc.savefig(tmp_path / f"pdp_{kind}.png")
    assert (tmp_path / f"pdp_{kind}.png").stat().st_size > 1000


def test_plot_permutation_importance(uncertainty, tmp_path):
    pc = pm_sens.plot_permutation_importance(uncertainty, backend="matplotlib")
    expected = {"entropy_pfi[total]", "entropy_pfi[aleatoric]", "entropy_pfi[epistemic]"}
    assert set(pc.viz["point"].data_vars) == expected | {"likelihood_pfi"}
    assert_readable(pc)
    pc.savefig(tmp_path / "pfi.png")
    assert (tmp_path / "pfi.png").stat().st_size > 1000


def test_plot_interactions_shows_categorical_pairs(radon_like, tmp_path):  # noqa: F811
    """A categorical input's pairs are cells, its label marked; the title has no unit for it."""
    model, draws_idata, *_ = radon_like
    out = pm_sens.sensitivity(draws_idata, model, interactions=True, progressbar=False)
    pc = pm_sens.plot_interactions(out, backend="matplotlib")
    assert list(pc.data["feature"].values) == ["floor", "uranium", "county_idx"]
    texts = assert_readable(pc)
    assert "county_idx (level)" in texts
    assert any("per unit of each continuous input" in text for text in texts)
    pc.savefig(tmp_path / "interactions.png")


# --- layout: what a reader sees at the default size --------------------------------


def _undrawn_tick_labels(fig):
    """Tick labels matplotlib does not draw: ticks outside the view, axes turned off."""
    hidden = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            span = (high - low) * 1e-9
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not ax.axison or not low - span <= tick.get_loc() <= high + span:
                    hidden.update({id(tick.label1), id(tick.label2)})
    return hidden


def text_boxes(pc):
    """(text, window extent) of every text the saved figure shows."""
    from matplotlib.text import Text

    fig = pc.viz["figure"].item()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    hidden = _undrawn_tick_labels(fig)
    return [
        (text.get_text(), text.get_window_extent(renderer))
        for text in fig.findobj(Text)
        if text.get_visible() and text.get_text().strip() and id(text) not in hidden
    ], fig.bbox


def assert_readable(pc):
    """Every text inside the figure and clear of every other text (1 px tolerance)."""
    boxes, figure = text_boxes(pc)
    for text, box in boxes:
        inside = (
            box.x0 >= figure.x0 - 1
            and box.y0 >= figure.y0 - 1
            and box.x1 <= figure.x1 + 1
            and box.y1 <= figure.y1 + 1
        )
        assert inside, f"{text!r} is cut by the figure's edge: {box} not in {figure}"
    for i, (text, box) in enumerate(boxes):
        for other, other_box in boxes[i + 1 :]:
            width = min(box.x1, other_box.x1) - max(box.x0, other_box.x0)
            height = min(box.y1, other_box.y1) - max(box.y0, other_box.y0)
            assert width <= 1 or height <= 1, f"{text!r} overlaps {other!r}"
    return [text for text, _ in boxes]


LONG_NAMES = [f"long_feature_name_{i:02d}" for i in range(20)]  # 20 characters each


@pytest.fixture(scope="module")
def wide():
    """20 inputs with 20-character names, every group in draw mode where it has draws."""
    import xarray as xr

    rng = np.random.default_rng(3)
    n = 60
    x = rng.normal(size=(n, len(LONG_NAMES)))
    with pm.Model(coords={"col": LONG_NAMES}) as model:
        xd = pm.Data("X", x, dims=("obs", "col"))
        b = pm.Normal("b", dims="col")
        pm.Poisson("y", mu=pm.math.exp(0.3 * xd @ b), observed=rng.poisson(1.0, n), dims="obs")
    draws = rng.normal(np.linspace(1.0, 0.0, len(LONG_NAMES)), 0.2, size=(2, 25, 20))
    idata = posterior({"b": draws})
    idata["observed_data"] = xr.DataTree(xr.Dataset({"y": ("obs", rng.poisson(1.0, n))}))
    options = {"progressbar": False}
    idata = pm_sens.sensitivity(idata, model, mode="draw", **options)
    # the layout needs R-sens2's shape, not its values: products of R-sens, which
    # spare the tests the second-derivative graph of 20 inputs
    group = idata["sensitivity"].to_dataset()
    rsens = group["rsens"]
    group["rsens2"] = rsens * rsens.rename(feature="feature_bis")
    group = group.assign_coords(feature_bis=group["feature"].values)
    idata["sensitivity"] = xr.DataTree(group)
    idata = pm_sens.permutation_importance(idata, model, n_repeats=3, **options)
    return pm_sens.partial_dependence(idata, model, grid_resolution=8, **options)


WIDE_PLOTS = {
    "importance": lambda dt: pm_sens.plot_importance(dt),
    "importance_sd": lambda dt: pm_sens.plot_importance(dt, scale="sd"),
    "interactions": lambda dt: pm_sens.plot_interactions(dt),
    "local": lambda dt: pm_sens.plot_local(dt),
    "local_groups": lambda dt: pm_sens.plot_local(dt, color_by=LONG_NAMES[1]),
    "pdp_mean": lambda dt: pm_sens.plot_partial_dependence(dt),
    "pdp_entropy": lambda dt: pm_sens.plot_partial_dependence(dt, kind="entropy"),
    "permutation": lambda dt: pm_sens.plot_permutation_importance(dt),
}


@pytest.mark.parametrize("plot", sorted(WIDE_PLOTS))
def test_plots_are_readable_with_20_long_feature_names(wide, plot, tmp_path):
    pc = WIDE_PLOTS[plot](wide)
    texts = assert_readable(pc)
    pc.savefig(tmp_path / f"{plot}.png")
    if plot.startswith("importance"):
        unit = "per sd of input" if plot.endswith("sd") else "per unit of input"
        assert f"R-sens ({unit})" in texts
        assert "R-sens2: top 20 of 190" in texts  # pairs beyond the top 20 left out, said so
        assert set(LONG_NAMES) <= set(texts)
    if plot == "interactions":
        assert all(f"{name}:{name}" not in texts for name in LONG_NAMES)
        shown = [t for t in texts if t[0].isdigit() or t.startswith("-")]
        assert len(shown) == 190  # one value per pair, none on the diagonal
    if plot.startswith(("local", "pdp")):
        assert set(LONG_NAMES) <= set(texts) and "input value" in texts
    if plot == "local_groups":
        assert f"{LONG_NAMES[1]} q1" in texts  # the legend names the colours
    if plot == "pdp_entropy":
        assert {"total", "aleatoric", "epistemic"} <= set(texts)
    if plot == "permutation":
        assert {"entropy PFI: total", "likelihood PFI"} <= set(texts)

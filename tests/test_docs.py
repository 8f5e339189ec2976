"""What the README and the docs promise: the first-analysis block runs as written,
the figures it shows are there, no docstring cites documents users do not have."""

import re
from pathlib import Path

import matplotlib
import pymc as pm
import xarray as xr

import pm_sens
from tests.conftest import posterior

matplotlib.use("Agg")
ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text()


def _small_fit(rng):
    n = 40
    x = rng.normal(size=(n, 2))
    with pm.Model(coords={"col": ["a", "b"]}) as model:
        xd = pm.Data("X", x, dims=("obs", "col"))
        b = pm.Normal("b", dims="col")
        pm.Poisson("y", mu=pm.math.exp(xd @ b), observed=rng.poisson(1.0, n), dims="obs")
    idata = posterior({"b": rng.normal([0.5, 0.1], 0.1, size=(2, 10, 2))}, dims={"b": ["col"]})
    idata["observed_data"] = xr.DataTree(xr.Dataset({"y": ("obs", rng.poisson(1.0, n))}))
    return model, idata


def test_readme_first_analysis_runs_as_written(rng, tmp_path, monkeypatch):
    block = re.search(r"## A first analysis.*?```python\n(.*?)```", README, re.S).group(1)
    model, idata = _small_fit(rng)
    monkeypatch.chdir(tmp_path)
    namespace = {"model": model, "idata": idata}
    exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 (the README's own code)
    groups = set(namespace["idata"].children)
    assert {"sensitivity", "attribution", "permutation_importance", "partial_dependence"} <= groups
    assert (tmp_path / "importance.png").stat().st_size > 1000
    assert (tmp_path / "pdp.png").stat().st_size > 1000
    # the table of groups: summary reads each, and the plots named for attribution work
    for group in groups - {"posterior", "observed_data"}:
        assert len(pm_sens.summary(namespace["idata"], group=group)) > 0
    pm_sens.plot_importance(namespace["idata"], group="attribution")
    pm_sens.plot_local(namespace["idata"], group="attribution", var_name="ig")


def test_readme_figures_are_in_the_repository():
    for path in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README):
        assert (ROOT / path).is_file(), path


def test_no_docstring_cites_internal_documents():
    for path in (ROOT / "pm_sens").rglob("*.py"):
        assert "SPEC" not in path.read_text(), path

"""What importing pm_sens loads: the math layers need NumPy and SciPy only,
and ``import pm_sens`` loads nothing heavy or optional until a name is used."""

import subprocess
import sys

import pytest

HEAVY = (
    "pymc",
    "pytensor",
    "xarray",
    "arviz_base",
    "arviz_plots",
    "dask",
    "bambi",
    "matplotlib",
    "jax",
)

#: a Python session in which the heavy packages cannot be imported at all
BLOCKED = f"""
import sys
from importlib.abc import MetaPathFinder

class Blocked(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {HEAVY!r}:
            raise ImportError(f"{{name}} is blocked in this test")

sys.meta_path.insert(0, Blocked())
"""


def _run(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


@pytest.mark.parametrize("layer", ["pm_sens.families", "pm_sens.measures"])
def test_math_layers_import_where_pymc_pytensor_and_xarray_cannot(layer):
    out = _run(BLOCKED + f"import {layer}\nprint('imported')")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "imported"


def test_import_pm_sens_loads_no_heavy_or_optional_package():
    code = f"import sys, pm_sens\nprint(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    out = _run(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_scipy_stats_loads_only_when_a_family_needs_it():
    """Loading every family and a module-level use of them does not import
    ``scipy.stats``; a family's quantile (the Poisson's support) does."""
    code = (
        "import sys, numpy as np\n"
        "from pm_sens import families\n"
        "from pm_sens.families import poisson\n"
        "print('scipy.stats' in sys.modules)\n"
        "poisson.upper_count(np.array([3.0]), 1e-10)\n"
        "print('scipy.stats' in sys.modules)"
    )
    out = _run(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True"]


def test_public_names_load_on_first_use_and_stay_the_same():
    """Every name in ``__all__`` resolves, to the function of its module, and
    ``pm_sens.summary`` is the function (its module is ``pm_sens.ranking.summary``)."""
    code = (
        "import pm_sens, pm_sens.ranking.summary\n"
        "names = [n for n in pm_sens.__all__ if n != '__version__']\n"
        "assert all(callable(getattr(pm_sens, n)) for n in names)\n"
        "assert pm_sens.summary is pm_sens.ranking.summary.summary\n"
        "assert set(names) <= set(dir(pm_sens))\n"
        "print(len(names))"
    )
    out = _run(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "15"


def _layers_script():
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parents[1] / "scripts" / "layers.py"
    spec = importlib.util.spec_from_file_location("layers", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_module_imports_from_a_layer_above_it():
    layers = _layers_script()
    assert layers.upward_imports(layers.import_graph()) == []


def test_an_upward_import_is_found():
    layers = _layers_script()
    graph = {"pm_sens/measures/rsens.py": ["pm_sens.graph.engine", "pm_sens.families"]}
    assert layers.upward_imports(graph) == [("pm_sens/measures/rsens.py", "pm_sens.graph.engine")]


def test_the_architecture_diagram_is_drawn_from_the_code():
    import pathlib

    layers = _layers_script()
    document = (pathlib.Path(__file__).parents[1] / "docs" / "architecture.md").read_text()
    assert f"```text\n{layers.diagram(layers.import_graph())}\n```" in document, (
        "docs/architecture.md's diagram is out of date: paste `python scripts/layers.py`'s"
    )

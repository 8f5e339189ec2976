"""Which of pm_sens's modules one public call runs in, and its calls back up.

Run: python scripts/call_path.py (prints, for ``sensitivity(mode="draw")`` and
``permutation_importance`` on a small linear model, the modules whose code the
call runs, in order of first use, and how many calls went from a module to one
that stands above it).

A module's floor is one above the highest module it imports (a module that
imports no other pm_sens module is on floor 1). A call from a function in a
module to a function in a module on a higher floor is a call back up: a
lower layer running code it was handed by a higher one (a closure, a method of
a higher layer's object). Few files and few calls back up mean a call reads
top-down in the tree.
"""

import functools
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from layers import import_graph  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pm_sens"


def _module_name(path):
    return ".".join(pathlib.Path(path).with_suffix("").parts).removesuffix(".__init__")


def floors():
    """``{module name: floor}`` from the package's imports."""
    graph = {
        _module_name(path): targets
        for path, targets in import_graph(str(PACKAGE.relative_to(ROOT))).items()
    }

    @functools.cache
    def floor(module):
        below = [floor(t) for t in graph.get(module, ()) if t in graph and t != module]
        return 1 + max(below, default=0)

    return {module: floor(module) for module in graph}


def trace(call):
    """The pm_sens modules ``call()`` runs in (first use order) and its calls back up."""
    floor_of = floors()
    seen, climbs = [], []

    def module_of(frame):
        path = pathlib.Path(frame.f_code.co_filename)
        if PACKAGE not in path.parents:
            return None
        return _module_name(path.relative_to(ROOT))

    def profile(frame, event, arg):
        if event != "call" or frame.f_code.co_name == "<module>":  # not imports
            return
        callee = module_of(frame)
        if callee is None:
            return
        if callee not in seen:
            seen.append(callee)
        caller = module_of(frame.f_back) if frame.f_back is not None else None
        if caller is not None and floor_of.get(callee, 0) > floor_of.get(caller, 0):
            climbs.append((caller, callee, frame.f_code.co_name))

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return seen, climbs


def _example():
    """A linear model with two inputs and known draws (no sampling)."""
    import arviz as az
    import pymc as pm

    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 2))
    with pm.Model() as model:
        data = pm.Data("x", x)
        beta = pm.Normal("beta", shape=2)
        sigma = pm.HalfNormal("sigma")
        y = x @ [1.0, -0.5] + rng.normal(size=40)
        pm.Normal("y", data @ beta, sigma, observed=y)
    posterior = {
        "beta": rng.normal([1.0, -0.5], 0.1, size=(2, 50, 2)),
        "sigma": np.abs(rng.normal(1.0, 0.1, size=(2, 50))),
    }
    return az.from_dict({"posterior": posterior, "observed_data": {"y": y}}), model


def main():
    """Print both calls' modules and calls back up."""
    import pm_sens

    idata, model = _example()
    calls = {
        'sensitivity(mode="draw")': lambda: pm_sens.sensitivity(
            idata, model, mode="draw", progressbar=False, extend_inferencedata=False
        ),
        "permutation_importance": lambda: pm_sens.permutation_importance(
            idata, model, n_repeats=2, progressbar=False, extend_inferencedata=False
        ),
    }
    for name, call in calls.items():
        seen, climbs = trace(call)
        pairs = {(caller, callee) for caller, callee, _ in climbs}
        print(
            f"{name}: {len(seen)} modules; {len(climbs)} calls back up, {len(pairs)} module pairs"
        )
        folders = {}
        for module in seen:
            parts = module.split(".")[1:]
            folder = "/".join(parts[:-1]) + "/" if len(parts) > 1 else "top level"
            folders[folder] = folders.get(folder, 0) + 1
        print("    per folder: " + ", ".join(f"{f} {n}" for f, n in folders.items()))
        print("    " + "  ".join(m.removeprefix("pm_sens.") for m in seen))
        for caller, callee, function in sorted(set(climbs)):
            print(f"    up: {caller} -> {callee}.{function}")


if __name__ == "__main__":
    main()

"""Time to a full analysis against the fit, in fresh processes (issue 14).

Run: .venv/bin/python benchmarks/bench_first_call.py

A child process with an empty PyTensor compile directory runs ``pm.sample``
(2 chains × 500 tune + 500 draws, one core) on the quickstart's model, then each
pm_sens function once, and prints each call's time and the ratio of all
pm_sens calls to ``pm.sample``; a second child does the same with the compile
cache the first one left (warm).
"""

import json
import os
import subprocess
import sys
import tempfile
import time


def child():
    """One fit and one call of each function; prints the times as JSON."""
    sys.path.insert(0, "examples")
    import numpy as np
    import pymc as pm
    from quickstart import build_model, generate

    import pm_sens

    x, y = generate(np.random.default_rng(0))
    model = build_model(x, y)
    times = {}
    start = time.perf_counter()
    with model:
        idata = pm.sample(draws=500, tune=500, chains=2, cores=1, random_seed=1, progressbar=False)
    times["pm.sample"] = time.perf_counter() - start
    quiet = {"progressbar": False}
    calls = {
        "sensitivity(interactions=True)": lambda: pm_sens.sensitivity(
            idata, model, interactions=True, **quiet
        ),
        "sensitivity(mode='draw')": lambda: pm_sens.sensitivity(
            idata, model, mode="draw", **quiet
        ),
        "permutation_importance(n_repeats=3)": lambda: pm_sens.permutation_importance(
            idata, model, n_repeats=3, **quiet
        ),
        "partial_dependence": lambda: pm_sens.partial_dependence(idata, model, **quiet),
        "integrated_gradients": lambda: pm_sens.integrated_gradients(idata, model, **quiet),
        "summary": lambda: pm_sens.summary(idata),
    }
    for name, call in calls.items():
        start = time.perf_counter()
        call()
        times[name] = time.perf_counter() - start
    print(json.dumps(times))


def run_child(compile_dir):
    env = {**os.environ, "PYTENSOR_FLAGS": f"base_compiledir={compile_dir}"}
    out = subprocess.run(
        [sys.executable, __file__, "--child"], capture_output=True, text=True, check=True, env=env
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def report(label, times):
    fit = times.pop("pm.sample")
    total = sum(times.values())
    print(f"\n{label}: pm.sample {fit:.1f} s")
    for name, seconds in times.items():
        print(f"  {name:38s} {seconds:7.2f} s")
    print(f"  {'all pm_sens calls':38s} {total:7.2f} s   ratio to pm.sample {total / fit:.2f}")


def main():
    with tempfile.TemporaryDirectory() as compile_dir:
        report("cold (empty compile directory)", run_child(compile_dir))
        report("warm (second process, same compile directory)", run_child(compile_dir))


if __name__ == "__main__":
    child() if "--child" in sys.argv else main()

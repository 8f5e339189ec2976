"""Compile and run time of pm_sens graphs with PyTensor's Numba and C (CVM) backends.

Run: .venv/bin/python benchmarks/bench_backends.py

Each backend runs in fresh processes with an empty PyTensor base compile directory
(cold cache), then again with the directory it filled (warm cache). Reported:
the first `sensitivity` call (graph build + compile + run) and a second call
on the same model (run only), for the heteroscedastic Normal model of
bench_rsens.py with S=4000, N=1000, D=10, with and without interactions.
"""

import os
import subprocess
import sys
import tempfile

CODE = """
import sys, time, numpy as np
sys.path.insert(0, "benchmarks")
from bench_rsens import heteroscedastic_normal, fake_posterior
import pm_sens
rng = np.random.default_rng(0)
model = heteroscedastic_normal(rng, 1000, 10)
idata = fake_posterior(model, rng, 4, 1000)
for interactions in (False, True):
    t0 = time.perf_counter()
    pm_sens.sensitivity(idata, model, interactions=interactions, progressbar=False)
    t1 = time.perf_counter()
    pm_sens.sensitivity(idata, model, interactions=interactions, progressbar=False)
    t2 = time.perf_counter()
    print(interactions, t1 - t0, t2 - t1)
"""


def run(mode, compiledir):
    # base_compiledir holds both the C modules and the Numba cache
    env = dict(os.environ, PYTENSOR_FLAGS=f"mode={mode},base_compiledir={compiledir}")
    out = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", CODE], env=env, capture_output=True, text=True
    )
    if out.returncode:
        return None, out.stderr.strip().splitlines()[-1]
    rows = [line.split() for line in out.stdout.strip().splitlines()]
    return {row[0] == "True": (float(row[1]), float(row[2])) for row in rows}, ""


def main():
    print(f"{'backend':8} {'cache':5} {'graph':14} {'first call':>11} {'second call':>12}")
    for mode in ("NUMBA", "CVM"):
        with tempfile.TemporaryDirectory() as compiledir:
            for cache in ("cold", "warm"):
                times, error = run(mode, compiledir)
                if times is None:
                    print(f"{mode:8} {cache:5} failed: {error}")
                    continue
                for interactions, (first, second) in times.items():
                    graph = "R-sens+R-sens2" if interactions else "R-sens"
                    print(f"{mode:8} {cache:5} {graph:14} {first:10.2f}s {second:11.3f}s")


if __name__ == "__main__":
    main()

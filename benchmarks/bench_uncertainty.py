"""Cost of permutation importance: S=4000 draws, N=1000 points, D=10 features, 5 repeats.

Run: .venv/bin/python benchmarks/bench_uncertainty.py [--quick]

Prints the time of `permutation_importance` (entropy and likelihood) for a
heteroscedastic Normal and a logistic model, and its ratio to one vectorized
forward evaluation of the per-draw parameters over the same draws and the
(repeats × features + 1) × N permuted points, measured in the same run.
"""

import argparse
import sys
import time

import numpy as np
import xarray as xr

sys.path.insert(0, "benchmarks")
from bench_rsens import (  # noqa: E402
    best_of,
    fake_posterior,
    forward_seconds,
    heteroscedastic_normal,
    logistic_glm,
)

import pm_sens  # noqa: E402


def run(name, build, rng, chains, draws, n, d, repeats):
    model = build(rng, n, d)
    idata = fake_posterior(model, rng, chains, draws)
    y = model.rvs_to_values[model["y"]].eval()
    idata["observed_data"] = xr.DataTree(xr.Dataset({"y": ("obs", np.asarray(y))}))

    def pfi():
        pm_sens.permutation_importance(
            idata, model, n_repeats=repeats, random_seed=0, progressbar=False
        )

    start = time.perf_counter()
    pfi()
    first = time.perf_counter() - start
    seconds = best_of(pfi, 1)
    forward = forward_seconds(model, idata, 2) * (repeats * d + 1)
    print(f"\n{name}: S={chains * draws}, N={n}, D={d}, {repeats} repeats")
    print(f"  permutation_importance (entropy + likelihood)  {seconds:8.2f} s")
    print(f"  (repeats x features + 1) forward evaluations    {forward:8.2f} s")
    print(f"  ratio                                           {seconds / forward:8.2f}x")
    print(f"  first call (with compiling)                     {first:8.2f} s")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    sizes = (
        dict(chains=2, draws=100, n=200, d=4)
        if args.quick
        else dict(chains=4, draws=1000, n=1000, d=10)
    )
    run("heteroscedastic Normal", heteroscedastic_normal, rng, **sizes, repeats=5)
    run("logistic GLM", logistic_glm, rng, **sizes, repeats=5)


if __name__ == "__main__":
    main()

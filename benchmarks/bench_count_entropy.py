"""Entropy on a count model: default permutation_importance and partial_dependence.

Run: .venv/bin/python benchmarks/bench_count_entropy.py [--quick]

A Poisson regression as a newcomer writes it: 400 observations, 4 inputs and a
log-exposure offset in pm.Data (exposures 0.5-50, rates up to ~500), 2 chains x
500 draws (a posterior of known draws: no sampling). Prints the time of each
default call; the exact mixture entropy sums the pmf over each row's support.
"""

import argparse
import time

import arviz_base as azb
import numpy as np
import pymc as pm

import pm_sens


def poisson_with_exposure(rng, n, draws):
    x = rng.normal(size=(n, 4))
    exposure = rng.uniform(0.5, 50, size=n)
    beta = np.array([0.5, -0.3, 0.2, 0.0])
    y = rng.poisson(np.exp(0.8 + x @ beta + np.log(exposure)))
    with pm.Model() as model:
        xd = pm.Data("X", x)
        offset = pm.Data("log_exposure", np.log(exposure))
        a = pm.Normal("a")
        b = pm.Normal("b", shape=4)
        pm.Poisson("y", mu=pm.math.exp(a + xd @ b + offset), observed=y)
    posterior = {
        "a": 0.8 + 0.02 * rng.normal(size=(2, draws)),
        "b": beta + 0.02 * rng.normal(size=(2, draws, 4)),
    }
    return model, azb.from_dict({"posterior": posterior, "observed_data": {"y": y}})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    n, draws = (100, 100) if args.quick else (400, 500)
    model, idata = poisson_with_exposure(rng, n, draws)
    print(f"\nPoisson regression with exposure: N={n}, S={2 * draws}, 5 features")
    for name, call in [
        ("permutation_importance (default)", pm_sens.permutation_importance),
        ("partial_dependence (default)", pm_sens.partial_dependence),
    ]:
        start = time.perf_counter()
        call(idata, model, progressbar=False, extend_inferencedata=False)
        print(f"  {name:34s} {time.perf_counter() - start:8.1f} s   (target <= 10 s)")


if __name__ == "__main__":
    main()

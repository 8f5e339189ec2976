"""Draw-mode R-sens against bambi's ``interpret.slopes`` on the same posterior.

Run: .venv/bin/python benchmarks/bench_bambi.py [--quick]

A bambi logistic regression with 10 numeric predictors, N=1000 rows and a
posterior of S=4000 known draws (no sampling). pm_sens computes per-draw,
per-point R-sens of all 10 predictors in one call; bambi computes the slopes
``dE[y]/dx`` of each predictor by finite differences, one ``interpret.slopes``
call per predictor (by default at the predictor's mean, the others at each
row's values). Both give a value per draw, row and predictor. Target: pm_sens
<= 0.1 x bambi.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import arviz_base as azb
import numpy as np
import pandas as pd
from bench_rsens import best_of

import pm_sens


def logistic_model(rng, n, d):
    """A built bambi model and a posterior of known draws, 4 chains."""
    import bambi as bmb

    names = [f"x{j}" for j in range(d)]
    x = rng.normal(size=(n, d))
    beta = rng.normal(scale=0.5, size=d)
    data = pd.DataFrame(x, columns=names)
    data["y"] = rng.binomial(1, 1 / (1 + np.exp(-(x @ beta))))
    model = bmb.Model("y ~ " + " + ".join(names), data, family="bernoulli")
    model.build()
    return model, names, beta


def known_posterior(rng, model, names, beta, chains, draws):
    posterior = {"Intercept": 0.1 * rng.normal(size=(chains, draws))}
    for name, b in zip(names, beta, strict=True):
        posterior[name] = b + 0.05 * rng.normal(size=(chains, draws))
    observed = {"y": model.data["y"].to_numpy()}  # bambi's predictions read it
    return azb.from_dict(
        {"posterior": posterior, "observed_data": observed}, dims={"y": ["__obs__"]}
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--first-call", choices=["pm_sens", "bambi"])
    args = parser.parse_args()
    if args.first_call:
        return first_call(args.first_call, args.quick)
    import bambi as bmb

    rng = np.random.default_rng(0)
    n, chains, draws = (200, 2, 250) if args.quick else (1000, 4, 1000)
    model, names, beta = logistic_model(rng, n, 10)
    idata = known_posterior(rng, model, names, beta, chains, draws)
    options = dict(mode="draw", progressbar=False, extend_inferencedata=False)
    # best of several calls after those that build and compile, as bambi's first call
    # does (fresh memory on this VM is slow to touch at times: see the README)
    ours = best_of(lambda: pm_sens.sensitivity(idata, model, **options), 3)
    theirs = best_of(
        lambda: [bmb.interpret.slopes(model, idata, wrt=name, use_hdi=False) for name in names],
        1,
    )
    sizes = f"S={chains * draws}, N={n}, 10 predictors"
    print(f"\nDraw-mode R-sens vs bambi interpret.slopes (logistic, {sizes})")
    print(f"  pm_sens.sensitivity(mode='draw')      {ours:8.2f} s")
    print(f"  bambi interpret.slopes, 10 calls      {theirs:8.2f} s")
    print(f"  ratio {ours / theirs:.3f}   (target <= 0.1)")
    fill = best_of(lambda: np.empty((chains * draws, n, len(names))).fill(1.0), 3)
    print(f"  a fresh (S, N, 10) array, filled      {fill:8.2f} s   (our result, written once)")
    first_calls(args.quick)


def first_calls(quick):
    """The first call of each in a fresh process with empty PyTensor and Numba caches."""
    times = {}
    for who in ("pm_sens", "bambi"):
        with tempfile.TemporaryDirectory() as cache:
            env = {
                **os.environ,
                "PYTENSOR_FLAGS": f"base_compiledir={cache}",
                "NUMBA_CACHE_DIR": cache,
            }
            command = [sys.executable, __file__, "--first-call", who] + ["--quick"] * quick
            out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
            times[who] = float(out.stdout.split()[-1])
    print("  first call in a fresh process, empty compile caches:")
    print(f"    pm_sens.sensitivity(mode='draw')    {times['pm_sens']:8.2f} s")
    print(f"    bambi interpret.slopes, 10 calls    {times['bambi']:8.2f} s")
    print(f"    ratio {times['pm_sens'] / times['bambi']:.3f}   (target <= 1)")


def first_call(who, quick):
    """Time one first call (run by `first_calls` in a fresh process); prints seconds."""
    import time

    import bambi as bmb

    rng = np.random.default_rng(0)
    n, chains, draws = (200, 2, 250) if quick else (1000, 4, 1000)
    model, names, beta = logistic_model(rng, n, 10)
    idata = known_posterior(rng, model, names, beta, chains, draws)
    start = time.perf_counter()
    if who == "pm_sens":
        options = dict(mode="draw", progressbar=False, extend_inferencedata=False)
        pm_sens.sensitivity(idata, model, **options)
    else:
        for name in names:
            bmb.interpret.slopes(model, idata, wrt=name, use_hdi=False)
    print(time.perf_counter() - start)


if __name__ == "__main__":
    main()

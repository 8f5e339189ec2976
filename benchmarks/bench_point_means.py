"""Global draw-mode R-sens without the local array (``local=False``).

Run: .venv/bin/python benchmarks/bench_point_means.py [--quick]

1. Logistic GLM, S=4000, N=1000, D=10, in one run: draw-mode R-sens with
   local=False, and with the local array kept, each ÷ one vectorized forward
   evaluation of the likelihood's parameters (target <= 2 for local=False).
2. Logistic GLM, S=4000, N=10⁶, D=20, in a fresh process (no dask): the time
   and peak memory (maximum resident set size) of local=False (targets: under
   60 s and 2 GB); the local array alone would be 640 GB.
3. The same for a heteroscedastic Normal (μ = X b, log σ = c + g·x₀: two
   varying parameters, the scale reading one column of X); same targets.
"""

import argparse
import resource
import subprocess
import sys
import time

import numpy as np
import pymc as pm
from bench_rsens import best_of, fake_posterior, forward_seconds, logistic_glm

import pm_sens


def scale_from_one_column(rng, n, d):
    """μ = X b, σ = exp(c + g·x₀): the issue's heteroscedastic Normal."""
    x = rng.normal(size=(n, d))
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", shape=d)
        sigma = pm.math.exp(pm.Normal("c") + pm.Normal("g") * xd[:, 0])
        pm.Normal("y", mu=xd @ b, sigma=sigma, observed=x[:, 1])
    return model


MODELS = {"logistic GLM": logistic_glm, "heteroscedastic Normal": scale_from_one_column}


def ratios(chains, draws, n, d):
    rng = np.random.default_rng(0)
    model = logistic_glm(rng, n, d)
    idata = fake_posterior(model, rng, chains, draws)
    forward = forward_seconds(model, idata, 3)
    out = {"forward evaluation": forward}
    for local in (False, True):
        out[f"R-sens, local={local}"] = best_of(
            lambda local=local: pm_sens.sensitivity(
                idata,
                model,
                mode="draw",
                local=local,
                progressbar=False,
                extend_inferencedata=False,
            ),
            3,
        )
    return out


def large(name, chains, draws, n, d):
    """Time and peak memory of one local=False call (run in its own process)."""
    rng = np.random.default_rng(0)
    model = MODELS[name](rng, n, d)
    idata = fake_posterior(model, rng, chains, draws)
    start = time.perf_counter()
    out = pm_sens.sensitivity(
        idata, model, mode="draw", local=False, progressbar=False, extend_inferencedata=False
    )["sensitivity"]
    seconds = time.perf_counter() - start
    assert out["rsens"].shape == (chains, draws, d)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"{seconds:.1f} {peak / 1e9:.2f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="S=400; N=10⁵ for the large case")
    parser.add_argument("--large", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.large:
        large(args.large[0], *map(int, args.large[1:]))
        return
    chains, draws = (2, 200) if args.quick else (4, 1000)
    print(f"1. logistic GLM, S={chains * draws}, N=1000, D=10 (best of 3)")
    times = ratios(chains, draws, 1000, 10)
    forward = times["forward evaluation"]
    for name, seconds in times.items():
        print(f"   {name:28s} {seconds:8.3f} s  {seconds / forward:6.2f} × forward")
    n = 100_000 if args.quick else 1_000_000
    for number, name in enumerate(MODELS, start=2):
        print(f"{number}. {name}, S={chains * draws}, N={n:,}, D=20, local=False, fresh process")
        command = [
            sys.executable,
            __file__,
            "--large",
            name,
            str(chains),
            str(draws),
            str(n),
            "20",
        ]
        result = subprocess.run(command, capture_output=True, text=True, check=True, cwd=".")
        seconds, peak = result.stdout.split()[-2:]
        print(
            f"   {seconds} s, peak resident memory {peak} GB (local array: "
            f"{8 * chains * draws * n * 20 / 1e9:,.0f} GB)"
        )


if __name__ == "__main__":
    main()

"""The benchmark suite: every ratio measured against a baseline in the same run.

Run: .venv/bin/python benchmarks/suite.py [--quick]

1. R-sens and R-sens2 ÷ one forward evaluation, first-call overhead, peak
   memory (bench_rsens.py).
2. R-sens ÷ the finite-difference KL method at D=10 (target <= 0.5).
3. The draw-vectorized engine ÷ a Python loop over draws calling the same
   compiled graph one draw at a time (target <= 0.05), for N = 10, 100, 1000.
4. Permutation importance ÷ (repeats × features + 1) forward evaluations
   (bench_uncertainty.py), and the default entropy calls on a Poisson
   regression with exposure (bench_count_entropy.py, target <= 10 s each).
5. summary and importance at S=4000, D=10 ÷ one NumPy mean over the points
   (bench_summary.py, target summary <= 50 ms).
6. Scaling of time and peak memory with S, N and D (moment-mode R-sens, each in
   a fresh process), up to S=4000, N=100000, D=20 (target < 2 GB).
7. Local values larger than memory: draw-mode R-sens on dask-backed points at
   S=4000, N=100000, D=20 (64 GB of local values) reduced block by block to each
   draw's mean over points; time ÷ the moment-mode call and peak memory.
8. Draw-mode R-sens without the local array (local=False) ÷ a forward
   evaluation (target <= 2), and at S=4000, N=10⁶, D=20 in memory, a logistic
   GLM and a heteroscedastic Normal (bench_point_means.py, targets under 60 s
   and 2 GB).
9. Draw-mode R-sens ÷ bambi's interpret.slopes for 10 predictors on the same
   posterior (bench_bambi.py, logistic, S=4000, N=1000, target <= 0.1).
10. A whole analysis on the quickstart's model against `pm.sample`, in fresh
   processes with an empty and then a warm compile cache (bench_first_call.py,
   target: ratio <= 1.0 cold, each call <= 1 s warm).
11. R-sens of the joint predictive of a 200-step AR(1)-error regression with 3
   covariates, S=2000, ÷ the local R-sens of the regression without the AR
   term on the same data (bench_joint.py, target <= 5 in each mode).
12. A BART model (pymc-bart, Friedman's function, N=300, D=7, S=1000): the KL
   and permutation importance ÷ pymc-bart's own variable importance (VI) on
   the same fit (target <= 10), PDP against its plot_pdp (bench_bart.py).
"""

import argparse
import sys
import time

import numpy as np

sys.path.insert(0, "benchmarks")
import bench_bambi  # noqa: E402
import bench_bart  # noqa: E402
import bench_count_entropy  # noqa: E402
import bench_first_call  # noqa: E402
import bench_joint  # noqa: E402
import bench_point_means  # noqa: E402
import bench_rsens  # noqa: E402
import bench_summary  # noqa: E402
import bench_uncertainty  # noqa: E402
from bench_rsens import best_of, fake_posterior, heteroscedastic_normal, logistic_glm  # noqa: E402

import pm_sens  # noqa: E402
from pm_sens._run.chunks import moment_pass  # noqa: E402
from pm_sens._run.compiling import compiled_for  # noqa: E402
from pm_sens.graph.compile.compiled import data_for_chunk  # noqa: E402
from pm_sens.measures.mixture import MixtureMoments  # noqa: E402


def rsens_versus_kl(rng, chains, draws, n, d):
    model = heteroscedastic_normal(rng, n, d)
    idata = fake_posterior(model, rng, chains, draws)

    def run(method):
        return best_of(
            lambda: pm_sens.sensitivity(idata, model, method=method, progressbar=False), 3
        )

    rsens, kl = run("rsens"), run("kl")
    sizes = f"S={chains * draws}, N={n}, D={d}"
    print(f"\nR-sens vs finite-difference KL (heteroscedastic Normal, {sizes})")
    print(f"  R-sens {rsens:.3f} s, KL {kl:.3f} s, ratio {rsens / kl:.2f}   (target <= 0.5)")


def engine_and_loop_seconds(rng, chains, draws, n, d):
    """Seconds of the engine as `sensitivity` runs it (chunks of draws, moments
    merged) and of a loop calling the same compiled graph on one draw at a time."""
    model = logistic_glm(rng, n, d)
    idata = fake_posterior(model, rng, chains, draws)
    ctx = bench_rsens.default_context(model, idata)
    ctx.progressbar = False
    compiled = compiled_for(ctx, "moment", 1)
    all_draws = ctx.draws.chunk(0, ctx.draws.count)
    data = data_for_chunk(compiled, ctx.points.values)

    def vectorized():
        moment_pass(ctx, compiled, ctx.points.values, False, "")

    def loop():
        moments = MixtureMoments(False)
        for s in range(ctx.draws.count):
            out = compiled(data, [v[s : s + 1] for v in all_draws])
            moments.add(1, out.phi, out.jac)

    return best_of(vectorized, 3), best_of(loop, 1)


def vectorized_versus_loop(rng, chains, draws, sizes, d):
    print(f"\nVectorized engine vs a per-draw Python loop (logistic, S={chains * draws}, D={d})")
    print(f"  {'N':>6} {'vectorized s':>13} {'loop s':>9} {'ratio':>8}   (target <= 0.05)")
    for n in sizes:
        fast, slow = engine_and_loop_seconds(rng, chains, draws, n, d)
        print(f"  {n:>6} {fast:>13.4f} {slow:>9.4f} {fast / slow:>8.4f}")


def scaling(configs):
    print("\nScaling, moment-mode R-sens (heteroscedastic Normal), each in a fresh process")
    print(f"  {'S':>6} {'N':>7} {'D':>3} {'seconds':>8} {'peak RSS GB':>12} {'added GB':>9}")
    for s, n, d in configs:
        seconds, base, peak = bench_rsens.measure_call(s, n, d)
        print(f"  {s:>6} {n:>7} {d:>3} {seconds:>8.2f} {peak:>12.2f} {peak - base:>9.2f}")


def lazy_local(s, n, d):
    print(f"\nLocal values larger than memory: draw-mode R-sens, S={s}, N={n}, D={d}")
    print(f"  ({s * n * d * 8 / 2**30:.0f} GB of local values, dask-backed points in chunks")
    print("  of 10000, reduced to each draw's mean over points; each call in a fresh process)")
    moment, *_ = bench_rsens.measure_call(s, n, d)
    seconds, base, peak = bench_rsens.measure_call(s, n, d, bench_rsens.LAZY_DRAW_CALL)
    print(f"  moment mode (in memory)  {moment:8.2f} s   (baseline)")
    print(f"  draw mode, block by block {seconds:7.2f} s   {seconds / moment:6.2f}x moment mode")
    print(f"  peak RSS {peak:.2f} GB, added by the call {peak - base:.2f} GB")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    quick = parser.parse_args().quick
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    sys.argv = [sys.argv[0]] + (["--quick"] if quick else [])
    bench_rsens.main()
    size = (
        dict(chains=2, draws=100, n=200, d=10)
        if quick
        else dict(chains=4, draws=1000, n=1000, d=10)
    )
    rsens_versus_kl(rng, **size)
    vectorized_versus_loop(
        rng, size["chains"], size["draws"], [10, 100] if quick else [10, 100, 1000], size["d"]
    )
    bench_uncertainty.main()
    bench_count_entropy.main()
    bench_summary.main()
    if quick:
        configs = [(400, 1000, 5), (800, 1000, 5)]
    else:
        configs = [
            (1000, 10000, 10),
            (2000, 10000, 10),
            (4000, 10000, 10),
            (1000, 50000, 10),
            (1000, 100000, 10),
            (1000, 10000, 5),
            (1000, 10000, 20),
            (4000, 100000, 20),
        ]
    scaling(configs)
    lazy_local(*((400, 20000, 10) if quick else (4000, 100000, 20)))
    bench_point_means.main()
    bench_bambi.main()
    bench_first_call.main()
    bench_joint.main()
    bench_bart.main()
    print(f"\nsuite finished in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()

"""The JAX backend against the CPU backend, and the GPU rows of the backend issue.

Run: .venv/bin/python benchmarks/bench_jax.py [--gpu] [--small]

Default: the quickstart's analysis (`examples/quickstart.py`: moment-mode
`sensitivity` with interactions, `summary`, `plot_interactions`, draw-mode
`sensitivity`, `summary`, `plot_importance`) on its model with 4 × 1000 known
draws, once per backend, each in a fresh process with an empty PyTensor
compile directory (every compile counted: Numba's, JAX's), then a second
time in the same process, and once every graph is compiled (the CPU
backend's Numba compiles run in the background after the second call, and
the time until they are done is printed too). Prints each backend's times and
the ratios ``jax / cpu`` (target: at most 2 on the first call, compiles
included).

``--gpu``: the GPU rows, on JAX's default device (run on the GPU machine as
``../shared/gpu/README.md`` says): draw-mode R-sens with ``local=False`` of
a logistic GLM, S = 4000, N = 10⁶, D = 20 (target ≤ 0.5 s once compiled);
`permutation_importance` and `partial_dependence` of a 30-input logistic
regression, 2 × 1000 draws, 569 rows (targets ≤ 1 s each); each in float64
and with ``dtype="float32"``. ``--small``: the same at sizes a CPU runs in
seconds (to check the script).
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

QUICKSTART = """
import sys, time
import matplotlib
matplotlib.use("Agg")
import numpy as np
sys.path[:0] = ["examples", "benchmarks"]
from quickstart import generate, build_model
from bench_rsens import fake_posterior
import pm_sens
from pm_sens._run.background import wait_for_compiles

rng = np.random.default_rng(42)
model = build_model(*generate(rng))
idata = fake_posterior(model, rng, 4, 1000)
pm_sens.set_options(backend=sys.argv[1])

def analysis():
    start = time.perf_counter()
    tree = pm_sens.sensitivity(idata, model, interactions=True, progressbar=False)
    pm_sens.summary(tree)
    pm_sens.plot_interactions(tree, backend="matplotlib")
    tree = pm_sens.sensitivity(tree, model, mode="draw", progressbar=False)
    pm_sens.summary(tree)
    pm_sens.plot_importance(tree, backend="matplotlib")
    return time.perf_counter() - start

begin = time.perf_counter()
print("first", analysis())
print("second", analysis())
# the CPU backend's Numba compiles run in the background, asked for by the second
# call; the third call compiles what the background did not, the fourth runs
wait_for_compiles()
analysis()
wait_for_compiles()
print("until_compiled", time.perf_counter() - begin)
print("compiled", analysis())
"""


def quickstart():
    """The quickstart's analysis per backend, cold (fresh process and cache) and compiled."""
    times = {}
    for backend in ("cpu", "jax"):
        with tempfile.TemporaryDirectory() as compiledir:
            env = dict(os.environ, PYTENSOR_FLAGS=f"base_compiledir={compiledir}")
            out = subprocess.run(
                [sys.executable, "-W", "ignore", "-c", QUICKSTART, backend],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        times[backend] = dict(line.split() for line in out.splitlines() if line)
    columns = ("first", "second", "until_compiled", "compiled")
    print(
        "| backend | first call (compiles included) | second call "
        "| from the start until every graph is compiled | compiled |"
    )
    print("| --- | --- | --- | --- | --- |")
    for backend, t in times.items():
        print(f"| {backend} | " + " | ".join(f"{float(t[c]):.2f} s" for c in columns) + " |")
    ratios = [float(times["jax"][c]) / float(times["cpu"][c]) for c in columns]
    print("| jax / cpu | " + " | ".join(f"{r:.2f}" for r in ratios) + " |")


def _best(call, repeats=3):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def gpu_rows(small):
    """The GPU rows: first call (compile included) and best of three compiled calls."""
    import jax
    import numpy as np

    sys.path.insert(0, "benchmarks")
    from bench_rsens import fake_posterior, logistic_glm

    import pm_sens

    pm_sens.set_options(backend="jax")
    quiet = dict(progressbar=False, extend_inferencedata=False)
    rng = np.random.default_rng(0)
    rows = []
    n, d, s = (10_000, 20, 400) if small else (1_000_000, 20, 4000)
    model = logistic_glm(rng, n, d)
    idata = fake_posterior(model, rng, 4, s // 4)

    def rsens():
        pm_sens.sensitivity(idata, model, mode="draw", local=False, method="rsens", **quiet)

    rows.append((f"draw-mode R-sens, local=False, S={s}, N={n}, D={d}", rsens, "0.5 s"))
    n, d, s = (569, 5, 100) if small else (569, 30, 2000)
    wide = logistic_glm(rng, n, d)
    posterior = fake_posterior(wide, rng, 2, s // 2)
    observed = rng.integers(0, 2, n)

    def pfi():
        pm_sens.permutation_importance(posterior, wide, observed=observed, random_seed=1, **quiet)

    def pdp():
        pm_sens.partial_dependence(posterior, wide, observed=observed, **quiet)

    rows.append((f"permutation_importance, {d} inputs, S={s}, N={n}", pfi, "1 s"))
    rows.append((f"partial_dependence, {d} inputs, S={s}, N={n}", pdp, "1 s"))
    print(f"JAX devices: {jax.devices()}")
    print(
        "| what | float64: first call | float64: compiled (best of 3) "
        "| float32: first call | float32: compiled | target (float64, compiled) |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for what, call, target in rows:
        times = []
        for dtype in ("float64", "float32"):
            with pm_sens.set_options(dtype=dtype):
                times += [f"{_best(call, 1):.2f} s", f"{_best(call):.3f} s"]
        print(f"| {what} | {' | '.join(times)} | ≤ {target} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", action="store_true", help="the GPU rows")
    parser.add_argument("--small", action="store_true", help="small sizes (a CPU check)")
    args = parser.parse_args()
    if args.gpu:
        gpu_rows(args.small)
    else:
        quickstart()


if __name__ == "__main__":
    main()

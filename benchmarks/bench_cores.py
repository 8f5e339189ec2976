"""Every core: each call on one core and on all of them, in one run.

Run: .venv/bin/python benchmarks/bench_cores.py [--quick]

Known posterior draws (no sampling), each call warmed up first (compiles done),
then timed alternately with ``cores=1`` and ``cores=<all>``, best of 2:

1. the logistic GLM of ``bench_point_means.py``: draw-mode R-sens with
   ``local=False``, S=4000, D=20, N=10⁶ (10⁵ with --quick);
2. the heteroscedastic Normal of ``bench_rsens.py``, S=4000, N=1000, D=10:
   moment-mode and draw-mode R-sens;
3. a logistic regression on 30 inputs, 569 rows, 2 × 1000 draws (the
   breast-cancer shape of ``bench_notebooks.py``): ``permutation_importance``,
   ``partial_dependence``, ``integrated_gradients``.

Prints each call's times and their ratio (target: >= 1.6 on 2 cores, >= 8 on
16, for the large case 1).
"""

import argparse
import time

import numpy as np
from bench_rsens import fake_posterior, heteroscedastic_normal, logistic_glm

import pm_sens
from pm_sens._run.background import wait_for_compiles
from pm_sens.options import available_cores


def timed(call, cores, repeats=2):
    """The best of ``repeats`` runs of ``call`` on ``cores``."""
    best = np.inf
    for _ in range(repeats):
        with pm_sens.set_options(cores=cores):
            start = time.perf_counter()
            call()
            best = min(best, time.perf_counter() - start)
    return best


def cases(quick):
    """(name, call) of every case."""
    rng = np.random.default_rng(0)
    kw = {"progressbar": False, "extend_inferencedata": False}
    n = 100_000 if quick else 1_000_000
    glm = logistic_glm(rng, n, 20)
    glm_draws = fake_posterior(glm, rng, 4, 1000)
    yield (
        f"logistic GLM N={n:,} D=20 S=4000, draw mode, local=False",
        lambda: pm_sens.sensitivity(glm_draws, glm, mode="draw", local=False, **kw),
    )
    normal = heteroscedastic_normal(rng, 1000, 10)
    normal_draws = fake_posterior(normal, rng, 4, 1000)
    yield (
        "heteroscedastic Normal N=1000 D=10 S=4000, moment mode",
        lambda: pm_sens.sensitivity(normal_draws, normal, **kw),
    )
    yield (
        "heteroscedastic Normal N=1000 D=10 S=4000, draw mode",
        lambda: pm_sens.sensitivity(normal_draws, normal, mode="draw", **kw),
    )
    wide = logistic_glm(rng, 569, 30)
    wide_draws = fake_posterior(wide, rng, 2, 1000)
    observed = {"observed": rng.integers(0, 2, 569)}
    yield (
        "logistic N=569 D=30 S=2000, permutation_importance",
        lambda: pm_sens.permutation_importance(wide_draws, wide, **observed, **kw),
    )
    yield (
        "logistic N=569 D=30 S=2000, partial_dependence",
        lambda: pm_sens.partial_dependence(wide_draws, wide, **observed, **kw),
    )
    yield (
        "logistic N=569 D=30 S=2000, integrated_gradients",
        lambda: pm_sens.integrated_gradients(wide_draws, wide, **kw),
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="N=10⁵ in the large case")
    args = parser.parse_args()
    every = available_cores()
    print(f"{'case':62s} {'1 core':>8s} {f'{every} cores':>9s} {'ratio':>6s}")
    for name, call in cases(args.quick):
        call()  # compiled, and the Numba compile asked for
        call()
        wait_for_compiles()
        one, all_ = timed(call, 1), timed(call, every)
        print(f"{name:62s} {one:7.2f}s {all_:8.2f}s {one / all_:6.2f}", flush=True)


if __name__ == "__main__":
    main()

"""pm_sens on a BART model against pymc-bart's own importance and PDP, same fit.

Run: .venv/bin/python benchmarks/bench_bart.py [--quick]

Friedman's first function on 7 uniform inputs (examples/bart_importance.py),
N=300 rows, m=50 trees, 2 chains of 500 draws (S=1000) sampled in parallel.
Timed on that one fit, best of 3 after a warm-up call of each (`best_of`):

- pymc-bart's ``compute_variable_importance(method="VI")`` (50 posterior
  samples: its default), the baseline;
- ``sensitivity`` (the KL over 0.1 sd, central; moment and draw mode) and
  ``permutation_importance`` (5 repeats), on all S draws and on 50 draws as
  the VI uses: target <= 10× the VI;
- ``partial_dependence`` at its defaults (50 grid values, every draw, ICE)
  and with ``plot_pdp``'s 200 draws and 9 values, against ``plot_pdp``
  itself (which evaluates 9 rows per input, the other inputs marginalized
  inside the trees, not the N rows of each grid value).

All of pm_sens's time is pymc-bart's evaluation of the trees at the moved
points (draws × rows evaluated, printed beside each call).
"""

import argparse
import sys
from pathlib import Path

import matplotlib
import pandas as pd
import pymc_bart as pmb

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from bart_importance import FEATURES, fit  # noqa: E402
from bench_rsens import best_of  # noqa: E402

import pm_sens  # noqa: E402

matplotlib.use("Agg")
QUIET = dict(progressbar=False, extend_inferencedata=False)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="N=150, m=20, S=300")
    n, trees, draws = (150, 20, 150) if parser.parse_args().quick else (300, 50, 500)
    model, idata, mu, x = fit(n, trees, draws)
    frame = pd.DataFrame(x, columns=FEATURES)
    s, d = 2 * draws, len(FEATURES)
    calls = {
        "pymc-bart VI": (
            lambda: pmb.compute_variable_importance(idata, mu, frame, method="VI"),
            50 * n * d,
        ),
        "sensitivity, moment": (lambda: pm_sens.sensitivity(idata, model, **QUIET), s * n * 2 * d),
        "sensitivity, draw": (
            lambda: pm_sens.sensitivity(idata, model, mode="draw", **QUIET),
            s * n * 2 * d,
        ),
        "permutation_importance": (
            lambda: pm_sens.permutation_importance(idata, model, **QUIET),
            s * n * (5 * d + 1),
        ),
        "sensitivity, moment, VI's 50 draws": (
            lambda: pm_sens.sensitivity(idata, model, num_draws=50, random_seed=1, **QUIET),
            50 * n * 2 * d,
        ),
        "permutation_importance, VI's 50 draws": (
            lambda: pm_sens.permutation_importance(
                idata, model, num_draws=50, random_seed=1, **QUIET
            ),
            50 * n * (5 * d + 1),
        ),
        "partial_dependence, defaults": (
            lambda: pm_sens.partial_dependence(idata, model, **QUIET),
            s * n * 50 * d,
        ),
        "partial_dependence, 200 draws, 9 values": (
            lambda: pm_sens.partial_dependence(
                idata, model, num_draws=200, grid_resolution=9, random_seed=1, **QUIET
            ),
            200 * n * 9 * d,
        ),
        # 9 rows (quantiles of every column) per input, the other inputs
        # marginalized inside the trees (branches weighted by training rows)
        "pymc-bart plot_pdp": (lambda: pmb.plot_pdp(mu, x, samples=200), 200 * 9 * d),
    }
    print(f"BART, Friedman #1, N={n}, D={d}, m={trees}, S={s} (best of 3)")
    seconds = {}
    for name, (call, evaluated) in calls.items():
        seconds[name] = best_of(call, 3)
        matplotlib.pyplot.close("all")
        ratio = seconds[name] / seconds["pymc-bart VI"]
        print(
            f"  {name:42s} {seconds[name]:7.2f} s  {ratio:6.1f}× VI  "
            f"({evaluated / 1e6:.1f} M draw-rows of trees)"
        )
    vi = seconds["pymc-bart VI"]
    for draws_used, suffix in (("every draw", ""), ("VI's 50 draws", ", VI's 50 draws")):
        importance = seconds[f"sensitivity, moment{suffix}"]
        importance += seconds[f"permutation_importance{suffix}"]
        print(
            f"  sensitivity + permutation_importance, {draws_used}: {importance:.2f} s, "
            f"{importance / vi:.1f}× VI (target <= 10)"
        )


if __name__ == "__main__":
    main()

"""summary and importance on draw-mode results: 10 features, 4000 draws.

Both read every local value once, so the baseline is one NumPy mean over the
points of the same array (the least any global importance can cost); printed as
milliseconds and ratios. Target (issue 16): summary <= 50 ms.

Run: .venv/bin/python benchmarks/bench_summary.py [--quick]
"""

import sys

import numpy as np
import xarray as xr
from bench_rsens import best_of

import pm_sens


def draw_mode_group(rng, chains, draws, n, d):
    values = rng.gamma(2.0, size=(chains, draws, n, d))
    group = xr.Dataset(
        {"rsens": (("chain", "draw", "obs", "feature"), values)},
        coords={"feature": [f"x{i}" for i in range(d)], "feature_kind": ("feature", ["rate"] * d)},
    )
    return xr.DataTree.from_dict({"sensitivity": group}), values


def main():
    quick = "--quick" in sys.argv
    rng = np.random.default_rng(0)
    chains, draws, d = (2, 200, 10) if quick else (4, 1000, 10)
    print(f"\nsummary and importance (draw mode, S={chains * draws}, D={d})")
    print(f"  {'N':>6} {'mean ms':>8} {'importance ms':>14} {'summary ms':>11} {'ratio':>6}")
    for n in (100, 1000):
        idata, values = draw_mode_group(rng, chains, draws, n, d)
        baseline = best_of(lambda values=values: values.mean(2), 5)
        importance = best_of(lambda idata=idata: pm_sens.importance(idata), 5)
        table = best_of(lambda idata=idata: pm_sens.summary(idata), 5)
        print(
            f"  {n:>6} {baseline * 1e3:>8.1f} {importance * 1e3:>14.1f} {table * 1e3:>11.1f}"
            f" {table / baseline:>6.2f}"
        )


if __name__ == "__main__":
    main()

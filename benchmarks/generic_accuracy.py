"""Accuracy of the summation/quadrature route, per likelihood, against SciPy.

Run: .venv/bin/python benchmarks/generic_accuracy.py

For each likelihood of tests/test_generic_likelihoods.py, the largest relative
difference of per-draw R-sens from the SciPy finite-difference KL reference
(step 1e-4; the reference itself carries ~1e-7 relative error from rounding in
its KL sums), and the route pm_sens used.
"""

import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
warnings.filterwarnings("ignore")

from test_generic_likelihoods import CASES, XS, _fd_rsens, _fit  # noqa: E402

import pm_sens  # noqa: E402


def main():
    print(f"{'likelihood':<32} {'route':<24} {'max rel. error':>14}")
    for name in sorted(CASES):
        build, kl = CASES[name]
        model, idata = _fit(build)
        out = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)["sensitivity"]
        got = out["rsens"].values[0, 0, :, 0]
        expected = np.array([_fd_rsens(kl, x) for x in XS])
        route = out.attrs["fisher"].split(" (")[0].removesuffix(" of PyMC's logp")
        print(f"{name:<32} {route:<24} {np.max(np.abs(got / expected - 1)):14.1e}")


if __name__ == "__main__":
    main()

"""Relative difference between finite-difference KL and R-sens (alpha=1) by step size.

Run: .venv/bin/python benchmarks/kl_delta_sweep.py

For the Gaussian (sigma depends on x), logistic and Poisson test models of
tests/test_cross_checks.py, in both modes and both schemes, prints
max |kl / rsens − 1| over points and features for delta = 1e-1 … 1e-12
(relative to each input's sd). Truncation error falls with delta; round-off
in the predictive parameters grows as 1/delta².
"""

import sys

import numpy as np

sys.path.insert(0, ".")
from tests.test_cross_checks import (  # noqa: E402
    _heteroscedastic,
    _logistic,
    _poisson,
    _relative_difference,
)

DELTAS = [1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-10, 1e-12]


def main():
    header = "model           mode    scheme  " + " ".join(f"{d:8.0e}" for d in DELTAS)
    print(header)
    for name, build in [
        ("gaussian", _heteroscedastic),
        ("logistic", _logistic),
        ("poisson", _poisson),
    ]:
        model, idata = build(np.random.default_rng(0))
        for mode in ("moment", "draw"):
            for scheme in ("forward", "central"):
                diffs = [
                    _relative_difference(model, idata, mode, delta=d, kl_scheme=scheme)
                    for d in DELTAS
                ]
                print(f"{name:15} {mode:7} {scheme:7} " + " ".join(f"{x:8.1e}" for x in diffs))


if __name__ == "__main__":
    main()

"""Accuracy of the summation/quadrature route, per likelihood, against SciPy.

Run: .venv/bin/python benchmarks/generic_accuracy.py [--rule]

For each likelihood of tests/test_generic_likelihoods.py, the largest relative
difference of per-draw R-sens from the SciPy finite-difference KL reference
(step 1e-4; the reference itself carries ~1e-7 relative error from rounding in
its KL sums), and the route pm_sens used.

``--rule``: the quadrature rule's convergence instead. For six continuous laws
(two without an inverse CDF in PyMC: the ExGaussian and the skew normal), on
200 random rows each, the largest relative error of the entropy, mean,
variance and Fisher information at 2 × 16, 2 × 32, 2 × 48 (the default) and
2 × 64 nodes per part, against 2 × 256 (`GenericLikelihood(n_nodes=...)`).
"""

import sys
import warnings
from pathlib import Path

import numpy as np
import pymc as pm

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
warnings.filterwarnings("ignore")

from test_generic_likelihoods import CASES, XS, _fd_rsens, _fit  # noqa: E402

import pm_sens  # noqa: E402
from pm_sens.graph.likelihoods.generic.likelihood import GenericLikelihood  # noqa: E402

ROWS = 200


def _laws(rng):
    """Each law's model and random rows of its leaf parameters (R, M)."""

    def log_uniform(low, high):
        return np.exp(rng.uniform(low, high, ROWS))

    normal = rng.normal(0, 1, ROWS)
    laws = {
        "exgaussian": (
            lambda: pm.ExGaussian(
                "y",
                mu=pm.Normal("a"),
                sigma=pm.HalfNormal("b"),
                nu=pm.HalfNormal("c"),
                observed=[1.0],
            ),
            [normal, log_uniform(-3, 1), log_uniform(-3, 1)],
        ),
        "weibull": (
            lambda: pm.Weibull(
                "y", alpha=pm.HalfNormal("b"), beta=pm.HalfNormal("c"), observed=[1.0]
            ),
            [log_uniform(-1, 1.5), log_uniform(-2, 2)],
        ),
        "censored weibull": (
            lambda: pm.Censored(
                "y",
                pm.Weibull.dist(alpha=pm.HalfNormal("b"), beta=pm.HalfNormal("c")),
                lower=None,
                upper=2.0,
                observed=[1.0],
            ),
            [log_uniform(-1, 1.5), log_uniform(-1, 1)],
        ),
        "lognormal": (
            lambda: pm.LogNormal("y", mu=pm.Normal("a"), sigma=pm.HalfNormal("b"), observed=[1.0]),
            [normal, log_uniform(-3, 0.5)],
        ),
        "skew normal": (
            lambda: pm.SkewNormal(
                "y",
                mu=pm.Normal("a"),
                sigma=pm.HalfNormal("b"),
                alpha=pm.Normal("c"),
                observed=[1.0],
            ),
            [normal, log_uniform(-2, 1), rng.normal(0, 4, ROWS)],
        ),
        "student t (nu = 5)": (
            lambda: pm.StudentT(
                "y", nu=5.0, mu=pm.Normal("a"), sigma=pm.HalfNormal("b"), observed=[1.0]
            ),
            [normal, log_uniform(-2, 1)],
        ),
    }
    for name, (build, columns) in laws.items():
        with pm.Model() as model:
            build()
        yield name, model, np.stack(columns, -1)


def _statistics(likelihood, phi):
    entropy, mean, variance = likelihood.entropy_and_moments(phi)
    fisher = likelihood.fisher_information(phi).reshape(len(phi), -1)
    return {"entropy": entropy, "mean": mean, "variance": variance, "fisher": fisher}


def _relative_errors(got, reference):
    """Largest errors relative to each value (the mean: to |mean| + sd; the
    Fisher information: to its row's largest entry)."""
    scales = {
        "entropy": np.abs(reference["entropy"]),
        "mean": np.abs(reference["mean"]) + np.sqrt(reference["variance"]),
        "variance": reference["variance"],
        "fisher": np.abs(reference["fisher"]).max(-1, keepdims=True),
    }
    return {k: np.nanmax(np.abs(got[k] - reference[k]) / scales[k]) for k in reference}


def rule_convergence():
    print(f"{'law':<20} {'nodes':>7}  {'entropy':>8} {'mean':>8} {'variance':>8} {'fisher':>8}")
    for name, model, phi in _laws(np.random.default_rng(0)):
        rv, rvs = model["y"], set(model.basic_RVs)
        reference = _statistics(GenericLikelihood(rv, rvs, n_nodes=256), phi)
        for n in (16, 32, 48, 64):
            errors = _relative_errors(
                _statistics(GenericLikelihood(rv, rvs, n_nodes=n), phi), reference
            )
            row = " ".join(f"{errors[k]:8.0e}" for k in ("entropy", "mean", "variance", "fisher"))
            print(f"{name:<20} {f'2 x {n}':>7}  {row}", flush=True)


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
    rule_convergence() if "--rule" in sys.argv[1:] else main()

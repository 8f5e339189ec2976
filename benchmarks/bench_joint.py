"""R-sens of the joint predictive of a series against the local computation.

Run: .venv/bin/python benchmarks/bench_joint.py [--quick]

A regression with AR(1) errors on the observed past, written as notebooks
write it with shifted copies of the series (200 steps, 3 covariates, S=2000
known draws): ``μ_t = x_t β + ρ (y_{t−1} − x_{t−1} β)``, so the covariates
at step s move the predictions at s and s+1. Its joint R-sens (draw and
moment mode) ÷ the local R-sens of the regression without the AR term on the
same data and draws, measured in one run (target <= 5), after one warm-up
call of each (compiles).
"""

import argparse

import arviz_base as azb
import numpy as np
import pymc as pm
import pytensor.tensor as pt
from bench_rsens import best_of

import pm_sens

QUIET = dict(progressbar=False, extend_inferencedata=False)


def ar1_errors(rng, n, d, with_ar):
    """The AR(1)-error regression (or, without the AR term, the plain regression)."""
    x = rng.normal(size=(n, d))
    y = x @ np.ones(d) + np.cumsum(rng.normal(0, 0.3, size=n))
    past = np.concatenate([[0.0], y[:-1]])  # the observed past, one row per step
    with pm.Model() as model:
        xd = pm.Data("X", x)
        beta = pm.Normal("beta", shape=d)
        rho = pm.Uniform("rho", -1, 1)
        sigma = pm.HalfNormal("sigma")
        mu = xd @ beta
        if with_ar:
            mu = mu + rho * (pm.Data("y_past", past) - pt.concatenate([[0.0], mu[:-1]]))
        pm.Normal("y", mu, sigma, observed=y)
    return model


def draws(rng, chains, per_chain, d):
    posterior = {
        "beta": rng.normal(1, 0.1, size=(chains, per_chain, d)),
        "rho": rng.uniform(0.3, 0.8, size=(chains, per_chain)),
        "sigma": rng.uniform(0.2, 0.4, size=(chains, per_chain)),
    }
    return azb.from_dict({"posterior": posterior})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="S=400")
    chains, per_chain = (2, 200) if parser.parse_args().quick else (2, 1000)
    rng = np.random.default_rng(0)
    idata = draws(rng, chains, per_chain, 3)
    joint, local = (ar1_errors(np.random.default_rng(1), 200, 3, ar) for ar in (True, False))
    print(f"AR(1) errors, 200 steps, 3 covariates, S={chains * per_chain} (best of 3)")
    for mode in ("draw", "moment"):
        seconds = {}
        for name, model in (("joint", joint), ("local", local)):

            def call(model=model, mode=mode):
                return pm_sens.sensitivity(idata, model, inputs="X", mode=mode, **QUIET)

            call()  # compiles
            seconds[name] = best_of(call, 3)
        ratio = seconds["joint"] / seconds["local"]
        print(
            f"  {mode:6s} joint {seconds['joint']:.3f} s, local {seconds['local']:.3f} s: "
            f"{ratio:.2f} × the local computation (target <= 5)"
        )


if __name__ == "__main__":
    main()

"""Likelihoods without closed forms: the summation/quadrature route against a closed form.

Run: .venv/bin/python benchmarks/bench_generic.py [--quick]

Prints the time of draw-mode R-sens (and moment mode) for a zero-inflated
Poisson regression, whose Fisher information comes from summation over the
support through PyMC's logp, divided by the time of the same call on a Poisson
regression of the same size (S=4000 draws, N=1000 points, D=5), whose Fisher
information is closed form; and the same for a censored Normal (quadrature)
against the Normal. All in one run, after a warm-up call that compiles.
"""

import argparse
import time

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from bench_rsens import best_of, fake_posterior

import pm_sens


def regression(rng, n, d, likelihood):
    x = rng.normal(size=(n, d))
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", shape=d)
        eta = xd @ b
        if likelihood == "poisson":
            pm.Poisson("y", mu=pt.exp(eta), observed=rng.poisson(1.0, n))
        elif likelihood == "zero_inflated_poisson":
            pm.ZeroInflatedPoisson("y", psi=0.7, mu=pt.exp(eta), observed=rng.poisson(1.0, n))
        elif likelihood == "normal":
            pm.Normal("y", mu=eta, sigma=1.0, observed=x[:, 0])
        else:
            pm.Censored("y", pm.Normal.dist(eta, 1.0), lower=None, upper=1.0, observed=x[:, 0])
    return model


def seconds(model, idata, mode, repeats):
    return best_of(
        lambda: pm_sens.sensitivity(
            idata, model, mode=mode, progressbar=False, extend_inferencedata=False
        ),
        repeats,
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="S=400, N=200")
    args = parser.parse_args()
    chains, draws, n, d = (2, 200, 200, 5) if args.quick else (4, 1000, 1000, 5)
    rng = np.random.default_rng(0)
    print(f"S={chains * draws} N={n} D={d}; seconds (best of 2) and generic / closed form")
    for generic, closed in [("zero_inflated_poisson", "poisson"), ("censored_normal", "normal")]:
        models = {name: regression(rng, n, d, name) for name in (generic, closed)}
        idata = fake_posterior(models[closed], rng, chains, draws)
        for mode in ("draw", "moment"):
            start = time.perf_counter()
            times = {name: seconds(models[name], idata, mode, 2) for name in models}
            print(
                f"{generic:>22} {mode:>6}: {times[generic]:7.2f} s vs {closed} "
                f"{times[closed]:6.2f} s = {times[generic] / times[closed]:5.1f}x "
                f"(total {time.perf_counter() - start:.0f} s)"
            )


if __name__ == "__main__":
    main()

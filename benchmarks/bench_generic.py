"""Likelihoods without closed forms: the summation/quadrature route against closed forms.

Run: .venv/bin/python benchmarks/bench_generic.py [--quick]

Draw-mode and moment-mode R-sens, S=4000 draws, N=1000 points, D=5, in one
run after a warm-up call that compiles, as ratios:

- a zero-inflated Poisson regression through the summation route (PyMC's logp
  summed over the support) ÷ the same model through its closed form;
- the same closed form ÷ a Poisson regression (what zero inflation costs);
- a censored Normal regression (quadrature, with the point mass at the bound)
  ÷ the Normal regression (closed form).
"""

import argparse
from contextlib import contextmanager

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from bench_rsens import best_of, fake_posterior

import pm_sens
from pm_sens.graph import predictive


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


@contextmanager
def summation_route():
    """Read zero-inflated and hurdle counts through PyMC's logp, not their closed forms."""
    recognize = predictive.zero_modified_likelihood
    predictive.zero_modified_likelihood = lambda rv: None
    try:
        yield
    finally:
        predictive.zero_modified_likelihood = recognize


def seconds(model, idata, mode, repeats=2):
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
    print(f"S={chains * draws} N={n} D={d}; seconds (best of 2) and their ratio")
    zip_closed = regression(rng, n, d, "zero_inflated_poisson")
    idata = fake_posterior(zip_closed, rng, chains, draws)
    with summation_route():
        zip_summed = regression(rng, n, d, "zero_inflated_poisson")
        pm_sens.sensitivity(idata, zip_summed, progressbar=False)  # reads it now
    models = {
        "zero-inflated Poisson, summation": zip_summed,
        "zero-inflated Poisson, closed form": zip_closed,
        "Poisson, closed form": regression(rng, n, d, "poisson"),
        "censored Normal, quadrature": regression(rng, n, d, "censored_normal"),
        "Normal, closed form": regression(rng, n, d, "normal"),
    }
    pairs = [
        ("zero-inflated Poisson, summation", "zero-inflated Poisson, closed form"),
        ("zero-inflated Poisson, closed form", "Poisson, closed form"),
        ("censored Normal, quadrature", "Normal, closed form"),
    ]
    for mode in ("draw", "moment"):
        times = {name: seconds(model, idata, mode) for name, model in models.items()}
        for slow, fast in pairs:
            print(
                f"{mode:>6}: {slow:<34} {times[slow]:6.2f} s / {fast:<34} "
                f"{times[fast]:6.2f} s = {times[slow] / times[fast]:6.1f}x"
            )


if __name__ == "__main__":
    main()

"""Likelihoods without closed forms: the summation/quadrature route against closed forms.

Run: .venv/bin/python benchmarks/bench_generic.py [--quick]

Draw-mode and moment-mode R-sens, S=4000 draws, N=1000 points, D=5, in one
run after a warm-up call that compiles, as ratios:

- a zero-inflated Poisson regression through the summation route (PyMC's logp
  summed over the support) ÷ the same model through its closed form;
- the same closed form ÷ a Poisson regression (what zero inflation costs);
- a censored Normal regression through the quadrature route (with the point
  mass at the bound) ÷ the same model through its closed form (Tobit);
- that closed form ÷ the Normal regression.

Then the quadrature route's cost per row × draw and per node (one core): a
right-censored Weibull's rule (2 × 64 nodes and the bound's mass) for the
expectations each function takes (`GenericLikelihood`, 20,000 rows).
"""

import argparse
from contextlib import contextmanager

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from bench_rsens import best_of, fake_posterior

import pm_sens
from pm_sens.graph import predictive
from pm_sens.graph.likelihoods.generic.likelihood import GenericLikelihood


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
def logp_route():
    """Read likelihoods through PyMC's logp, not their closed forms."""
    recognizers = ("zero_modified_likelihood", "censored_normal_likelihood")
    saved = {name: getattr(predictive, name) for name in recognizers}
    for name in recognizers:
        setattr(predictive, name, lambda rv: None)
    try:
        yield
    finally:
        for name, recognize in saved.items():
            setattr(predictive, name, recognize)


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
    idata = fake_posterior(regression(rng, n, d, "poisson"), rng, chains, draws)
    models = {
        "zero-inflated Poisson, closed form": regression(rng, n, d, "zero_inflated_poisson"),
        "Poisson, closed form": regression(rng, n, d, "poisson"),
        "censored Normal, closed form": regression(rng, n, d, "censored_normal"),
        "Normal, closed form": regression(rng, n, d, "normal"),
    }
    with logp_route():
        for name in ("zero_inflated_poisson", "censored_normal"):
            label = (
                "zero-inflated Poisson, summation"
                if "poisson" in name
                else "censored Normal, quadrature"
            )
            models[label] = regression(rng, n, d, name)
            pm_sens.sensitivity(idata, models[label], progressbar=False)  # reads it now
    pairs = [
        ("zero-inflated Poisson, summation", "zero-inflated Poisson, closed form"),
        ("zero-inflated Poisson, closed form", "Poisson, closed form"),
        ("censored Normal, quadrature", "censored Normal, closed form"),
        ("censored Normal, closed form", "Normal, closed form"),
    ]
    for mode in ("draw", "moment"):
        times = {name: seconds(model, idata, mode) for name, model in models.items()}
        for slow, fast in pairs:
            print(
                f"{mode:>6}: {slow:<34} {times[slow]:6.2f} s / {fast:<34} "
                f"{times[fast]:6.2f} s = {times[slow] / times[fast]:6.1f}x"
            )


def per_row_costs(rows=20_000):
    """Microseconds per row × draw, and nanoseconds per node, of the rule's expectations."""
    with pm.Model() as model:
        k, scale = pm.Gamma("k", 2, 1), pm.Gamma("scale", 2, 1)
        law = pm.Weibull.dist(alpha=k, beta=scale)
        pm.Censored("y", law, lower=None, upper=np.ones(3), observed=np.ones(3))
    generic = GenericLikelihood(model["y"], set(model.basic_RVs))
    rng = np.random.default_rng(1)
    phi = np.column_stack(
        [rng.uniform(0.8, 3, rows), rng.lognormal(0, 0.5, rows), rng.uniform(0.5, 4, rows)]
    )
    calls = {
        "entropy, mean and variance (PFI, PDP)": lambda: generic.entropy_and_moments(phi),
        "E[y] and its score (IG, one step)": lambda: generic.raw_moments(phi, [0, 1], 1, 1),
        "Fisher information (R-sens, draw mode)": lambda: generic.fisher_information(phi),
    }
    for name, call in calls.items():
        call()  # compiles
        nodes = generic._per_row  # the rule's nodes per row, known once it has run
        per_row = best_of(call, 3) / rows
        print(
            f"censored Weibull, {name:<40} {per_row * 1e6:6.1f} µs per row × draw, "
            f"{per_row / nodes * 1e9:4.0f} ns per node ({nodes} nodes)"
        )


if __name__ == "__main__":
    main()
    per_row_costs()

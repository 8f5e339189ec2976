"""
BART: which inputs matter, from the predictive, beside pymc-bart's own importance.
==================================================================================

Generated data (Friedman's first test function, a standard BART benchmark):
``y = 10 sin(π x0 x1) + 20 (x2 − 0.5)² + 10 x3 + 5 x4 + noise``, with x5 and x6
pure noise, all inputs uniform on (0, 1). A BART model is fitted with
pymc-bart; its trees are piecewise constant, so pm_sens measures them without
derivatives: the KL between the predictives at x and x ± 0.1 sd of each input
(``sensitivity``'s default for such a model), the predictive-entropy and
likelihood permutation importance, and partial dependence curves. pymc-bart's
``compute_variable_importance`` (method "VI") on the same fit ranks the inputs
by how often the trees split on them and reports the R² of submodels.

Run: .venv/bin/python examples/bart_importance.py [--quick]
"""

import argparse
import time

import numpy as np
import pandas as pd
import pymc as pm
import pymc_bart as pmb
from _figures import save

import pm_sens

FEATURES = [f"x{k}" for k in range(7)]


def friedman(rng, n):
    """Friedman's first function on 7 uniform inputs (x5, x6 do not enter)."""
    x = rng.uniform(size=(n, 7))
    mean = (
        10 * np.sin(np.pi * x[:, 0] * x[:, 1])
        + 20 * (x[:, 2] - 0.5) ** 2
        + 10 * x[:, 3]
        + 5 * x[:, 4]
    )
    return x, mean + rng.normal(0, 1, n)


def pymc_bart_ranking(idata, mu, x):
    """pymc-bart's VI ranking (most included first) and the R² of each submodel."""
    start = time.perf_counter()
    vi = pmb.compute_variable_importance(
        idata, mu, pd.DataFrame(x, columns=FEATURES), method="VI", random_seed=1
    )
    seconds = time.perf_counter() - start
    order = [FEATURES[i] for i in vi["indices"]]
    return order, vi["r2_mean"], seconds


def fit(n, trees, draws):
    """The BART model of Friedman's function, fitted: (model, idata, BART variable, x)."""
    x, y = friedman(np.random.default_rng(7), n)
    with pm.Model(coords={"obs": range(n), "feature": FEATURES}) as model:
        X = pm.Data("X", x, dims=("obs", "feature"))
        mu = pmb.BART("mu", X, y, m=trees, dims="obs")
        sigma = pm.HalfNormal("sigma", 2)
        pm.Normal("y", mu, sigma, observed=y, dims="obs")
        # cores = chains: pymc-bart keeps every chain's trees only when they run in parallel
        idata = pm.sample(
            draws=draws, tune=draws, chains=2, cores=2, random_seed=7, progressbar=False
        )
    return model, idata, mu, x


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer rows, trees and draws")
    quick = parser.parse_args().quick
    model, idata, mu, x = fit(*((150, 20, 150) if quick else (300, 50, 500)))

    start = time.perf_counter()
    idata = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)
    idata = pm_sens.permutation_importance(idata, model, random_seed=1, progressbar=False)
    idata = pm_sens.partial_dependence(idata, model, progressbar=False)
    seconds = time.perf_counter() - start
    table = pm_sens.summary(idata, group="sensitivity")
    print(table.to_string(index=False, float_format="{:.3f}".format))
    pfi = pm_sens.summary(idata, group="permutation_importance")
    shown = pfi[pfi["variable"].isin(["entropy_pfi[total]", "likelihood_pfi"])]
    print(shown.to_string(index=False, float_format="{:.3f}".format))

    order, r2, vi_seconds = pymc_bart_ranking(idata, mu, x)
    kl = table[table["variable"] == "kl"].sort_values("rank")["feature"].tolist()
    likelihood = pfi[pfi["variable"] == "likelihood_pfi"].sort_values("rank")["feature"].tolist()
    print("\nranking, most important first (x5 and x6 do not enter the data):")
    print(f"  pm_sens KL over 0.1 sd (draw mode):  {' '.join(kl)}")
    print(f"  pm_sens likelihood PFI:              {' '.join(likelihood)}")
    print(f"  pymc-bart VI (inclusion counts):     {' '.join(order)}")
    print("  pymc-bart R² of the submodels with the first k of its order: ")
    print("   " + " ".join(f"{v:.3f}" for v in r2))
    print(f"\npm_sens's three calls took {seconds:.1f} s; pymc-bart's VI {vi_seconds:.1f} s")

    save(pm_sens.plot_importance(idata), "bart_importance")
    save(pm_sens.plot_partial_dependence(idata), "bart_partial_dependence")


if __name__ == "__main__":
    main()

"""What the reproductions share: the GP regression most of them fit, the 95 %
interval of a mean over repetitions, where figures and results go, and the
command line."""

import pickle
import sys
import time
from pathlib import Path

import numpy as np
import pymc as pm

import pm_sens

FIGURES = Path(__file__).parent.parent / "figures"


def ard_gp(n, d, sigma_scale=1.0):
    """A GP regression with an ARD squared-exponential kernel on n points of d inputs,
    its data in ``X_train``/``y_train`` (set by `fit_map`, so the graphs compile
    once); returns the model and the GP's predictive (inputs x1..xd)."""
    with pm.Model() as model:
        x = pm.Data("X_train", np.zeros((n, d)))
        y = pm.Data("y_train", np.zeros(n))
        ls = pm.InverseGamma("ls", 2, 2, shape=d)
        eta = pm.HalfNormal("eta", 5)
        sigma = pm.HalfNormal("sigma", sigma_scale)
        gp = pm.gp.Marginal(cov_func=eta**2 * pm.gp.cov.ExpQuad(d, ls=ls))
        gp.marginal_likelihood("y", X=x, y=y, sigma=sigma)
    names = [f"x{j + 1}" for j in range(d)]
    return model, pm_sens.Predictive.from_gp(gp, feature_names=names)


def fit_map(model, x, y):
    """Set a GP model's training data and fit it at its MAP (the papers' setting)."""
    with model:
        pm.set_data({"X_train": x, "y_train": y})
        return pm.find_MAP(return_inferencedata=True, jitter=False, progressbar=False)


def interval(values):
    """Mean over the first axis (repetitions) and the half-width of its 95 % interval
    (1.96 standard errors; nan for a single repetition)."""
    values = np.asarray(values)
    if len(values) < 2:  # a single repetition (a quick run) has no interval
        return values.mean(0), np.full(values.shape[1:], np.nan)
    half = 1.96 * values.std(0, ddof=1) / np.sqrt(len(values))
    return values.mean(0), half


def save(fig, name):
    """Save a figure as examples/figures/{name}.png and say where."""
    FIGURES.mkdir(exist_ok=True)
    path = FIGURES / f"{name}.png"
    fig.savefig(path)
    print(f"saved {path}")


def save_results(results, name):
    """Keep a quick run's results as examples/figures/{name}.pkl: the docs build runs
    each reproduction at its quick setting, and tests/test_site.py checks the paper's
    claims on what that run computed."""
    FIGURES.mkdir(exist_ok=True)
    with open(FIGURES / f"{name}.pkl", "wb") as file:
        pickle.dump(results, file)


def command_line(run, print_table, save_figure, quick, full, name):
    """Run ``quick`` (with ``--quick``) or ``full`` repetitions, print the table, save
    the figure and the run time (and a quick run's results as ``name``); return the
    results."""
    start = time.perf_counter()
    is_quick = "--quick" in sys.argv
    results = run(quick if is_quick else full)
    print_table(results)
    save_figure(results)
    if is_quick:
        save_results(results, name)
    print(f"\nfinished in {time.perf_counter() - start:.0f} s")
    return results

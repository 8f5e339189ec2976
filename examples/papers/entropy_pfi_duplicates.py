"""
Paper 004, Section 3 classification example, Figure 3: a duplicated feature.
============================================================================

x ~ U[0, 1]^10, P(y = 1 | x) = 0.1 + 0.8 · 1(x1 + x2 + x3 + x4 > 2): four
equally relevant features and six irrelevant ones, in three versions: as is,
with x10 replaced by a copy of x1 (relevant), and by a copy of x5
(irrelevant). Each repetition draws 5000 points (3750 to train, 1250 to
test) per version.

The paper trains a calibrated random forest. pm_sens needs a Bayesian model,
so we fit a Bayesian logistic regression on all ten features (coefficients
N(0, 5²), NUTS, 2 chains × 500 draws). It differs from the forest in what the
duplicate does: with x10 = x1 only b1 + b10 is learned from the data, b1 − b10
keeps its prior spread, and permuting x1 or x10 turns that spread into
predictive (epistemic) uncertainty; a forest splits on either copy instead.
Entropy-PFI (total) and Likelihood-PFI are computed on the test set, 5
permutations each.

The paper's claims (Figure 3): with x10 = x1, x1's Likelihood-PFI drops and
x10's rises, and x1 and x10 get the largest Entropy-PFI; with x10 = x5 the
Likelihood-PFI does not change and the Entropy-PFI of x5 and x10 rises a
little.

Run: .venv/bin/python examples/papers/entropy_pfi_duplicates.py [--quick]
    --quick: 1 repetition of 1500 training points, 200 draws per chain;
    full: 5 per version of 3750 points, 500 draws, 527 s on 2 cores (mostly NUTS).
"""

import sys
from functools import partial

import matplotlib
import numpy as np
import pymc as pm
from _repetitions import command_line, interval, save

import pm_sens

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

N_TRAIN, D, NOISE = 3750, 10, 0.1  # and 1250 test points
NAMES = [f"x{j + 1}" for j in range(D)]
VERSIONS = {"original": None, "x10 = copy of x1": 0, "x10 = copy of x5": 4}


def generate(rng, copy_of, n_train=N_TRAIN):
    x = rng.uniform(size=(n_train + n_train // 3, D))
    if copy_of is not None:
        x[:, 9] = x[:, copy_of]
    p = NOISE + (1 - 2 * NOISE) * (x[:, :4].sum(1) > 2)
    return x, rng.binomial(1, p)


def build_model(n_train):
    """One model; each data set is set into it (so the graphs compile once)."""
    with pm.Model(coords={"feature": NAMES}) as model:
        xd = pm.Data("X", np.zeros((n_train, D)), dims=("obs_id", "feature"))
        yd = pm.Data("y_train", np.zeros(n_train, dtype=int), dims="obs_id")
        a = pm.Normal("a", 0, 5)
        b = pm.Normal("b", 0, 5, dims="feature")
        # centred inputs: the intercept is then nearly independent of b (NUTS runs faster)
        pm.Bernoulli("y", logit_p=a + (xd - 0.5) @ b, observed=yd, dims="obs_id")
    return model


def one_version(model, rng, copy_of, n_train, draws=500):
    """(Likelihood-PFI, Entropy-PFI total, Entropy-PFI epistemic), each (D,)."""
    x, y = generate(rng, copy_of, n_train)
    with model:
        pm.set_data({"X": x[:n_train], "y_train": y[:n_train]})
        idata = pm.sample(
            draws,
            tune=draws,
            chains=2,
            cores=1,
            random_seed=int(rng.integers(2**31)),
            progressbar=False,
        )
    out = pm_sens.permutation_importance(
        idata,
        model,
        points={"X": x[n_train:]},
        observed=y[n_train:],
        random_seed=int(rng.integers(2**31)),
        progressbar=False,
    )["permutation_importance"]
    entropy = out["entropy_pfi"].mean("repeat")
    return np.array(
        [
            out["likelihood_pfi"].mean("repeat").values,
            entropy.sel(component="total").values,
            entropy.sel(component="epistemic").values,
        ]
    )


def run(repetitions, seed=3, n_train=N_TRAIN, draws=500):
    """{version: (repetitions, 3 measures, D)}; ``n_train`` (and a third as many
    test points) and ``draws`` (per chain, after as many tuning steps) smaller
    than the paper's only to test quickly."""
    rng = np.random.default_rng(seed)
    model = build_model(n_train)
    return {
        version: np.array(
            [one_version(model, rng, copy_of, n_train, draws) for _ in range(repetitions)]
        )
        for version, copy_of in VERSIONS.items()
    }


MEASURES = ("Likelihood-PFI", "Entropy-PFI (total)", "Entropy-PFI (epistemic)")


def print_table(results):
    print("\nPFI on the test points (nats per point), mean ± 95% interval over repetitions")
    print("paper (Figure 3): with x10 = x1, x1's Likelihood-PFI drops, x10's rises, and")
    print("x1, x10 have the largest Entropy-PFI; with x10 = x5 little changes")
    for k, measure in enumerate(MEASURES):
        print(f"\n{measure}")
        print(f"{'version':18} " + " ".join(f"{n:>12}" for n in NAMES))
        for version, values in results.items():
            mean, half = interval(values[:, k])
            cells = " ".join(f"{m:6.3f}±{h:.3f}" for m, h in zip(mean, half, strict=True))
            print(f"{version:18} {cells}")


def save_figure(results):
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8), layout="constrained")
    width = 0.8 / len(results)
    for k, (ax, measure) in enumerate(zip(axes, MEASURES, strict=True)):
        for v, (version, values) in enumerate(results.items()):
            mean, half = interval(values[:, k])
            ax.bar(np.arange(D) + (v - 1) * width, mean, width, yerr=half, label=version)
        ax.set_xticks(np.arange(D), NAMES)
        ax.axhline(0, color="k", lw=0.8)
        ax.set_title(measure)
    axes[0].set_ylabel("nats per point")
    axes[0].legend()
    save(fig, "paper004_entropy_pfi_duplicates")


if __name__ == "__main__":
    quick = "--quick" in sys.argv  # fewer points and draws: the claims still show
    command_line(
        partial(run, n_train=1500 if quick else N_TRAIN, draws=200 if quick else 500),
        print_table,
        save_figure,
        quick=1,
        full=5,
        name="entropy_pfi_duplicates",
    )

"""
Paper 002, Section 4.1 and Figure 2: eight equally relevant inputs, ARD against R-sens
======================================================================================

y = Σ_j A_j sin(φ_j x_j) + ε with frequencies φ_j from π/10 (input 1, nearly
linear) to π (input 8, strongly nonlinear) and amplitudes A_j giving every term
unit variance under the input distribution: x_j ~ U(−1, 1), or x_j ~ N(0, 0.4²)
(then A_j = 1 / sqrt((1 − exp(−2 (0.4 φ_j)²)) / 2)). Each repetition draws 300
points, fits a GP with an ARD squared-exponential kernel at its MAP (the
paper's setting) and computes each input's relevance: ARD (1 / length-scale),
R-sens, the finite-difference KL method and VAR, each scaled so that the
largest is 1, then averaged over repetitions.

The paper gives Figure 2, not a table, so the "paper" column states what the
figure shows: with uniform inputs ARD puts about half of the inputs near 0 and
the KL and VAR methods prefer the nonlinear inputs less severely; with normal
inputs KL and VAR give nearly equal relevance to all eight. We report the
relevance of the most linear input (input 1) and the max/min ratio over inputs.

Run: .venv/bin/python examples/papers/gp_sine_ard.py [--quick]
    --quick: 3 repetitions per input distribution;
    full: 200 repetitions, as the paper: 654 s on 2 cores.
"""

import warnings

import matplotlib
import numpy as np
from _repetitions import ard_gp, command_line, fit_map, interval, save

import pm_sens

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# PyMC's GP graph has one step Numba runs in object mode; PyTensor says so at each compile
warnings.filterwarnings("ignore", message="Numba will use object mode")

N, D, NOISE = 300, 8, 0.3
FREQUENCY = np.linspace(np.pi / 10, np.pi, D)
METHODS = ["ARD", "rsens", "kl", "var"]
PAPER = {
    "uniform": "ARD: about half the inputs near 0; KL, VAR: nonlinear inputs preferred, less",
    "normal": "KL, VAR: all eight nearly equal; ARD still prefers the nonlinear inputs",
}


def amplitudes(distribution):
    """A_j with Var[A_j sin(φ_j x_j)] = 1 (E[sin] = 0 for both symmetric inputs)."""
    if distribution == "uniform":
        second_moment = 0.5 - np.sin(2 * FREQUENCY) / (4 * FREQUENCY)
    else:
        second_moment = (1 - np.exp(-2 * (0.4 * FREQUENCY) ** 2)) / 2
    return 1 / np.sqrt(second_moment)


def generate(rng, distribution):
    if distribution == "uniform":
        x = rng.uniform(-1, 1, size=(N, D))
    else:
        x = rng.normal(0, 0.4, size=(N, D))
    y = (amplitudes(distribution) * np.sin(FREQUENCY * x)).sum(1) + rng.normal(0, NOISE, N)
    return x, y


def one_repetition(model, predictive, rng, distribution, methods=METHODS):
    x, y = generate(rng, distribution)
    idata = fit_map(model, x, y)
    out = pm_sens.sensitivity(
        idata,
        model,
        predictive=predictive,
        points={"X": x},
        method=methods[1:],
        kl_scheme="central",
        progressbar=False,
    )
    relevance = [1 / idata.posterior["ls"].values.ravel()]
    relevance += [pm_sens.importance(out, m).values for m in methods[1:]]
    relevance = np.array(relevance)
    return relevance / relevance.max(1, keepdims=True)


def run(repetitions, methods=METHODS, seed=2019):
    """Scaled relevance per distribution: (repetitions, methods, inputs).

    ``methods`` starts with ``"ARD"``; the others are pm_sens methods.
    """
    rng = np.random.default_rng(seed)
    model, predictive = ard_gp(N, D)
    return {
        distribution: np.array(
            [
                one_repetition(model, predictive, rng, distribution, methods)
                for _ in range(repetitions)
            ]
        )
        for distribution in ("uniform", "normal")
    }


def print_table(results):
    print("\nRelevance scaled to a maximum of 1 per repetition, mean and 95% interval")
    for distribution, relevance in results.items():
        print(f"\n{distribution} inputs; paper (Figure 2): {PAPER[distribution]}")
        mean, half = interval(relevance)
        ratios = relevance.max(2) / relevance.min(2)  # (repetitions, methods)
        ratio_mean, ratio_half = interval(ratios)
        print(f"{'method':6} {'input 1 (linear)':>18} {'input 8':>14} {'max/min':>16}")
        for k, method in enumerate(METHODS):
            print(
                f"{method:6} {mean[k, 0]:11.2f} ± {half[k, 0]:.2f} {mean[k, -1]:7.2f} ± "
                f"{half[k, -1]:.2f} {ratio_mean[k]:9.1f} ± {ratio_half[k]:.1f}"
            )


def save_figure(results):
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained", sharey=True)
    for ax, (distribution, relevance) in zip(axes, results.items(), strict=True):
        mean, half = interval(relevance)
        for k, method in enumerate(METHODS):
            ax.errorbar(
                np.arange(1, D + 1) + (k - 1.5) * 0.1,
                mean[k],
                yerr=half[k],
                fmt="o-",
                label="ARD (1/length-scale)" if method == "ARD" else method,
            )
        ax.set_title(f"{distribution} inputs")
        ax.set_xlabel("input (1: most linear, 8: most nonlinear)")
    axes[0].set_ylabel("relevance (max = 1)")
    axes[1].legend()
    save(fig, "paper002_sine_ard")


if __name__ == "__main__":
    command_line(run, print_table, save_figure, quick=3, full=200, name="gp_sine_ard")

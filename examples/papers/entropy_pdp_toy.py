"""
Paper 004, Section 4.2 and Figures 6-7: Entropy-PDP and Entropy-ICE on a hollow square.
=======================================================================================

Inputs lie in the square [−3, 3]² outside its interior (−1.5, 1.5)² (uniform
there; the paper shows its points but gives no distribution or ranges, this is
our reading), y = (x1 + x2)² + 0.1 ε, ε ~ N(0, 1). Each repetition draws 300
training and 200 test points, fits a GP regression (squared-exponential
kernel) at its MAP, and computes on the test points the entropy PDP and ICE
of each input over 61 grid values from −3 to 3. (With a single MAP draw the
whole predictive entropy is the "aleatoric" part: we report the total.)

The paper's claims (figures only): the PDP is high in the interior, where a
test point whose other input is also mid-range is out of the data, and again
toward the edges; the ICE curves split, high in the interior only where the
other input is mid-range; no test point's own entropy reaches the PDP's peak.
We report the PDP at 0, at the band (``|x| = 2.25``) and at the edges (``|x| = 3``),
the ICE at x = 0 for test points whose other input is inside / outside
(−1.5, 1.5), and the largest entropy at the test points themselves.

Run: .venv/bin/python examples/papers/entropy_pdp_toy.py [--quick]
    --quick: 1 repetition; full: 20 per GP, 158 s on 2 cores.
"""

import warnings

import matplotlib
import numpy as np
import pymc as pm
from _repetitions import command_line, fit_map, interval, save

import pm_sens

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# PyMC's GP graph has one step Numba runs in object mode; PyTensor says so at each compile
warnings.filterwarnings("ignore", message="Numba will use object mode")

N_TRAIN, N_TEST, EDGE, INNER = 300, 200, 3.0, 1.5
GRID = np.linspace(-EDGE, EDGE, 61)
NAMES = ["x1", "x2"]
LENGTH_SCALES = {"length-scale at the MAP": None, "length-scale fixed at 1": 1.0}


def hollow_square(rng, n):
    """n points uniform on [−3, 3]² outside (−1.5, 1.5)², by rejection."""
    points = np.empty((0, 2))
    while len(points) < n:
        x = rng.uniform(-EDGE, EDGE, size=(2 * n, 2))
        points = np.vstack([points, x[np.abs(x).max(1) > INNER]])
    return points[:n]


def generate(rng, n):
    x = hollow_square(rng, n)
    return x, (x[:, 0] + x[:, 1]) ** 2 + 0.1 * rng.normal(size=n)


def build_model(length_scale=None):
    """One GP model; each repetition sets its data (so the graphs compile once).
    ``length_scale``: fixed, or None for a prior (then fitted at the MAP)."""
    with pm.Model() as model:
        x = pm.Data("X_train", np.zeros((N_TRAIN, 2)))
        y = pm.Data("y_train", np.zeros(N_TRAIN))
        ls = pm.InverseGamma("ls", 3, 3) if length_scale is None else length_scale
        eta = pm.HalfNormal("eta", 20)
        sigma = pm.HalfNormal("sigma", 1)
        gp = pm.gp.Marginal(cov_func=eta**2 * pm.gp.cov.ExpQuad(2, ls=ls))
        gp.marginal_likelihood("y", X=x, y=y, sigma=sigma)
    return model, pm_sens.Predictive.from_gp(gp, feature_names=NAMES)


def one_repetition(model, predictive, rng):
    """Entropy PDP (2, grid), ICE (2, grid, N_TEST), test inputs (N_TEST, 2), and the
    entropy at the test points (N_TEST,)."""
    x, y = generate(rng, N_TRAIN)
    x_test, _ = generate(rng, N_TEST)
    idata = fit_map(model, x, y)
    out = pm_sens.partial_dependence(
        idata,
        model,
        predictive=predictive,
        points={"X": x_test},
        kind="entropy",
        grid={name: GRID for name in NAMES},
        progressbar=False,
    )
    result = out["partial_dependence"]
    pdp = result["entropy_pdp"].sel(component="total").values
    ice = result["entropy_ice"].sel(component="total").values
    # the entropy at each test point itself: x1's ICE on the grid of the points' own x1
    own = pm_sens.partial_dependence(
        idata,
        model,
        predictive=predictive,
        points={"X": x_test},
        kind="entropy",
        features="x1",
        grid={"x1": x_test[:, 0]},
        progressbar=False,
    )["partial_dependence"]["entropy_ice"].sel(component="total")
    return pdp, ice, x_test, np.diagonal(own.values[0])


def run(repetitions, seed=46):
    """Per GP (length-scale at the MAP, fixed at 1): per repetition (PDP, ICE, test
    inputs, entropy at the test points)."""
    out = {}
    for name, length_scale in LENGTH_SCALES.items():
        rng = np.random.default_rng(seed)  # the same data sets for both
        model, predictive = build_model(length_scale)
        out[name] = [one_repetition(model, predictive, rng) for _ in range(repetitions)]
    return out


PAPER = {
    "PDP at 0": "high (interior)",
    "PDP at |x| = 2.25": "low (inside the band)",
    "PDP at |x| = 3": "higher again (edge)",
    "ICE at 0, other inside": "high: out of the data",
    "ICE at 0, other outside": "low: in the data",
    "largest entropy at a test point": "below the PDP peak",
    "PDP peak": "",
}


def claims(results):
    """The quantities of `PAPER` per repetition (arrays (repetitions,)), averaged over
    the two inputs."""
    at = {x: np.abs(GRID - x).argmin() for x in (-EDGE, -2.25, 0.0, 2.25, EDGE)}
    out = {name: [] for name in PAPER}
    for pdp, ice, x_test, own in results:
        inside = [np.abs(x_test[:, 1 - j]) < INNER for j in range(2)]
        out["PDP at 0"].append(pdp[:, at[0.0]].mean())
        out["PDP at |x| = 2.25"].append(pdp[:, [at[-2.25], at[2.25]]].mean())
        out["PDP at |x| = 3"].append(pdp[:, [at[-EDGE], at[EDGE]]].mean())
        out["ICE at 0, other inside"].append(
            np.mean([ice[j, at[0.0], inside[j]].mean() for j in range(2)])
        )
        out["ICE at 0, other outside"].append(
            np.mean([ice[j, at[0.0], ~inside[j]].mean() for j in range(2)])
        )
        out["largest entropy at a test point"].append(own.max())
        out["PDP peak"].append(pdp.max())
    return {name: np.array(values) for name, values in out.items()}


def print_table(results):
    for gp, per_repetition in results.items():
        print(f"\nGP with {gp}")
        print(f"{'entropy (nats)':32} | {'paper (Figs. 6-7)':22} | pm_sens (95% interval)")
        for name, values in claims(per_repetition).items():
            mean, half = interval(values)
            print(f"{name:32} | {PAPER[name]:22} | {mean:6.3f} ± {half:.3f}")


def save_figure(results):
    fig, axes = plt.subplots(2, 3, figsize=(14, 7.2), layout="constrained")
    for row, (gp, per_repetition) in zip(axes, results.items(), strict=True):
        _draw_row(row, gp, *per_repetition[0][:3])
    save(fig, "paper004_entropy_pdp_toy")


def _draw_row(axes, gp, pdp, ice, x_test):
    x_train = hollow_square(np.random.default_rng(0), N_TRAIN)
    axes[0].scatter(*x_train.T, s=6, color="0.4")
    axes[0].add_patch(
        plt.Rectangle((-INNER, -INNER), 2 * INNER, 2 * INNER, fill=False, hatch="//")
    )
    axes[0].set_aspect("equal")
    axes[0].set(xlabel="x1", ylabel="x2", title=f"where the data are\n(GP: {gp})")
    norm = plt.Normalize(-EDGE, EDGE)
    shown = np.random.default_rng(1).choice(len(x_test), 40, replace=False)
    for j, ax in enumerate(axes[1:]):
        other = x_test[:, 1 - j]
        for i in shown:
            ax.plot(GRID, ice[j, :, i], color=plt.cm.coolwarm(norm(other[i])), lw=0.8)
        ax.plot(GRID, pdp[j], color="k", lw=2.5, label="PDP")
        for side in (-INNER, INNER):
            ax.axvline(side, color="k", ls=":", lw=1)
        ax.set(xlabel=NAMES[j], title=f"entropy ICE of {NAMES[j]}, colour: {NAMES[1 - j]}")
    axes[1].set_ylabel("predictive entropy (nats)")
    axes[2].legend()
    colours = plt.cm.ScalarMappable(norm, "coolwarm")
    axes[2].figure.colorbar(colours, ax=axes[2], label="value of the other input")


if __name__ == "__main__":
    command_line(run, print_table, save_figure, quick=1, full=20, name="entropy_pdp_toy")

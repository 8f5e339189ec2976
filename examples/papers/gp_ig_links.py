"""
Paper 003: Integrated Gradients of a latent GP's predictive mean through exp and probit.
========================================================================================

Four inputs x ~ U(−1, 1)⁴, f(x) = 1.2 x1 + sin(2 x2) − 0.6 x3² (x4
irrelevant); counts y ~ Poisson(exp(1 + f)) or binary y ~ Bernoulli(Φ(f)).
Each repetition draws 150 training points, fits a latent GP (squared-exponential
kernel with length-scale 1 and amplitude 1.5, exp or probit link) at its MAP
and attributes the predictive mean E[y | x] — exp(μ + σ²/2) and Φ(μ / sqrt(1 +
σ²)) for the latent f ~ N(μ, σ²), the quantities of the paper's Theorem 1 — at
100 test points to the inputs, from the baseline x = 0. (The kernel is fixed:
the joint MAP of f and its hyperparameters runs to short length-scales and
large amplitudes, interpolating every point; the paper fits a sparse
variational GP instead.)

The paper proves completeness for the exact IG mean (attributions sum to
``E[y|x] − E[y|0]``) and computes the path integral by a Riemann sum, whose gap
closes as the number of steps m grows; it reports no numbers in the text, so
the "paper" column states these claims. pm_sens integrates with Gauss–Legendre
nodes; we report the largest completeness gap over the points, relative to
the mean ``|E[y|x] − E[y|0]|``, for n nodes and, for comparison, for the paper's
right Riemann sum with m steps (computed with pm_sens: the k-th Riemann term
is the one-node IG of the segment centred on the k-th step), and the mean ``|IG|``
per input beside that of the true E[y|x] (exp(1 + f) or Φ(f), integrated by
quadrature).

Run: .venv/bin/python examples/papers/gp_ig_links.py [--quick]
    --quick: 1 repetition per link; full: 10, 57 s on 2 cores.
"""

import warnings

import matplotlib
import numpy as np
import pymc as pm
from _repetitions import command_line, interval, save
from scipy.stats import norm

import pm_sens

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# PyMC's GP graph has one step Numba runs in object mode; PyTensor says so at each compile
warnings.filterwarnings("ignore", message="Numba will use object mode")

N_TRAIN, N_TEST, D, AMPLITUDE = 150, 100, 4, 1.5
NAMES = [f"x{j + 1}" for j in range(D)]
LINKS = {"exp (Poisson)": ("poisson", "exp"), "probit (Bernoulli)": ("bernoulli", "probit")}
NODES = (2, 4, 8, 16, 32)
RIEMANN_STEPS = (4, 16, 64)


def latent(x):
    return 1.2 * x[..., 0] + np.sin(2 * x[..., 1]) - 0.6 * x[..., 2] ** 2


def latent_gradient(x):
    zero = np.zeros(x.shape[:-1])
    return np.stack([1.2 + zero, 2 * np.cos(2 * x[..., 1]), -1.2 * x[..., 2], zero], -1)


def true_attribution(points, likelihood):
    """IG of the true E[y|x] (exp(1 + f) or Φ(f)) from 0, by 64-node Gauss–Legendre."""
    t, w = np.polynomial.legendre.leggauss(64)
    t, w = (t + 1) / 2, w / 2
    path = t[:, None, None] * points  # (nodes, points, D)
    f = latent(path)
    slope = np.exp(1 + f) if likelihood == "poisson" else norm.pdf(f)
    return points * np.einsum("k,kp,kpd->pd", w, slope, latent_gradient(path))


def generate(rng, likelihood):
    x = rng.uniform(-1, 1, size=(N_TRAIN + N_TEST, D))
    f = latent(x)
    y = rng.poisson(np.exp(1 + f)) if likelihood == "poisson" else rng.binomial(1, norm.cdf(f))
    return x, y


def fit(x, y, likelihood, link):
    """A latent GP at its MAP and its predictive of y at new inputs."""
    with pm.Model() as model:
        # kernel fixed: the joint MAP of f and the hyperparameters runs to short
        # length-scales and large amplitudes, interpolating every point
        mean = pm.gp.mean.Constant(1.0 if likelihood == "poisson" else 0.0)
        gp = pm.gp.Latent(mean_func=mean, cov_func=AMPLITUDE**2 * pm.gp.cov.ExpQuad(D, ls=1.0))
        f = gp.prior("f", X=x)
        if likelihood == "poisson":
            pm.Poisson("y", mu=pm.math.exp(f), observed=y)
        else:
            pm.Bernoulli("y", p=pm.math.invprobit(f), observed=y)
        idata = pm.find_MAP(return_inferencedata=True, jitter=False, progressbar=False)
    predictive = pm_sens.Predictive.from_gp(
        gp, likelihood=likelihood, link=link, feature_names=NAMES
    )
    return model, idata, predictive


def integrated_gradients(fitted, x, baseline, n_steps):
    """(IG (points, D), value (points,), baseline value (points,)) at the MAP draw."""
    model, idata, predictive = fitted
    out = pm_sens.integrated_gradients(
        idata,
        model,
        predictive=predictive,
        points={"X": x},
        baseline={"X": baseline},
        n_steps=n_steps,
        progressbar=False,
    )["attribution"]
    first = {"chain": 0, "draw": 0}
    return (
        out["ig"].isel(first).values,
        out["value"].isel(first).values,
        out["baseline_value"].isel(first).values,
    )


def riemann(fitted, x, m):
    """The right Riemann sum with m steps from 0 to x, (points, D): term k is the
    one-node (midpoint) IG of the segment of length |x|/m centred on b + (k/m) x."""
    k = np.arange(1, m + 1)[:, None, None]
    half = x / (2 * m)
    centre = k / m * x  # (m, points, D)
    ig, _, _ = integrated_gradients(
        fitted, (centre + half).reshape(-1, D), (centre - half).reshape(-1, D), 1
    )
    return ig.reshape(m, len(x), D).sum(0)


def one_repetition(rng, likelihood, link):
    """Relative gaps (len(NODES) + len(RIEMANN_STEPS),), mean |IG| (D,) and that of
    the true E[y|x] (D,)."""
    x, y = generate(rng, likelihood)
    fitted = fit(x[:N_TRAIN], y[:N_TRAIN], likelihood, link)
    points = x[N_TRAIN:]
    zero = np.zeros_like(points)
    gaps = []
    for n in NODES:
        ig, value, base = integrated_gradients(fitted, points, zero, n)
        change = value - base
        gaps.append(np.abs(ig.sum(1) - change).max() / np.abs(change).mean())
    for m in RIEMANN_STEPS:
        total = riemann(fitted, points, m).sum(1)
        gaps.append(np.abs(total - change).max() / np.abs(change).mean())
    truth = np.abs(true_attribution(points, likelihood)).mean(0)
    return np.array(gaps), np.abs(ig).mean(0), truth


def run(repetitions, seed=3):
    """{link: (relative gaps (repetitions, steps), mean |IG| (repetitions, D), that of
    the true E[y|x] (repetitions, D))}."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, (likelihood, link) in LINKS.items():
        results = [one_repetition(rng, likelihood, link) for _ in range(repetitions)]
        out[name] = tuple(np.array(r) for r in zip(*results, strict=True))
    return out


def print_table(results):
    labels = [f"Gauss-Legendre, {n} nodes" for n in NODES]
    labels += [f"right Riemann, {m} steps" for m in RIEMANN_STEPS]
    for name, (gaps, attribution, truth) in results.items():
        print(f"\nIG of E[y|x] through {name}, 100 test points, baseline 0")
        print(f"{'largest |gap| / mean|F(x)-F(0)|':31} | {'paper':24} | pm_sens (95% interval)")
        for label, values in zip(labels, gaps.T, strict=True):
            paper = "closes as m grows" if "Riemann" in label else "0 (completeness)"
            mean, half = interval(values)
            print(f"{label:31} | {paper:24} | {mean:.1e} ± {half:.0e}")
        same = (np.argsort(attribution, 1) == np.argsort(truth, 1)).all(1)
        print(f"{'ranking as the true E[y|x]':31} | {'-':24} | in {same.mean():.2f} of data sets")
        for label, values in (("mean |IG|, fitted", attribution), ("mean |IG|, true", truth)):
            cells = ", ".join(f"{n} {m:.3f}" for n, m in zip(NAMES, values.mean(0), strict=True))
            print(f"{label:31} | {'-':24} | {cells}")


def save_figure(results):
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained", sharey=True)
    for ax, (name, (gaps, _, _)) in zip(axes, results.items(), strict=True):
        ax.loglog(NODES, gaps[:, : len(NODES)].mean(0), "o-", label="Gauss–Legendre (pm_sens)")
        ax.loglog(
            RIEMANN_STEPS, gaps[:, len(NODES) :].mean(0), "s--", label="right Riemann (paper)"
        )
        ticks = sorted({*NODES, *RIEMANN_STEPS})
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.minorticks_off()
        ax.set(title=f"IG of E[y|x], {name}", xlabel="nodes / steps along the path")
    axes[0].set_ylabel("largest |completeness gap| / mean |F(x) − F(0)|")
    axes[0].legend()
    save(fig, "paper003_ig_links")


if __name__ == "__main__":
    command_line(run, print_table, save_figure, quick=1, full=10, name="gp_ig_links")

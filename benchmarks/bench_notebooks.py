"""Models from public notebooks: a whole analysis against the fit (issue 36).

Run: .venv/bin/python benchmarks/bench_notebooks.py [model ...]

Each model is written as its notebook writes it (NumPy arrays, patsy bases,
``pm.gp``, ``pm.Truncated``), on generated data of the notebook's size. A child
process per model with an empty PyTensor and Numba cache runs ``pm.sample``
(2 chains × 400 tune + 400 draws, one core), then the whole analysis a new user
runs, each call with its defaults: first the README's (``sensitivity`` with
interactions, ``integrated_gradients``, ``permutation_importance``,
``partial_dependence``, ``summary``, ``plot_importance``, a saved
``plot_partial_dependence``), then ``sensitivity`` in moment and in draw mode.
Prints each call's time, the README's analysis ÷ the fit (target ≤ 1) and the
whole analysis ÷ the fit (targets: ≤ 1, and ≤ 0.5 with at most 10 inputs).
"""

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def marginal_gp(rng):
    """The marginal GP notebook on lidar-like data (221 ranges, 1 input)."""
    import pymc as pm

    import pm_sens

    x = np.sort(rng.uniform(390, 720, 221))
    noise = 0.03 + 0.12 * (x - 390) / 330
    y = -0.05 - 0.7 / (1 + np.exp(-(x - 600) / 20)) + rng.normal(0, noise)
    with pm.Model() as model:
        ls = pm.Gamma("ls", alpha=2, beta=0.02)
        eta = pm.HalfNormal("eta", 1)
        sigma = pm.HalfNormal("sigma", 0.5)
        gp = pm.gp.Marginal(cov_func=eta**2 * pm.gp.cov.ExpQuad(1, ls=ls))
        gp.marginal_likelihood("y", X=x[:, None], y=y, sigma=sigma)
    return model, {"predictive": pm_sens.Predictive.from_gp(gp)}


def patsy_spline(rng):
    """The splines notebook: cherry-blossom-like days of year on 17 B-spline columns."""
    import patsy
    import pymc as pm

    year = np.sort(rng.choice(np.arange(812, 2016), 827, replace=False)).astype(float)
    doy = 105 + 3 * np.sin(year / 150) + rng.normal(0, 6, year.size)
    knots = np.quantile(year, np.linspace(0, 1, 15))
    B = patsy.dmatrix(
        "bs(year, knots=iknots, degree=3, include_intercept=True) - 1",
        {"year": year, "iknots": knots[1:-1]},
    )
    with pm.Model(coords={"splines": np.arange(B.shape[1])}) as model:
        a = pm.Normal("a", 100, 5)
        w = pm.Normal("w", mu=0, sigma=3, dims="splines")
        mu = pm.Deterministic("mu", a + pm.math.dot(np.asarray(B, order="F"), w.T))
        sigma = pm.Exponential("sigma", 1)
        pm.Normal("D", mu=mu, sigma=sigma, observed=doy)
    return model, {}


def _ordinal_data(rng, n, link_noise):
    X = rng.normal(size=(n, 3))
    latent = X @ np.array([0.8, 0.5, -0.3]) + link_noise(n)
    cut = np.quantile(latent, [0.2, 0.45, 0.7, 0.9])
    return X, np.searchsorted(cut, latent)


def ordinal_logistic(rng):
    """The ordinal regression notebook: OrderedLogistic, 5 levels, 3 inputs, 500 rows."""
    import pymc as pm

    X, y = _ordinal_data(rng, 500, rng.logistic)
    with pm.Model(coords={"cuts": range(4), "features": ["x1", "x2", "x3"]}) as model:
        beta = pm.Normal("beta", 0, 1, dims="features")
        cutpoints = pm.Normal(
            "cutpoints",
            mu=np.linspace(-2, 2, 4),
            sigma=2,
            transform=pm.distributions.transforms.ordered,
            dims="cuts",
        )
        mu = pm.Deterministic("mu", pm.math.dot(X, beta))
        pm.OrderedLogistic("y", cutpoints=cutpoints, eta=mu, observed=y)
    return model, {}


def poisson_survival(rng):
    """The survival notebook in long format: a row per patient and interval at risk."""
    import pymc as pm

    patients, width, n_intervals = 44, 3, 76
    metastasized = rng.integers(0, 2, patients)
    time_ = np.minimum(rng.exponential(120 * np.exp(-0.8 * metastasized)), 227)
    died = (time_ < 227).astype(int)
    rows = [
        (i, j, min(time_[i] - j * width, width), int(died[i] and time_[i] < (j + 1) * width))
        for i in range(patients)
        for j in range(n_intervals)
        if time_[i] > j * width
    ]
    patient, interval, exposure, death = map(np.asarray, zip(*rows, strict=True))
    with pm.Model(coords={"intervals": range(n_intervals)}) as model:
        lambda0 = pm.Gamma("lambda0", 0.01, 0.01, dims="intervals")
        beta = pm.Normal("beta", 0, 10)
        mu = pm.Deterministic(
            "mu", exposure * lambda0[interval] * pm.math.exp(beta * metastasized[patient])
        )
        pm.Poisson("obs", mu, observed=death)
    return model, {}


def breast_cancer_logistic(rng):
    """A logistic regression on 30 standardized, correlated inputs (569 rows)."""
    import pymc as pm

    n, d = 569, 30
    factors = rng.normal(size=(n, 3))
    raw = factors @ rng.normal(size=(3, d)) + rng.normal(0, 0.7, (n, d))
    X = (raw - raw.mean(0)) / raw.std(0)
    y = rng.binomial(1, 1 / (1 + np.exp(-(X[:, :3] @ np.array([1.5, -1.0, 0.5])))))
    names = [f"f{j}" for j in range(d)]
    with pm.Model(coords={"features": names}) as model:
        alpha = pm.Normal("alpha", 0, 2)
        beta = pm.Normal("beta", 0, 1, dims="features")
        pm.Bernoulli("y", logit_p=alpha + pm.math.dot(X, beta), observed=y)
    return model, {}


def zero_truncated_poisson(rng):
    """A zero-truncated Poisson regression (pm.Truncated, the summation route), 250 rows."""
    import pymc as pm

    X = rng.normal(size=(250, 2))
    lam = np.exp(0.5 + X @ np.array([0.6, -0.4]))
    y = rng.poisson(lam)
    while (y == 0).any():
        y[y == 0] = rng.poisson(lam[y == 0])
    with pm.Model() as model:
        a = pm.Normal("a", 0, 1)
        b = pm.Normal("b", 0, 1, shape=2)
        mu = pm.math.exp(a + pm.math.dot(X, b))
        pm.Truncated("y", pm.Poisson.dist(mu=mu), lower=1, observed=y)
    return model, {}


def ordered_probit(rng):
    """An ordered probit: 4 levels, 3 inputs, 300 rows."""
    import pymc as pm

    X, y = _ordinal_data(rng, 300, rng.normal)
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 1, shape=3)
        cutpoints = pm.Normal(
            "cutpoints",
            mu=np.linspace(-1, 1, 3),
            sigma=2,
            transform=pm.distributions.transforms.ordered,
        )
        pm.OrderedProbit(
            "y", eta=pm.math.dot(X, beta), cutpoints=cutpoints, sigma=1, observed=np.minimum(y, 3)
        )
    return model, {}


def beta_binomial(rng):
    """A beta-binomial regression: 150 rows, 10-40 trials per row, 2 inputs."""
    import pymc as pm

    X = rng.normal(size=(150, 2))
    trials = rng.integers(10, 41, 150)
    p = 1 / (1 + np.exp(-(X @ np.array([0.7, -0.3]))))
    y = rng.binomial(trials, rng.beta(p * 20, (1 - p) * 20))
    with pm.Model() as model:
        X_ = pm.Data("X", X)
        n = pm.Data("trials", trials)
        b = pm.Normal("b", 0, 1, shape=2)
        kappa = pm.Gamma("kappa", 10, 0.5)
        mean = pm.math.invlogit(pm.math.dot(X_, b))
        pm.BetaBinomial("y", n=n, alpha=mean * kappa, beta=(1 - mean) * kappa, observed=y)
    return model, {}


def censored_weibull(rng):
    """A right-censored Weibull survival regression: 300 patients, 4 inputs, per-row limits."""
    import pymc as pm

    n = 300
    X = rng.normal(size=(n, 4))
    t = rng.weibull(1.5, n) * np.exp(1 + X @ np.array([0.5, -0.3, 0.2, 0.0]))
    limit = rng.uniform(1, 6, n)
    with pm.Model(coords={"features": ["age", "stage", "dose", "site"]}) as model:
        X_ = pm.Data("X", X, dims=("patient", "features"))
        k = pm.Gamma("k", 2, 1)
        b0 = pm.Normal("b0", 0, 2)
        b = pm.Normal("b", 0, 1, dims="features")
        pm.Censored(
            "time",
            pm.Weibull.dist(alpha=k, beta=pm.math.exp(b0 + X_ @ b)),
            lower=None,
            upper=np.where(t > limit, limit, np.inf),
            observed=np.minimum(t, limit),
        )
    return model, {}


def hurdle_lognormal(rng):
    """A hurdle log-normal spend model: 300 customers, 2 inputs on the zero, 2 on the spend."""
    import pymc as pm

    n = 300
    X = rng.normal(size=(n, 2))
    buys = rng.random(n) < 1 / (1 + np.exp(-(0.3 + X[:, 0])))
    spend = np.where(buys, rng.lognormal(1 + 0.5 * X[:, 1], 0.6), 0.0)
    with pm.Model() as model:
        X_ = pm.Data("X", X)
        g = pm.Normal("g", 0, 1, shape=2)
        b = pm.Normal("b", 0, 1, shape=2)
        sigma = pm.HalfNormal("sigma", 1)
        pm.HurdleLogNormal(
            "spend",
            psi=pm.math.invlogit(g[0] + g[1] * X_[:, 0]),
            mu=b[0] + b[1] * X_[:, 1],
            sigma=sigma,
            observed=spend,
        )
    return model, {}


def truncated_regression(rng):
    """The truncated-regression notebook's form: Normal truncated below and above, 200 rows."""
    import pymc as pm

    x = rng.uniform(0, 10, 1000)
    y = 2 * x + rng.normal(0, 2, 1000)
    keep = (y > 0) & (y < 15)
    x, y = x[keep][:200], y[keep][:200]
    with pm.Model() as model:
        slope = pm.Normal("slope", 0, 1)
        intercept = pm.Normal("intercept", 0, 1)
        sigma = pm.HalfNormal("sigma", 1)
        normal = pm.Normal.dist(mu=slope * x + intercept, sigma=sigma)
        pm.Truncated("obs", normal, lower=0, upper=15, observed=y)
    return model, {}


def exgaussian_rt(rng):
    """An ExGaussian reaction-time regression: 200 trials, 2 inputs on the Gaussian's mean."""
    import pymc as pm

    X = rng.normal(size=(200, 2))
    rt = 0.4 + X @ np.array([0.05, -0.03]) + rng.normal(0, 0.05, 200) + rng.exponential(0.2, 200)
    with pm.Model() as model:
        X_ = pm.Data("X", X)
        b0 = pm.Normal("b0", 0.4, 0.2)
        b = pm.Normal("b", 0, 0.1, shape=2)
        sigma = pm.HalfNormal("sigma", 0.1)
        nu = pm.HalfNormal("nu", 0.3)
        pm.ExGaussian("rt", mu=b0 + X_ @ b, sigma=sigma, nu=nu, observed=rt)
    return model, {}


def wald_regression(rng):
    """A Wald (inverse Gaussian) regression of positive times: 200 rows, 2 inputs."""
    import pymc as pm

    X = rng.normal(size=(200, 2))
    mean = np.exp(0.5 + X @ np.array([0.4, -0.2]))
    with pm.Model() as model:
        X_ = pm.Data("X", X)
        b0 = pm.Normal("b0", 0, 1)
        b = pm.Normal("b", 0, 1, shape=2)
        lam = pm.Gamma("lam", 2, 0.5)
        pm.Wald("y", mu=pm.math.exp(b0 + X_ @ b), lam=lam, observed=rng.wald(mean, 4.0))
    return model, {}


def normal_mixture_20(rng):
    """A 20-component Normal mixture regression: each component's mean shifts with x, 200 rows."""
    import pymc as pm

    n, k = 200, 20
    x = rng.normal(size=n)
    y = rng.normal(np.linspace(-5, 5, k)[rng.integers(0, k, n)] + 0.5 * x, 0.4)
    with pm.Model(coords={"component": range(k)}) as model:
        x_ = pm.Data("x", x)
        w = pm.Dirichlet("w", np.ones(k), dims="component")
        centres = pm.Normal(
            "centres",
            np.linspace(-5, 5, k),
            0.5,
            dims="component",
            transform=pm.distributions.transforms.ordered,
        )
        slope = pm.Normal("slope", 0, 1)
        sigma = pm.HalfNormal("sigma", 0.5)
        pm.NormalMixture("y", w=w, mu=centres + slope * x_[:, None], sigma=sigma, observed=y)
    return model, {}


MODELS = {
    f.__name__: f
    for f in (
        marginal_gp,
        patsy_spline,
        ordinal_logistic,
        poisson_survival,
        breast_cancer_logistic,
        zero_truncated_poisson,
        ordered_probit,
        beta_binomial,
        censored_weibull,
        hurdle_lognormal,
        truncated_regression,
        exgaussian_rt,
        wald_regression,
        normal_mixture_20,
    )
}


#: the README's first analysis, in its order: a new user's first calls
README_CALLS = (
    "sensitivity(interactions=True)",
    "integrated_gradients",
    "permutation_importance",
    "partial_dependence",
    "summary",
    "plot_importance",
    "plot_partial_dependence",
)


def analysis(idata, model, options, figure):
    """Every call of a whole analysis, by name: the README's first, then the other modes."""
    import pm_sens

    kw = {**options, "progressbar": False}
    return {
        "sensitivity(interactions=True)": lambda: pm_sens.sensitivity(
            idata, model, interactions=True, **kw
        ),
        "integrated_gradients": lambda: pm_sens.integrated_gradients(idata, model, **kw),
        "permutation_importance": lambda: pm_sens.permutation_importance(idata, model, **kw),
        "partial_dependence": lambda: pm_sens.partial_dependence(idata, model, **kw),
        "summary": lambda: (
            pm_sens.summary(idata),
            pm_sens.summary(idata, group="permutation_importance"),
        ),
        "plot_importance": lambda: pm_sens.plot_importance(idata),
        "plot_partial_dependence": lambda: pm_sens.plot_partial_dependence(idata).savefig(figure),
        "sensitivity": lambda: pm_sens.sensitivity(idata, model, **kw),
        "sensitivity(mode='draw')": lambda: pm_sens.sensitivity(idata, model, mode="draw", **kw),
    }


def child(name):
    """Fit one model, run the analysis; prints the times as JSON."""
    import matplotlib

    matplotlib.use("Agg")
    import pymc as pm

    model, options = MODELS[name](np.random.default_rng(0))
    start = time.perf_counter()
    with model:
        idata = pm.sample(draws=400, tune=400, chains=2, cores=1, random_seed=1, progressbar=False)
    times = {"pm.sample": time.perf_counter() - start}
    with tempfile.TemporaryDirectory() as folder:
        calls = analysis(idata, model, options, os.path.join(folder, "pdp.png"))
        for call_name, call in calls.items():
            start = time.perf_counter()
            call()
            times[call_name] = time.perf_counter() - start
    times["inputs"] = idata["sensitivity"].sizes["feature"]
    print(json.dumps(times))


def run_child(name):
    with tempfile.TemporaryDirectory() as cache:
        env = {
            **os.environ,
            "PYTENSOR_FLAGS": f"base_compiledir={cache}",
            "NUMBA_CACHE_DIR": cache,
        }
        out = subprocess.run(
            [sys.executable, __file__, "--child", name], capture_output=True, text=True, env=env
        )
    if out.returncode:
        return {"error": out.stderr.strip().splitlines()[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def report(name, times):
    if "error" in times:
        print(f"\n{name}: failed: {times['error']}")
        return
    fit, inputs = times.pop("pm.sample"), times.pop("inputs")
    total = sum(times.values())
    target = 0.5 if inputs <= 10 else 1.0
    print(f"\n{name} ({inputs} inputs): pm.sample {fit:.1f} s")
    for call_name, seconds in times.items():
        print(f"  {call_name:32s} {seconds:7.2f} s")
    first, label = sum(times[call_name] for call_name in README_CALLS), "README's first analysis"
    met = "met" if first / fit <= 1 else "NOT met"
    print(f"  {label:32s} {first:7.2f} s   ÷ fit {first / fit:.2f} (≤ 1: {met})")
    met = "met" if total / fit <= target else "NOT met"
    print(f"  {'whole analysis':32s} {total:7.2f} s   ÷ fit {total / fit:.2f} (≤ {target}: {met})")


def main(names):
    for name in names or MODELS:
        report(name, run_child(name))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2])
    else:
        main(sys.argv[1:])

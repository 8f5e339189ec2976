"""Every supported likelihood, per draw and moment-matched, against an independent
finite-difference KL computed with scipy: ``R-sens ≈ sqrt(KL(x‖x+h) + KL(x‖x−h)) / h``."""

import numpy as np
import pymc as pm
import pytest
from scipy import integrate, special, stats

import pm_sens
from tests.conftest import posterior
from tests.test_families import _beta, _gamma

X = np.array([-0.6, 0.1, 0.8])
B = np.array([0.7, -1.1])  # two posterior draws of the one coefficient
H = 1e-3


def _softmax(z):
    e = np.exp(z - z.max())
    return e / e.sum()


CASES = {
    "normal": (
        lambda x, b: pm.Normal.dist(mu=b * x, sigma=pm.math.exp(0.3 * x)),
        lambda x, b: stats.norm(b * x, np.exp(0.3 * x)),
    ),
    "studentt": (
        lambda x, b: pm.StudentT.dist(nu=4.0, mu=b * x, sigma=pm.math.exp(0.2 * x)),
        lambda x, b: stats.t(4.0, b * x, np.exp(0.2 * x)),
    ),
    "laplace": (
        lambda x, b: pm.Laplace.dist(mu=b * x, b=pm.math.exp(0.3 * x)),
        lambda x, b: stats.laplace(b * x, np.exp(0.3 * x)),
    ),
    "lognormal": (
        lambda x, b: pm.LogNormal.dist(mu=b * x, sigma=pm.math.exp(0.2 * x)),
        lambda x, b: stats.lognorm(s=np.exp(0.2 * x), scale=np.exp(b * x)),
    ),
    "gamma": (
        lambda x, b: pm.Gamma.dist(alpha=2 + x**2, beta=pm.math.exp(b * x)),
        lambda x, b: stats.gamma(2 + x**2, scale=np.exp(-b * x)),
    ),
    "exponential": (
        lambda x, b: pm.Exponential.dist(lam=pm.math.exp(b * x)),
        lambda x, b: stats.expon(scale=np.exp(-b * x)),
    ),
    "beta": (
        lambda x, b: pm.Beta.dist(alpha=pm.math.exp(b * x) + 1, beta=pm.math.exp(-0.5 * x) + 1),
        lambda x, b: stats.beta(np.exp(b * x) + 1, np.exp(-0.5 * x) + 1),
    ),
    "bernoulli": (
        lambda x, b: pm.Bernoulli.dist(logit_p=b * x),
        lambda x, b: stats.bernoulli(special.expit(b * x)),
    ),
    "binomial": (
        lambda x, b: pm.Binomial.dist(n=6, p=pm.math.sigmoid(b * x)),
        lambda x, b: stats.binom(6, special.expit(b * x)),
    ),
    "poisson": (
        lambda x, b: pm.Poisson.dist(mu=pm.math.exp(1 + b * x)),
        lambda x, b: stats.poisson(np.exp(1 + b * x)),
    ),
    "negative_binomial": (
        lambda x, b: pm.NegativeBinomial.dist(
            mu=pm.math.exp(1 + b * x), alpha=pm.math.exp(0.4 * x) + 1
        ),
        lambda x, b: stats.nbinom(
            np.exp(0.4 * x) + 1, (np.exp(0.4 * x) + 1) / (np.exp(0.4 * x) + 1 + np.exp(1 + b * x))
        ),
    ),
}


def _categorical_model(x, b):
    logits = pm.math.stack([b * x, -b * x, 0.5 * x], axis=-1)
    return pm.Categorical.dist(p=pm.math.softmax(logits, axis=-1))


def _model(name):
    build = _categorical_model if name == "categorical" else CASES[name][0]
    with pm.Model() as model:
        xd = pm.Data("x", X)
        b = pm.Normal("b")
        dist = build(xd, b)
        observed = pm.draw(build(X, 0.3), random_seed=1)
        model.register_rv(dist, "y", observed=observed)
    return model


def _kl(p, q):
    if hasattr(p, "pdf"):
        lo, hi = p.ppf(1e-12), p.ppf(1 - 1e-12)
        f = lambda y: p.pdf(y) * (p.logpdf(y) - q.logpdf(y))  # noqa: E731
        return integrate.quad(
            f, lo, hi, points=sorted({p.median(), q.median()}), epsabs=1e-15, epsrel=1e-10
        )[0]
    y = np.arange(int(p.ppf(1 - 1e-14)) + 1)
    pm_ = p.pmf(y)
    keep = pm_ > 0
    return np.sum(pm_[keep] * (p.logpmf(y[keep]) - q.logpmf(y[keep])))


def _fd_rsens(make, x, *args):
    kl = _kl(make(x, *args), make(x + H, *args)) + _kl(make(x, *args), make(x - H, *args))
    return np.sqrt(max(kl, 0)) / H


@pytest.mark.parametrize("name", [*CASES, "categorical"])
def test_per_draw_rsens_matches_finite_difference_kl(name):
    model = _model(name)
    idata = posterior({"b": B[None]})
    out = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)["sensitivity"]
    assert out.attrs["likelihood"] == name and out.attrs["fisher"] == "closed form"
    for s, b in enumerate(B):
        for i, x in enumerate(X):
            if name == "categorical":

                def make(xx, b=b):
                    p = _softmax(np.array([b * xx, -b * xx, 0.5 * xx]))
                    return stats.rv_discrete(values=(np.arange(3), p))

                expected = _fd_rsens(make, x)
            else:
                expected = _fd_rsens(lambda xx, b=b: CASES[name][1](xx, b), x)
            # the Laplace KL has a |δ|³ term (kink at the location): O(h) error
            rtol = 1e-3 if name == "laplace" else 2e-4
            np.testing.assert_allclose(out["rsens"].values[0, s, i, 0], expected, rtol=rtol)


MOMENT_MATCHED = {"gamma": _gamma, "beta": _beta, "lognormal": _gamma, "exponential": _gamma}


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
@pytest.mark.parametrize("name", list(MOMENT_MATCHED))
def test_moment_mode_matches_finite_difference_kl_of_the_matched_family(name):
    model = _model(name)
    out = pm_sens.sensitivity(posterior({"b": B[None]}), model, progressbar=False)["sensitivity"]

    def matched(xx):
        dists = [CASES[name][1](xx, b) for b in B]
        m = np.mean([d.mean() for d in dists])
        v = np.mean([d.var() for d in dists]) + np.var([d.mean() for d in dists])
        return MOMENT_MATCHED[name](np.array([m, v]))

    expected = [_fd_rsens(lambda xx: matched(xx), x) for x in X]
    np.testing.assert_allclose(out["rsens"].values[:, 0], expected, rtol=2e-4)


def test_categorical_and_binomial_moment_modes_use_the_mean_probabilities():
    """Mixtures of categoricals (binomials with fixed n) are categorical (binomial)
    with the averaged probabilities: R-sens² = Σ_k (∂p̄_k)²/p̄_k (times n)."""
    idata = posterior({"b": B[None]})
    out = pm_sens.sensitivity(idata, _model("categorical"), progressbar=False)["sensitivity"]
    z = np.stack([B[:, None] * X, -B[:, None] * X, 0.5 * np.broadcast_to(X, (2, 3))], -1)
    p = np.exp(z) / np.exp(z).sum(-1, keepdims=True)  # (S, N, K)
    dz = np.stack(
        [np.broadcast_to(B[:, None], (2, 3)), -B[:, None] + 0 * X, 0.5 + 0 * z[..., 0]], -1
    )
    dp = p * (dz - (p * dz).sum(-1, keepdims=True))
    expected = np.sqrt((dp.mean(0) ** 2 / p.mean(0)).sum(-1))
    np.testing.assert_allclose(out["rsens"].values[:, 0], expected, rtol=1e-10)

    out = pm_sens.sensitivity(idata, _model("binomial"), progressbar=False)["sensitivity"]
    p = special.expit(B[:, None] * X)
    dp = (p * (1 - p) * B[:, None]).mean(0)
    expected = np.sqrt(6 * dp**2 / (p.mean(0) * (1 - p.mean(0))))
    np.testing.assert_allclose(out["rsens"].values[:, 0], expected, rtol=1e-10)
    assert out.attrs["family"] == "binomial"


def test_feature_labels_with_several_containers(rng):
    with pm.Model(coords={"col": ["a", "b"]}) as model:
        xd = pm.Data("X", rng.normal(size=(5, 2)), dims=("obs", "col"))
        zd = pm.Data("z", rng.normal(size=5), dims="obs")
        b = pm.Normal("b", shape=3)
        pm.Normal("y", mu=xd @ b[:2] + b[2] * zd, sigma=1.0, observed=np.zeros(5), dims="obs")
    out = pm_sens.sensitivity(
        posterior({"b": rng.normal(size=(1, 4, 3))}), model, progressbar=False
    )
    assert list(out["sensitivity"]["feature"].values) == ["X[a]", "X[b]", "z"]
    assert out["sensitivity"]["rsens"].dims == ("obs", "feature")


def test_piecewise_hazard_survival_model_with_an_exposure_offset(rng):
    """The survival notebook's Poisson model in long format: one row per (patient,
    interval at risk), an exposure offset and the interval's baseline hazard read
    through an integer index. Per draw R-sens = |∂ log μ| sqrt(μ) (Poisson, log link)."""
    n, intervals = 40, 6
    met = rng.integers(0, 2, n).astype(float)
    log_exposure = np.log(rng.uniform(0.5, 3.0, n))
    interval = rng.integers(0, intervals, n)
    with pm.Model(coords={"intervals": range(intervals)}) as model:
        met_d = pm.Data("metastasized", met)
        offset = pm.Data("log_exposure", log_exposure)
        interval_d = pm.Data("interval", interval)
        lambda0 = pm.Gamma("lambda0", 0.01, 0.01, dims="intervals")
        beta = pm.Normal("beta", 0, sigma=10)
        mu = pm.math.exp(beta * met_d + offset) * lambda0[interval_d]
        pm.Poisson("obs", mu, observed=rng.poisson(0.3, n))
    draws = {"lambda0": rng.gamma(2, 0.1, size=(1, 3, intervals)), "beta": rng.normal(size=(1, 3))}
    idata = posterior(
        draws, dims={"lambda0": ["intervals"]}, coords={"intervals": range(intervals)}
    )
    out = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)["sensitivity"]
    assert list(out["feature"].values) == ["metastasized", "log_exposure", "interval"]
    b = draws["beta"][0][:, None]
    mu = np.exp(b * met + log_exposure) * draws["lambda0"][0][:, interval]
    np.testing.assert_allclose(out["rsens"].values[0, ..., 0], np.abs(b) * np.sqrt(mu), rtol=1e-10)
    np.testing.assert_allclose(out["rsens"].values[0, ..., 1], np.sqrt(mu), rtol=1e-10)
    # leave the offset out of the inputs; the interval index is a held per-point coordinate
    only = pm_sens.sensitivity(idata, model, inputs="metastasized", progressbar=False)
    assert list(only["sensitivity"]["feature"].values) == ["metastasized"]
    np.testing.assert_array_equal(only["sensitivity"]["interval"].values, interval)
    pfi = pm_sens.permutation_importance(idata, model, observed=np.zeros(n), progressbar=False)
    assert set(pfi["permutation_importance"]["feature"].values) == {
        "metastasized",
        "log_exposure",
        "interval",
    }


def test_a_wide_table_of_containers_and_a_cube(rng):
    """The survival notebook's wide form with pm.Data containers: its cells are the points,
    the containers keep their names (tests/test_wide_tables.py compares with long
    format); a three-dimensional table asks for long format."""
    with pm.Model() as model:
        met = pm.Data("metastasized", rng.integers(0, 2, 5).astype(float))
        exposure = pm.Data("exposure", rng.uniform(0.5, 1, (5, 3)))
        lambda0 = pm.Gamma("lambda0", 1, 1, shape=3)
        beta = pm.Normal("beta")
        mu = exposure * pm.math.exp(beta * met)[:, None] * lambda0[None, :]
        pm.Poisson("obs", mu, observed=np.zeros((5, 3), int))
    idata = posterior({"lambda0": np.ones((1, 2, 3)), "beta": np.zeros((1, 2))})
    out = pm_sens.sensitivity(idata, model, progressbar=False)["sensitivity"]
    assert list(out["feature"].values) == ["metastasized", "exposure", "obs_column"]
    assert out.sizes["cell"] == 15
    with pm.Model() as cube:
        lambda0 = pm.Gamma("lambda0", 1, 1, shape=3)
        pm.Poisson("obs", lambda0, observed=np.zeros((5, 2, 3), int))
    with pytest.raises(ValueError, match=r"'obs' has 3 dimensions.*long format"):
        pm_sens.sensitivity(idata, cube)


@pytest.mark.parametrize("selection", ["mask", "rows"])
def test_observations_picking_rows_of_the_data(rng, selection):
    """``mu[mask]`` with ``observed=y[mask]`` (or an integer array of rows): each
    observation's inputs are its row's, the group predictor read through the row's
    group index too. Per draw R-sens = |∂η/∂x| sqrt(μ) (Poisson, log link)."""
    n, groups = 30, 4
    x = rng.normal(size=(n, 2))
    group = rng.integers(0, groups, n)
    u = rng.normal(size=groups)
    keep = rng.random(n) > 0.3
    pick = keep if selection == "mask" else np.flatnonzero(keep)
    with pm.Model() as model:
        xd = pm.Data("X", x)
        gd = pm.Data("g", group)
        ud = pm.Data("u", u)
        b = pm.Normal("b", shape=2)
        c = pm.Normal("c")
        a = pm.Normal("a", shape=groups)
        mu = pm.math.exp(xd @ b + c * ud[gd] + a[gd])
        pm.Poisson("y", mu[pick], observed=rng.poisson(1.0, n)[pick])
    draws = {
        "b": rng.normal(size=(1, 2, 2)),
        "c": rng.normal(size=(1, 2)),
        "a": rng.normal(size=(1, 2, groups)),
    }
    idata = posterior(draws)
    out = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)["sensitivity"]
    assert list(out["feature"].values) == ["X[0]", "X[1]", "u", "g"]
    rows = np.flatnonzero(keep)
    np.testing.assert_array_equal(out["g"].values, group[rows])
    b, c, a = draws["b"][0], draws["c"][0], draws["a"][0]
    eta = x[rows] @ b.T + c * u[group[rows]][:, None] + a[:, group[rows]].T  # (obs, draw)
    root = np.sqrt(np.exp(eta)).T  # (draw, obs)
    expected = np.stack(
        [
            np.abs(b[:, 0])[:, None] * root,
            np.abs(b[:, 1])[:, None] * root,
            np.abs(c)[:, None] * root,
        ],
        -1,
    )
    np.testing.assert_allclose(out["rsens"].values[0][..., :3], expected, rtol=1e-10)
    # new points: the rows' own values and group index
    new = pm_sens.sensitivity(
        idata, model, mode="draw", points={"X": x[:3], "g": group[:3]}, progressbar=False
    )["sensitivity"]
    assert new["rsens"].shape == (1, 2, 3, 4)

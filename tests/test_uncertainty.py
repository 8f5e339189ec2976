"""Uncertainty attribution: entropies, permutation importance, PDP and ICE."""

import dataclasses
import os
import subprocess
import sys
import threading

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy import integrate, special, stats

import pm_sens
from pm_sens import families
from pm_sens.measures import _halves, _recurrence, entropy
from pm_sens.measures.entropy import EntropyAccumulator
from pm_sens.measures.mixture_density import MixtureLogDensity
from tests.conftest import posterior
from tests.test_families import beyond_a_bound_in_50_digits


def _with_observed(idata, name, y):
    idata["observed_data"] = xr.DataTree(xr.Dataset({name: ("obs", np.asarray(y))}))
    return idata


def test_discrete_mixture_entropy_against_brute_force(rng):
    rates = rng.gamma(3, 1, size=(40, 3))  # 40 draws, 3 rows
    acc = EntropyAccumulator(families.MOMENT_FAMILIES["poisson"], 3)
    for chunk in np.array_split(rates, 3):  # chunk-size independence
        acc.add(chunk[..., None])
    y = np.arange(200)
    pmf = stats.poisson.pmf(y[None, None, :], rates[..., None])  # (S, R, Y)
    mixture = pmf.mean(0)
    np.testing.assert_allclose(acc.mixture_entropy(), -special.xlogy(mixture, mixture).sum(-1))
    aleatoric = -special.xlogy(pmf, pmf).sum(-1).mean(0)
    np.testing.assert_allclose(acc.aleatoric(), aleatoric)
    assert np.all(acc.mixture_entropy() >= acc.aleatoric())  # mutual information >= 0


@pytest.mark.parametrize(
    ("family", "phi", "pmf"),
    [
        (
            families.MOMENT_FAMILIES["poisson"],
            lambda r: r[..., None],
            lambda r: stats.poisson(r).pmf,
        ),
        (
            families.NEGATIVE_BINOMIAL_MEAN_ALPHA,
            lambda r: np.stack([r, np.full_like(r, 50.0)], -1),
            lambda r: stats.nbinom(50.0, 50.0 / (50.0 + r)).pmf,
        ),
        (
            families.ZERO_INFLATED_POISSON,
            lambda r: np.stack([np.full_like(r, 0.7), r], -1),
            lambda r: (
                lambda y: _zero_modified_pmf(
                    stats.poisson(r).pmf(y), np.full(r.shape[:-1], 0.7), False
                )
            ),
        ),
        (
            families.HURDLE_NEGATIVE_BINOMIAL,
            lambda r: np.stack([np.full_like(r, 0.6), r, np.full_like(r, 4.0)], -1),
            lambda r: (
                lambda y: _zero_modified_pmf(
                    stats.nbinom(4.0, 4.0 / (4.0 + r)).pmf(y), np.full(r.shape[:-1], 0.6), True
                )
            ),
        ),
    ],
    ids=["poisson", "negative_binomial", "zero_inflated_poisson", "hurdle_negative_binomial"],
)
def test_support_windows_per_row_give_the_brute_force_entropies(rng, family, phi, pmf):
    """Rows of very different rates, each summed over its own window, equal sums over
    one common support 0..Y."""
    scale = np.array([0.05, 1.0, 30.0, 400.0, 5.0, 2000.0])
    rates = scale * rng.uniform(0.8, 1.25, size=(30, len(scale)))
    params = phi(rates)
    window = family.support_window(params.min(0), params.max(0), EntropyAccumulator.TAIL)
    acc = EntropyAccumulator(family, len(scale), window=window)
    for chunk in np.array_split(params, 3):
        acc.add(chunk)
    # the windows are each row's own: they leave out the bottom of large rates (but
    # not the zero of a zero-modified law) and the top of small ones
    assert (window[0] > 0).any() != (family.parameters[0] == "psi")
    assert window[1].min() < window[1].max() / 100
    assert len(acc.pmf_sum) == (window[1] - window[0] + 1).sum()
    y = np.arange(20_000)
    probabilities = pmf(rates[..., None])(y)
    mixture = probabilities.mean(0)
    np.testing.assert_allclose(
        acc.mixture_entropy(), -special.xlogy(mixture, mixture).sum(-1), rtol=1e-9
    )
    np.testing.assert_allclose(
        acc.aleatoric(), -special.xlogy(probabilities, probabilities).sum(-1).mean(0), rtol=1e-9
    )


def test_bernoulli_mixture_entropy_is_the_mean_probability_entropy(rng):
    p = rng.uniform(0.1, 0.9, size=(30, 4))
    acc = EntropyAccumulator(families.MOMENT_FAMILIES["bernoulli"], 4)
    acc.add(p[..., None])
    np.testing.assert_allclose(acc.mixture_entropy(), stats.bernoulli(p.mean(0)).entropy())
    np.testing.assert_allclose(acc.aleatoric(), stats.bernoulli(p).entropy().mean(0))


@pytest.mark.parametrize(
    ("family", "phi", "pmf"),
    [
        (
            families.BERNOULLI_LOGIT,
            lambda r: np.log(r)[..., None],
            lambda r, n: stats.bernoulli(r / (1 + r)),
        ),
        (
            families.MOMENT_FAMILIES["categorical"],
            lambda r: np.stack([r, 1 + 0 * r, 2 / r], -1) / (r + 1 + 2 / r)[..., None],
            lambda r, n: None,
        ),
        (
            families.BETA_BINOMIAL,
            lambda r: np.stack([r, 3 + 0 * r], -1),
            lambda r, n: stats.betabinom(n, r, 3),
        ),
    ],
    ids=["bernoulli_logit", "categorical", "beta_binomial"],
)
def test_pmf_tables_in_blocks_of_rows_and_draws_give_the_brute_force_sums(
    rng, monkeypatch, family, phi, pmf
):
    """Tables built a few rows and draws at a time (`_TABLE_CELLS`: 5 of 11 rows × 2
    counts, then blocks sized by the counts the first one found, at least 3 rows ×
    draws: `_TABLE_LEAST`), rows of 0 to 19
    trials: the mixture and aleatoric entropies and each draw's mean from the table
    equal sums of the pmf over the whole support."""
    monkeypatch.setattr(entropy, "_TABLE_CELLS", 10)
    monkeypatch.setattr(entropy, "_TABLE_LEAST", 3)
    rates = rng.uniform(0.2, 5, size=(7, 11))
    trials = np.broadcast_to(np.arange(0, 20, 2)[np.arange(11) % 10], rates.shape)
    fixed = {"n": trials} if family is families.BETA_BINOMIAL else {}
    acc = EntropyAccumulator(family, 11, table_mean=True)
    means = np.concatenate([acc.add(chunk, **fixed) for chunk in np.array_split(phi(rates), 2)])
    y = np.arange(25)
    if family is families.MOMENT_FAMILIES["categorical"]:
        probabilities = np.pad(phi(rates), ((0, 0), (0, 0), (0, len(y) - 3)))
    else:
        probabilities = pmf(rates[..., None], trials[..., None]).pmf(y)
    mixture = probabilities.mean(0)
    np.testing.assert_allclose(acc.mixture_entropy(), special.entr(mixture).sum(-1), rtol=1e-12)
    np.testing.assert_allclose(acc.aleatoric(), special.entr(probabilities).sum(-1).mean(0))
    np.testing.assert_allclose(means, (probabilities * y).sum(-1), rtol=1e-12)


def test_mixture_log_density_is_logsumexp_over_draws(rng):
    logp = rng.normal(size=(50, 6)) - 3
    acc = MixtureLogDensity(6)
    for chunk in np.array_split(logp, 4):
        acc.add(chunk)
    np.testing.assert_allclose(acc.value(), np.log(np.exp(logp).mean(0)))


@pytest.fixture
def linear(rng):
    n = 400
    x = rng.normal(size=(n, 3))
    with pm.Model(coords={"obs": range(n), "col": ["a", "b", "unused"]}) as model:
        xd = pm.Data("X", x, dims=("obs", "col"))
        b = pm.Normal("b", shape=2)
        pm.Normal("y", mu=xd[:, 0] * b[0] + xd[:, 1] * b[1], sigma=1.0, observed=x[:, 0])
    beta = rng.multivariate_normal([1.0, 0.5], [[0.02, -0.01], [-0.01, 0.02]], size=(2, 100))
    y = x[:, 0] + 0.5 * x[:, 1] + rng.normal(size=n)
    return model, _with_observed(posterior({"b": beta}), "y", y), x, beta.reshape(-1, 2)


def test_pfi_is_zero_for_an_unused_feature_and_reproducible(linear):
    model, idata, _, _ = linear
    out = pm_sens.permutation_importance(idata, model, random_seed=3, progressbar=False)
    pfi = out["permutation_importance"]
    assert pfi["entropy_pfi"].dims == ("repeat", "feature", "component")
    assert pfi["likelihood_pfi"].dims == ("repeat", "feature")
    assert np.all(pfi["entropy_pfi"].sel(feature="unused").values == 0)
    assert np.all(pfi["likelihood_pfi"].sel(feature="unused").values == 0)
    assert pfi["likelihood_pfi"].sel(feature="a").mean() > 0.5  # the strong feature
    again = pm_sens.permutation_importance(
        idata, model, random_seed=3, progressbar=False, extend_inferencedata=False
    )["permutation_importance"]
    xr.testing.assert_identical(again.to_dataset(), pfi.to_dataset())
    # sigma is 1 in every draw: permuting changes no per-draw entropy (the total's
    # brute-force check is tests/zoo/test_zoo_brute_force.py)
    aleatoric = pfi["entropy_pfi"].sel(component="aleatoric").values
    np.testing.assert_allclose(aleatoric, 0.0, atol=1e-14)


def test_entropy_pfi_of_an_independent_input_is_near_zero(linear):
    """004 Prop. 1: independent inputs leave the expected entropy unchanged; the
    correlated pair below does not."""
    model, idata, x, _ = linear
    n = len(x)
    rng = np.random.default_rng(5)
    z = rng.normal(size=n)
    points = {"X": np.column_stack([z, 0.9 * z + 0.3 * rng.normal(size=n), rng.normal(size=n)])}
    out = pm_sens.permutation_importance(
        idata,
        model,
        points=points,
        kind="entropy",
        n_repeats=10,
        random_seed=1,
        progressbar=False,
    )["permutation_importance"]
    epistemic = out["entropy_pfi"].sel(component="epistemic").mean("repeat")
    assert epistemic.sel(feature="a") > 0  # breaking a correlation raises uncertainty
    independent = (
        pm_sens.permutation_importance(
            idata, model, kind="entropy", n_repeats=10, random_seed=1, progressbar=False
        )["permutation_importance"]["entropy_pfi"]
        .sel(component="total")
        .mean("repeat")
    )
    assert abs(float(independent.sel(feature="a"))) < 0.1 * float(epistemic.sel(feature="a"))


def test_feature_groups_permute_together(linear):
    model, idata, _, _ = linear
    out = pm_sens.permutation_importance(
        idata, model, features=[["a", "b"], "unused"], random_seed=0, progressbar=False
    )["permutation_importance"]
    assert list(out["feature"].values) == ["a+b", "unused"]
    with pytest.raises(ValueError, match=r"\['zz'\] not among the features"):
        pm_sens.permutation_importance(idata, model, features=["zz"])


def test_linear_pdp_per_draw_and_ice_are_lines(linear):
    model, idata, x, beta = linear
    out = pm_sens.partial_dependence(
        idata,
        model,
        kind=("mean", "entropy", "log_likelihood"),
        grid_resolution=7,
        progressbar=False,
    )["partial_dependence"]
    assert out["mean_pdp"].dims == ("chain", "draw", "feature", "grid")
    assert out["entropy_ice"].dims == ("feature", "grid", "obs", "component")
    grid = out["grid_value"].sel(feature="a").values
    # per draw, the mean over the points of the linear predictor with column a at g
    at_grid = x[None, :, 0] * 0 + grid[:, None]  # (grid, obs)
    pdp = beta[:, None, 0] * at_grid.mean(1) + beta[:, None, 1] * x[:, 1].mean()  # (S, grid)
    np.testing.assert_allclose(
        out["mean_pdp"].sel(feature="a").values.reshape(pdp.shape), pdp, rtol=1e-12
    )
    np.testing.assert_allclose(grid, np.unique(np.quantile(x[:, 0], np.linspace(0.05, 0.95, 7))))
    ice = out["mean_ice"].sel(feature="a").values  # (grid, obs)
    slopes = np.diff(ice, axis=0) / np.diff(grid)[:, None]
    np.testing.assert_allclose(slopes, beta[:, 0].mean(), rtol=1e-10)
    # the unused feature changes nothing
    flat = out["mean_ice"].sel(feature="unused").values
    np.testing.assert_allclose(flat, np.broadcast_to(flat[:1], flat.shape))


def test_pdp_mean_and_entropy_from_one_evaluation_equal_closed_forms(linear):
    """The mean and the mixture moments of the entropy come from one evaluation of the
    predictive: they equal the mean's own graph and, per row, the moment-matched
    Normal's entropy ½ log(2πe (1 + Var_s μ_s)) (σ = 1), computed here in NumPy."""
    model, idata, x, beta = linear
    # a memory limit that makes chunks of 13 draws, whose moments merge
    options = dict(features=["a"], grid_resolution=5, progressbar=False, memory_limit=1e7)
    options["extend_inferencedata"] = False
    both = pm_sens.partial_dependence(idata, model, kind=("mean", "entropy"), **options)
    alone = pm_sens.partial_dependence(idata, model, kind="mean", **options)
    both, alone = both["partial_dependence"], alone["partial_dependence"]
    np.testing.assert_allclose(both["mean_pdp"].values, alone["mean_pdp"].values, rtol=1e-13)
    np.testing.assert_allclose(both["mean_ice"].values, alone["mean_ice"].values, rtol=1e-13)
    grid = both["grid_value"].sel(feature="a").values
    mu = grid[:, None, None] * beta[:, 0][:, None] + x[:, 1] * beta[:, 1][:, None]  # (K, S, N)
    total = 0.5 * np.log(2 * np.pi * np.e * (1 + mu.var(1)))
    aleatoric = 0.5 * np.log(2 * np.pi * np.e)
    ice = both["entropy_ice"].sel(feature="a")
    np.testing.assert_allclose(ice.sel(component="total").values, total, rtol=1e-12)
    np.testing.assert_allclose(ice.sel(component="aleatoric").values, aleatoric, rtol=1e-12)


def _categories(eta, cutpoints):
    """Ordered-logistic class probabilities (S, N, K) at linear predictors (S, N)."""
    cdf = special.expit(cutpoints[:, None, :] - eta[..., None])
    ones = np.ones(eta.shape + (1,))
    return np.diff(np.concatenate([0 * ones, cdf, ones], -1), axis=-1)


@pytest.mark.parametrize("likelihood", ["bernoulli", "ordered_logistic"])
def test_pdp_mean_from_the_entropys_tables_equals_the_closed_form(rng, likelihood):
    """With the entropy, a Bernoulli's or a categorical's per-draw mean comes from
    the pmf tables the entropy sums (p; Σ k p_k) instead of a mean computed in the
    graph: both equal the closed form σ(η) or Σ k p_k at every grid value, per
    draw, and the mean asked alone."""
    n, s = 30, 24
    x = rng.normal(size=(n, 2))
    beta = rng.normal(size=(1, s, 2))
    cutpoints = np.sort(rng.normal(size=(1, s, 3)), -1)
    with pm.Model(coords={"obs": range(n), "col": ["a", "b"]}) as model:
        xd = pm.Data("X", x, dims=("obs", "col"))
        b = pm.Normal("b", dims="col")
        eta = pm.math.dot(xd, b)
        if likelihood == "bernoulli":
            pm.Bernoulli("y", logit_p=eta, observed=np.zeros(n), dims="obs")
            draws = {"b": beta}
        else:
            c = pm.Normal("c", shape=3, transform=pm.distributions.transforms.ordered)
            pm.OrderedLogistic("y", eta=eta, cutpoints=c, observed=np.zeros(n), dims="obs")
            draws = {"b": beta, "c": cutpoints}
    options = dict(features=["a"], grid={"a": [-1.0, 0.5]}, progressbar=False)
    options["extend_inferencedata"] = False
    idata = posterior(draws, dims={"b": ["col"]}, coords={"col": ["a", "b"]})
    both = pm_sens.partial_dependence(idata, model, kind=("mean", "entropy"), **options)
    alone = pm_sens.partial_dependence(idata, model, kind="mean", **options)
    both, alone = both["partial_dependence"], alone["partial_dependence"]
    b = beta[0]
    etas = [v * b[:, :1] + x[:, 1] * b[:, 1:] for v in (-1.0, 0.5)]  # (S, N) per grid value
    if likelihood == "bernoulli":
        means = [special.expit(e) for e in etas]
    else:
        means = [(_categories(e, cutpoints[0]) * np.arange(4)).sum(-1) for e in etas]
    expected = np.stack([m.mean(1) for m in means], -1)  # (S, K): each draw's mean over points
    for result in (both, alone):
        pdp = result["mean_pdp"].sel(feature="a").values.reshape(s, -1)
        np.testing.assert_allclose(pdp, expected, rtol=1e-12)
    np.testing.assert_allclose(both["mean_ice"].values, alone["mean_ice"].values, rtol=1e-12)


class _Censored:
    """A SciPy law censored at bounds l < u: its entropy by quadrature.

    ``−F(l) log F(l) − S(u) log S(u) + ∫_l^u −p log p``, each law of an array of them;
    an infinite u is cut where every law's survival is below 1e-18.
    """

    def __init__(self, law, lower, upper):
        self.law, self.lower, self.upper = law, lower, upper

    def entropy(self):
        masses = special.entr(self.law.cdf(self.lower)) + special.entr(self.law.sf(self.upper))
        stop = self.upper if np.isfinite(self.upper) else np.max(self.law.isf(1e-18))
        inner, _ = integrate.quad_vec(
            lambda y: special.entr(self.law.pdf(y)),
            self.lower,
            stop,
            epsabs=1e-14,
            epsrel=1e-13,
        )
        return masses + inner

    def median(self):
        return np.clip(self.law.median(), self.lower, self.upper)


_SCALE_LINKED = {
    # likelihood(location, log scale) -> the PyMC RV, and scipy's law at the same values
    "normal": (
        lambda m, t: pm.Normal("y", mu=m, sigma=pm.math.exp(t), observed=np.zeros(4)),
        lambda m, t: stats.norm(m, np.exp(t)),
    ),
    "laplace": (
        lambda m, t: pm.Laplace("y", mu=m, b=pm.math.exp(t), observed=np.zeros(4)),
        lambda m, t: stats.laplace(m, np.exp(t)),
    ),
    "lognormal": (
        lambda m, t: pm.LogNormal("y", mu=m, sigma=pm.math.exp(t), observed=np.ones(4)),
        lambda m, t: stats.lognorm(np.exp(t), scale=np.exp(m)),
    ),
    "exponential": (
        lambda m, t: pm.Exponential("y", lam=pm.math.exp(-t), observed=np.ones(4)),
        lambda m, t: stats.expon(scale=np.exp(t) + 0 * m),  # one law per (draw, point)
    ),
    # a shape that moves with the location: the entropy's digamma terms per row
    "studentt": (
        lambda m, t: pm.StudentT(
            "y", nu=pm.math.exp(m) + 1, mu=m, sigma=pm.math.exp(t), observed=np.zeros(4)
        ),
        lambda m, t: stats.t(np.exp(m) + 1, m, np.exp(t)),
    ),
    "gamma": (
        lambda m, t: pm.Gamma(
            "y", alpha=pm.math.exp(m) + 0.5, beta=pm.math.exp(-t), observed=np.ones(4)
        ),
        lambda m, t: stats.gamma(np.exp(m) + 0.5, scale=np.exp(t)),
    ),
    # a number PyMC keeps as a float32 constant: ψ(2) in float64 all the same
    "gamma_constant_shape": (
        lambda m, t: pm.Gamma("y", alpha=2.0, beta=pm.math.exp(-t - m), observed=np.ones(4)),
        lambda m, t: stats.gamma(2.0, scale=np.exp(t + m)),
    ),
    "beta": (
        lambda m, t: pm.Beta(
            "y", alpha=pm.math.exp(m) + 0.5, beta=pm.math.exp(t) + 0.5, observed=np.full(4, 0.4)
        ),
        lambda m, t: stats.beta(np.exp(m) + 0.5, np.exp(t) + 0.5),
    ),
    # log Z and the second moment from the standardized bounds
    "truncated_normal": (
        lambda m, t: pm.TruncatedNormal(
            "y", mu=m, sigma=pm.math.exp(t), lower=-1.0, upper=2.0, observed=np.zeros(4)
        ),
        lambda m, t: stats.truncnorm((-1 - m) / np.exp(t), (2 - m) / np.exp(t), m, np.exp(t)),
    ),
    # E[log y] by the exponential integral E₁ (`pm_sens.graph.compile.special`)
    "wald": (
        lambda m, t: pm.Wald("y", mu=pm.math.exp(m), lam=pm.math.exp(-t), observed=np.ones(4)),
        lambda m, t: stats.invgauss(np.exp(m + t), scale=np.exp(-t)),
    ),
}


@pytest.mark.parametrize("name", list(_SCALE_LINKED))
def test_entropies_computed_in_the_graph_equal_scipys(rng, monkeypatch, name):
    """Where the likelihood's entropy is a log of its scale (plus digamma terms of a
    shape), the per-draw entropies come from the graph (log exp(η) is η there),
    without the parameters: the
    aleatoric entropy is scipy's entropy averaged over the draws, and the
    permutation importance and the mean agree with those computed from the
    parameters (the log-likelihood kind needs them: both ways in one call)."""
    build, law = _SCALE_LINKED[name]
    x = rng.normal(size=(4, 2))
    with pm.Model(coords={"obs": range(4), "col": ["loc", "scale"]}) as model:
        xd = pm.Data("X", x, dims=("obs", "col"))
        b = pm.Normal("b", shape=2)
        build(0.3 * xd[:, 0] * b[0], 0.2 * xd[:, 1] * b[1])
    beta = rng.normal(size=(2, 40, 2))
    idata = posterior({"b": beta})
    values = [-1.5, 0.0, 2.0]
    options = dict(features=["scale"], grid={"scale": values}, progressbar=False)
    kinds = dict(n_repeats=2, random_seed=0, progressbar=False, extend_inferencedata=False)
    with monkeypatch.context() as patch:
        patch.setattr(EntropyAccumulator, "add", None)  # entropies from the parameters
        out = pm_sens.partial_dependence(idata, model, kind="entropy", **options)
        alone = pm_sens.permutation_importance(idata, model, kind="entropy", **kinds)
    ice = out["partial_dependence"]["entropy_ice"].sel(feature="scale", component="aleatoric")
    b = beta.reshape(-1, 2)
    location = 0.3 * x[:, 0] * b[:, :1]  # (S, N)
    expected = [law(location, 0.2 * v * b[:, 1:]).entropy().mean(0) for v in values]  # (K, N)
    np.testing.assert_allclose(ice.values[: len(values)], expected, rtol=1e-12)
    y = law(location[0], 0.0).median()  # any values in the support
    both = pm_sens.permutation_importance(
        idata, model, kind=("entropy", "likelihood"), observed=y, **kinds
    )
    np.testing.assert_allclose(
        alone["permutation_importance"]["entropy_pfi"].values,
        both["permutation_importance"]["entropy_pfi"].values,
        rtol=1e-12,
        atol=1e-15,
    )


@pytest.mark.parametrize(("lower", "upper"), [(0.0, np.inf), (0.0, 300.0), (-np.inf, 0.0)])
def test_a_truncated_normals_moments_far_beyond_a_bound_keep_their_precision(lower, upper):
    """The truncated Normal's mean, variance and entropy in the graph, at locations from
    half a scale to 40 scales beyond a bound (the other infinite or far), against the
    standard normal's beyond a bound in 50-digit arithmetic: 1e-13 relative (the
    variance, near σ²/z², took a difference of terms near z²: 3e-7 at 40 scales)."""
    import pytensor
    import pytensor.tensor as pt

    from pm_sens.graph.likelihoods import truncated_normal

    sigma = 0.7
    distance = np.array([0.5, 2.0, 3.0, 3.99, 4.0, 6.0, 10.0, 20.0, 40.0])
    side = 1.0 if lower == 0.0 else -1.0  # the law lies above the location, or below
    mu = pt.vector("mu")
    bounds = (pt.constant(sigma), pt.constant(lower), pt.constant(upper))
    mean, variance = truncated_normal.moments(mu, *bounds)
    entropy = truncated_normal.entropy(mu, *bounds)
    location = -side * sigma * distance
    got = pytensor.function([mu], [mean, variance, entropy])(location)
    t, v, _, _, h = np.array([beyond_a_bound_in_50_digits(z) for z in distance]).T
    expected = [location + side * sigma * t, sigma**2 * v, h + np.log(sigma)]
    for name, value, want in zip(("mean", "variance", "entropy"), got, expected, strict=True):
        np.testing.assert_allclose(value, want, rtol=1e-13, err_msg=name)


@pytest.mark.parametrize(
    ("base", "lower", "upper"),
    [
        ("normal", -1.0, 2.0),
        ("normal", None, 2.0),
        ("normal", -1.0, None),
        ("weibull", None, 3.0),
        ("weibull", 0.3, 3.0),
        ("weibull", 0.3, None),
        ("weibull", None, None),
    ],
)
def test_a_censored_laws_entropy_in_a_graph_is_quadratures(base, lower, upper, rng):
    """The censored Normal's and Weibull's entropies as the JAX backend computes them in
    the graph (the masses' terms and the partial moments; the Weibull's by Ein's series
    below 2 and E₁ above), at locations far from the bounds, Weibull shapes from 0.3 to
    6 and scales putting the bounds on both sides of 2: quadrature's entropy where the
    density is smooth at 0 (shapes from 2), and the family's (the CPU backend's, which takes
    it from the parameters) to 1e-13 at every shape."""
    import pytensor

    from pm_sens.graph.likelihoods.on_a_base import censored_likelihood

    if base == "normal":
        phi = np.stack([rng.uniform(-12, 12, size=60), rng.uniform(0.05, 3, size=60)], -1)
        family, dist = families.CENSORED_NORMAL, pm.Normal.dist

        def law(phi):
            return stats.norm(*phi.T)

    else:
        phi = np.stack([rng.uniform(0.3, 6, size=60), np.exp(rng.uniform(-1, 3, size=60))], -1)
        family, dist = families.CENSORED_WEIBULL, pm.Weibull.dist

        def law(phi):
            return stats.weibull_min(phi[:, 0], scale=phi[:, 1])

    with pm.Model():
        first, second = pm.Data("first", phi[:, 0]), pm.Data("second", phi[:, 1])
        y = pm.Censored("y", dist(first, second), lower=lower, upper=upper, observed=np.ones(60))
    likelihood, params = censored_likelihood(y)
    assert not likelihood.entropy_on_cpu
    got = pytensor.function([], likelihood.entropy(*params))()
    bounds = (-np.inf if lower is None else lower, np.inf if upper is None else upper)
    # quadrature where the density is smooth at 0 (a Weibull's shape from 2)
    finite = phi[:, 0] >= 2 if base == "weibull" else np.ones(len(phi), bool)
    within = law(phi[finite])
    quadrature = _Censored(within, max(bounds[0], within.support()[0].min()), bounds[1])
    np.testing.assert_allclose(got[finite], quadrature.entropy(), rtol=1e-10, atol=1e-12)
    expected = family.entropy(phi, *bounds)
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-14)


def test_pdp_on_explicit_grid_values(linear):
    model, idata, x, beta = linear
    values = [2.0, -1.0, 0.25]  # kept in the order given
    out = pm_sens.partial_dependence(
        idata,
        model,
        kind="mean",
        features=["a", "b"],
        grid={"a": values},
        grid_resolution=4,
        progressbar=False,
    )["partial_dependence"]
    np.testing.assert_array_equal(out["grid_value"].sel(feature="a").values[:3], values)
    assert np.isnan(out["grid_value"].sel(feature="a").values[3])  # b has 4 quantiles
    pdp = out["mean_pdp"].sel(feature="a").values.reshape(-1, 4)[:, :3]  # (draw, grid)
    expected = np.array(values)[None, :] * beta[:, :1] + (x[:, 1].mean() * beta[:, 1:])
    np.testing.assert_allclose(pdp, expected, rtol=1e-10)
    assert out.attrs["custom_grid"] == ["a"]
    bad = {
        "grid=\\[1\\] is not valid; give a dict": [1],
        "grid has feature 'unused', not among the features \\['a', 'b'\\]": {"unused": [1.0]},
        "grid\\['a'\\] has shape \\(0,\\)": {"a": []},
        "grid\\['a'\\] has 1 non-finite": {"a": [0.0, np.nan]},
    }
    for message, grid in bad.items():
        with pytest.raises((ValueError, TypeError), match=message):
            pm_sens.partial_dependence(
                idata, model, kind="mean", features=["a", "b"], grid=grid, progressbar=False
            )


def test_integer_inputs_use_levels_and_can_be_permuted(rng):
    n = 60
    group = rng.integers(0, 3, n)
    xf = rng.normal(size=n)
    with pm.Model() as model:
        g = pm.Data("group", group)
        x = pm.Data("x", xf)
        a = pm.Normal("a", shape=3)
        b = pm.Normal("b")
        pm.Bernoulli("y", logit_p=a[g] + b * x, observed=rng.integers(0, 2, n))
    idata = posterior(
        {"a": rng.normal([-2, 0, 2], 0.3, size=(1, 30, 3)), "b": rng.normal(size=(1, 30))}
    )
    idata = _with_observed(idata, "y", rng.integers(0, 2, n))
    pdp = pm_sens.partial_dependence(idata, model, kind="mean", progressbar=False)
    grid = pdp["partial_dependence"]["grid_value"].sel(feature="group").values
    np.testing.assert_array_equal(grid[:3], [0, 1, 2])
    assert np.all(np.isnan(grid[3:]))
    with pytest.raises(ValueError, match=r"grid\['group'\]=\[0.5, 1.0\] holds non-integers"):
        pm_sens.partial_dependence(idata, model, kind="mean", grid={"group": [0.5, 1.0]})
    with pytest.raises(
        ValueError,
        match=r"observed holds non-integer values \(0.5 at value 0\), but the "
        r"model's bernoulli likelihood is discrete",
    ):
        pm_sens.permutation_importance(idata, model, observed=np.full(n, 0.5))
    pfi = pm_sens.permutation_importance(idata, model, random_seed=0, progressbar=False)
    table = pm_sens.summary(pfi, group="permutation_importance")
    assert set(table.feature) == {"group", "x"}
    assert {"entropy_pfi[total]", "likelihood_pfi"} <= set(table.variable)


def test_bad_uncertainty_arguments(linear):
    model, idata, _, _ = linear
    with pytest.raises(ValueError, match=r"kind='variance' is not valid; valid"):
        pm_sens.permutation_importance(idata, model, kind="variance")
    with pytest.raises(ValueError, match=r"observed has shape \(3,\); expected \(400,\)"):
        pm_sens.permutation_importance(idata, model, observed=np.ones(3))
    with pytest.raises(ValueError, match=r"percentiles=\(0.9, 0.1\) is not valid"):
        pm_sens.partial_dependence(idata, model, percentiles=(0.9, 0.1))
    del idata["observed_data"]
    with pytest.raises(
        ValueError,
        match=r"idata has no observed_data\['y'\] \(observed_data holds \[\]\); pass observed=",
    ):
        pm_sens.permutation_importance(idata, model, kind="likelihood")


@pytest.mark.parametrize(
    ("family", "phi", "fixed", "dist"),
    [
        (
            families.NEGATIVE_BINOMIAL_MEAN_ALPHA,
            lambda r: np.stack([r, np.full_like(r, 2.5)], -1),
            {},
            lambda r: stats.nbinom(2.5, 2.5 / (2.5 + r)),
        ),
        (
            families.MOMENT_FAMILIES["binomial"],
            lambda r: (r / 10)[..., None],
            {"n": 7},
            lambda r: stats.binom(7, r / 10),
        ),
    ],
    ids=["negative_binomial", "binomial"],
)
def test_more_discrete_mixture_entropies(rng, family, phi, fixed, dist):
    rates = rng.uniform(1, 6, size=(25, 3))
    acc = EntropyAccumulator(family, 3)
    acc.add(phi(rates), **{k: np.full(rates.shape, v) for k, v in fixed.items()})
    y = np.arange(300)
    pmf = dist(rates[..., None]).pmf(y)
    mixture = pmf.mean(0)
    np.testing.assert_allclose(acc.mixture_entropy(), -special.xlogy(mixture, mixture).sum(-1))
    np.testing.assert_allclose(acc.aleatoric(), -special.xlogy(pmf, pmf).sum(-1).mean(0))


def _zero_modified_pmf(base_pmf, psi, hurdle):
    """Brute-force pmf (..., Y) of a zero-inflated or hurdle law on a base pmf over 0..Y-1."""
    psi = psi[..., None]
    positive = psi * base_pmf / (1 - base_pmf[..., :1]) if hurdle else psi * base_pmf
    zero = 1 - psi[..., 0] if hurdle else 1 - psi[..., 0] * (1 - base_pmf[..., 0])
    return np.concatenate([zero[..., None], positive[..., 1:]], -1)


@pytest.mark.parametrize(
    ("family", "base", "hurdle"),
    [
        (families.ZERO_INFLATED_POISSON, lambda m: stats.poisson(m), False),
        (families.HURDLE_POISSON, lambda m: stats.poisson(m), True),
        (
            families.ZERO_INFLATED_NEGATIVE_BINOMIAL,
            lambda m: stats.nbinom(0.7, 0.7 / (0.7 + m)),
            False,
        ),
        (families.HURDLE_NEGATIVE_BINOMIAL, lambda m: stats.nbinom(0.7, 0.7 / (0.7 + m)), True),
    ],
    ids=["zip", "hurdle_poisson", "zinb", "hurdle_nb"],
)
def test_zero_modified_mixture_entropies_against_brute_force(rng, family, base, hurdle):
    """The recurrence's zero override and scale (dispersion α = 0.7 < 1: NB's mode at 0)."""
    means = rng.uniform(0.3, 8, size=(30, 4))
    psi = rng.uniform(0.2, 0.9, size=means.shape)
    theta = [means] if "poisson" in family.name else [means, np.full_like(means, 0.7)]
    acc = EntropyAccumulator(family, 4)
    for chunk in np.array_split(np.stack([psi, *theta], -1), 2):
        acc.add(chunk)
    pmf = _zero_modified_pmf(base(means[..., None]).pmf(np.arange(2000)), psi, hurdle)
    np.testing.assert_allclose(pmf.sum(-1), 1, rtol=1e-9)
    mixture = pmf.mean(0)
    np.testing.assert_allclose(acc.mixture_entropy(), special.entr(mixture).sum(-1), rtol=1e-9)
    np.testing.assert_allclose(acc.aleatoric(), special.entr(pmf).sum(-1).mean(0), rtol=1e-9)


@pytest.mark.parametrize(
    ("family", "phi"),
    [
        (families.MOMENT_FAMILIES["poisson"], lambda m: m[..., None]),
        (families.NEGATIVE_BINOMIAL_MEAN_ALPHA, lambda m: np.stack([m, 3 + 0 * m], -1)),
        # variance below the mean on some draws: the Poisson limit (α infinite)
        (families.MOMENT_FAMILIES["negative_binomial"], lambda m: np.stack([m, m * 1.5 - 30], -1)),
        (families.ZERO_INFLATED_POISSON, lambda m: np.stack([0.3 + m / 5000, m], -1)),
        (families.HURDLE_POISSON, lambda m: np.stack([0.3 + m / 5000, m], -1)),
    ],
    ids=["poisson", "nb_mean_alpha", "nb_mean_variance", "zip", "hurdle_poisson"],
)
@pytest.mark.parametrize(
    ("draws", "halves"),
    [(None, False), (40, False), (40, True)],
    ids=["compiled", "numpy", "numpy_on_two_threads"],
)
def test_pmf_recurrence_equals_the_log_pmf_sums(rng, monkeypatch, family, phi, draws, halves):
    """Sums by recurrence equal sums of the log pmf, in rows whose draws are far apart
    (rate 1 and 3000 in one row: a draw's pmf underflows over most of the row's
    window, and where the row's draws walk together the pmf of rate 1 has underflowed:
    those walk alone), in the compiled loop and, for a pass NumPy runs in little
    time (`NUMPY_SECONDS`), in NumPy, on all rows at once or on rows 0-1 and 2-4
    in two threads (`TWO_THREADS_VALUES`, `TWO_THREADS_CHUNK`)."""
    if halves:
        monkeypatch.setattr(_halves, "TWO_THREADS_VALUES", 1)
        monkeypatch.setattr(_halves, "TWO_THREADS_CHUNK", 1)
    means = np.exp(rng.uniform(0, 8, size=(40, 5)))
    means[:, 0] = np.where(np.arange(40) % 2, 1.0, 3000.0)
    params = phi(means)
    window = (
        family.support_window(params.min(0), params.max(0), EntropyAccumulator.TAIL)
        if family.support_window
        else None
    )
    by_recurrence = EntropyAccumulator(family, 5, window=window, draws=draws)
    assert by_recurrence.in_numpy == (draws is not None and window is not None)
    by_log_pmf = EntropyAccumulator(
        dataclasses.replace(family, pmf_recursion=None), 5, window=window
    )
    for acc in (by_recurrence, by_log_pmf):
        for chunk in np.array_split(params, 3):
            acc.add(chunk)
    np.testing.assert_allclose(by_recurrence.pmf_sum, by_log_pmf.pmf_sum, rtol=1e-10, atol=1e-16)
    np.testing.assert_allclose(by_recurrence.aleatoric(), by_log_pmf.aleatoric(), rtol=1e-11)
    np.testing.assert_allclose(
        by_recurrence.mixture_entropy(), by_log_pmf.mixture_entropy(), rtol=1e-11
    )


def test_support_sums_leave_numpy_where_it_would_step_through_many_counts(monkeypatch):
    """NumPy steps through the counts one call at a time: rates of 1 and 2e5 in one
    row (2e5 counts) took 2.4 s for 4 draws there, 0.26 s in the compiled loop. Such
    a pass takes the compiled loop (compiled already), a narrow one NumPy; both give
    the same sums."""
    monkeypatch.setattr(_recurrence, "loop_is_ready", lambda: True)
    family = families.MOMENT_FAMILIES["poisson"]
    sums = {}
    for name, means in (("wide", [[1.0, 5.0], [2e5, 7.0]]), ("narrow", [[1.0, 5.0], [3.0, 7.0]])):
        phi = np.array(means)[..., None]
        window = family.support_window(phi.min(0), phi.max(0), EntropyAccumulator.TAIL)
        for draws in (2, None):
            acc = EntropyAccumulator(family, 2, window=window, draws=draws)
            acc.add(phi)
            sums[name, draws] = acc.in_numpy, acc.aleatoric(), acc.mixture_entropy()
    assert not sums["wide", 2][0] and sums["narrow", 2][0]
    for name in ("wide", "narrow"):
        np.testing.assert_allclose(sums[name, 2][1:], sums[name, None][1:], rtol=1e-11)


@pytest.mark.parametrize("ready", [True, False], ids=["loop ready", "loop to compile"])
def test_support_sums_of_a_few_seconds_stay_in_numpy_while_the_loop_would_compile(
    monkeypatch, ready
):
    """The compiled loop's first use in an environment compiles it (6 s): until it is
    compiled or in Numba's cache, NumPy takes passes of up to `COMPILE_SECONDS` more
    (an estimated 2.4 s here: rates of 1 and 2e5 in one row, 2 draws)."""
    monkeypatch.setattr(_recurrence, "loop_is_ready", lambda: ready)
    family = families.MOMENT_FAMILIES["poisson"]
    phi = np.array([[1.0, 5.0], [2e5, 7.0]])[..., None]
    window = family.support_window(phi.min(0), phi.max(0), EntropyAccumulator.TAIL)
    assert (
        entropy.NUMPY_SECONDS
        < entropy._numpy_seconds(window, 2, True)
        < (entropy.NUMPY_SECONDS + entropy.COMPILE_SECONDS)
    )
    assert EntropyAccumulator(family, 2, window=window, draws=2).in_numpy is not ready


def test_the_loop_is_ready_once_compiled_or_in_numbas_cache(tmp_path):
    """`loop_is_ready` in a fresh process: False with an empty Numba cache, True
    once a process compiled the loop into it (and in that process)."""
    script = (
        "import sys, numpy as np\n"
        "from pm_sens.measures import _recurrence, entropy\n"
        "print(_recurrence.loop_is_ready())\n"
        "if sys.argv[1] == 'compile':\n"
        "    one = np.ones((1, 1))\n"
        "    entropy.recursion_sums(0 * one, one, np.zeros(1, int), None, -one, one < 0, "
        "None, None, (np.zeros(1), np.full(1, 5), np.array([0, 6])), np.zeros(6), "
        "np.zeros(1))\n"
        "    print(_recurrence.loop_is_ready())\n"
    )
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))

    def run(what):
        out = subprocess.run(
            [sys.executable, "-c", script, what], env=env, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.split()

    assert run("compile") == ["False", "True"]
    assert run("ask") == ["True"]


@pytest.mark.parametrize(
    ("family", "phi"),
    [
        (families.MOMENT_FAMILIES["bernoulli"], lambda u: special.expit(u)[..., None]),
        (families.BERNOULLI_LOGIT, lambda u: u[..., None]),
        (
            families.MOMENT_FAMILIES["categorical"],
            # softmax of infinite logits is nan: those rows get ±800
            lambda u: special.softmax(
                np.stack([v := np.clip(u, -800, 800), 0.3 * v, np.zeros_like(v)], -1), -1
            ),
        ),
    ],
    ids=["bernoulli", "bernoulli_logit", "categorical"],
)
def test_pmf_tables_equal_the_log_pmf_sums(rng, family, phi):
    """Support sums from a family's closed-form pmf and entropy equal the sums of
    its log pmf, on logits up to ±800 and infinite ones (entropy 0 there)."""
    logits = rng.normal(size=(40, 6)) * 5
    logits[:, 0] = np.where(np.arange(40) % 2, 40.0, -40.0)
    logits[:3, 1] = [800.0, -800.0, np.inf]
    logits[3:6, 1] = [-np.inf, 1e-9, 0.0]
    params = phi(logits)
    by_table = EntropyAccumulator(family, 6)
    by_log_pmf = EntropyAccumulator(dataclasses.replace(family, pmf_table=None), 6)
    for acc in (by_table, by_log_pmf):
        for chunk in np.array_split(params, 3):
            acc.add(chunk)
    assert np.isfinite(by_table.pmf_sum).all() and np.isfinite(by_table.aleatoric()).all()
    np.testing.assert_allclose(by_table.pmf_sum, by_log_pmf.pmf_sum, rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(by_table.aleatoric(), by_log_pmf.aleatoric(), rtol=1e-12)
    np.testing.assert_allclose(
        by_table.mixture_entropy(), by_log_pmf.mixture_entropy(), rtol=1e-12
    )


@pytest.mark.parametrize("wider_later", [False, True], ids=["same_width", "wider_later"])
def test_pmf_tables_on_two_threads_give_the_brute_force_sums(rng, monkeypatch, wider_later):
    """Once the tables' width is known (after the first chunk), blocks of
    `TWO_THREADS_VALUES` values or more are added half the rows on each of two
    threads, both used. A table wider than those before, met on a thread (trials
    10 → 19 in the last chunk's rows 25-39, all in the second half), is added after
    both are done, the sums widened: the entropies and means equal sums of the
    pmf over the support."""
    monkeypatch.setattr(entropy, "_TABLE_CELLS", 60)
    monkeypatch.setattr(entropy, "_TABLE_LEAST", 3)
    monkeypatch.setattr(_halves, "TWO_THREADS_VALUES", 2)
    monkeypatch.setattr(_halves, "TWO_THREADS_CHUNK", 1)
    threads = []

    def pmf_table(phi, n):
        threads.append(threading.current_thread().name)
        return families.BETA_BINOMIAL.pmf_table(phi, n)

    family = dataclasses.replace(families.BETA_BINOMIAL, pmf_table=pmf_table)
    rates = rng.uniform(0.2, 5, size=(9, 40))
    trials = np.full(rates.shape, 10)
    if wider_later:
        trials[6:, 25:] = 19
    acc = EntropyAccumulator(family, 40, table_mean=True)
    means = [
        acc.add(np.stack([r, 3 + 0 * r], -1), n=n)
        for r, n in zip(np.array_split(rates, 3), np.array_split(trials, 3), strict=True)
    ]
    main = threading.current_thread().name
    assert set(threads[: threads.index(main, 1)]) == {main}  # the first chunk: one thread
    assert len(set(threads)) == 2
    y = np.arange(20)
    probabilities = stats.betabinom(trials[..., None], rates[..., None], 3).pmf(y)
    mixture = probabilities.mean(0)
    np.testing.assert_allclose(acc.mixture_entropy(), special.entr(mixture).sum(-1), rtol=1e-12)
    np.testing.assert_allclose(acc.aleatoric(), special.entr(probabilities).sum(-1).mean(0))
    np.testing.assert_allclose(np.concatenate(means), (probabilities * y).sum(-1), rtol=1e-12)


def test_logsumexp_over_draws_against_scipy(rng):
    """As SciPy's, where exp underflows (log densities near −1000), and on rows of
    −inf (−inf) and with +inf (+inf)."""
    from pm_sens.measures.mixture_density import logsumexp_over_draws

    x = rng.normal(size=(30, 5)) - 1000
    x[:, 1] = -np.inf
    got = logsumexp_over_draws(x)
    np.testing.assert_allclose(got, special.logsumexp(x, axis=0), rtol=1e-14)
    assert got[1] == -np.inf
    x[4, 2] = np.inf
    assert logsumexp_over_draws(x)[2] == np.inf


def test_logsumexp_over_draws_in_a_graph_is_numpys(rng):
    """The graph's sum over draws in log space (what a device computes) as NumPy's,
    where exp underflows, on rows of −inf and with +inf."""
    import pytensor
    import pytensor.tensor as pt

    from pm_sens.graph.engine import _logsumexp_over_draws
    from pm_sens.measures.mixture_density import logsumexp_over_draws

    x = rng.normal(size=(30, 5)) - 1000
    x[:, 1] = -np.inf
    x[4, 2] = np.inf
    values = pt.matrix("x")
    got = pytensor.function([values], _logsumexp_over_draws(values))(x)
    np.testing.assert_array_equal(np.isinf(got), [False, True, True, False, False])
    np.testing.assert_allclose(got, logsumexp_over_draws(x), rtol=1e-14)


def test_mixture_log_density_reads_the_observed_count_from_each_counts_sums(rng):
    """Bernoulli draws summed per outcome over chunks (as a device returns them), read
    at y: the mixture log density of the per-draw log densities, −inf at a y outside
    {0, 1} (2, 0.5, nan) as `log_density` gives it; bool y as 0 and 1."""
    from pm_sens.families.bernoulli import FAMILY
    from pm_sens.measures.mixture_density import logsumexp_over_draws

    p = rng.uniform(size=(40, 7))[..., None]
    y = np.array([0.0, 1.0, 1.0, 2.0, 0.5, np.nan, 0.0])
    expected = MixtureLogDensity(7)
    got = MixtureLogDensity(7)
    for chunk in np.array_split(p, 3):
        expected.add(FAMILY.log_density(chunk, y))
        log_table = np.stack(
            [logsumexp_over_draws(np.log(t)) for t in (1 - chunk[..., 0], chunk[..., 0])], -1
        )
        got.add_count_sums(len(chunk), log_table, y)
    assert np.isneginf(expected.value()[3:6]).all()
    np.testing.assert_allclose(got.value(), expected.value(), rtol=1e-14)
    flags = MixtureLogDensity(2)
    flags.add_count_sums(40, log_table[:2], np.array([False, True]))
    np.testing.assert_allclose(flags.value(), log_table[[0, 1], [0, 1]] - np.log(40))


def test_pdp_evaluates_repeated_rows_once_with_the_same_curves(rng, monkeypatch):
    """A Poisson regression on one input: every point at a grid value is the same
    row, evaluated once (`distinct_rows` finds one per grid value, and the
    rows are not looked through again); the ICE mean is E_s exp(a + b g) at
    every point, the entropies are SciPy's, and with the observed y (each
    point's own) the log density is log E_s Poisson(y_i | exp(a + b g))."""
    from pm_sens._core import points as _point_set

    x = rng.normal(size=30)
    y = rng.poisson(1.0, 30)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        a, b = pm.Normal("a"), pm.Normal("b")
        pm.Poisson("y", mu=pm.math.exp(a + b * xd), observed=y)
    a, b = rng.normal(0.2, 0.1, (1, 6)), rng.normal(0.5, 0.2, (1, 6))
    found, again = [], []
    distinct_rows = _point_set.distinct_rows
    monkeypatch.setattr(
        "pm_sens.uncertainty.partial_dependence.distinct_rows",
        lambda *args: found.append(distinct_rows(*args)) or found[-1],
    )
    monkeypatch.setattr(
        "pm_sens.uncertainty.passes.distinct_rows",
        lambda *args: again.append(distinct_rows(*args)) or again[-1],
    )
    grid = [-1.0, 0.0, 2.0]
    idata = posterior({"a": a, "b": b})
    pdp = pm_sens.partial_dependence(idata, model, grid={"x": grid}, progressbar=False)[
        "partial_dependence"
    ]
    assert len(found[0][0][model["x"]]) == 3  # 90 rows, 3 distinct
    assert again == []
    rates = np.exp(a[0][:, None] + b[0][:, None] * np.array(grid))  # (draws, grid)
    ice = pdp["mean_ice"].values[0]  # (grid, point)
    np.testing.assert_allclose(ice, np.repeat(rates.mean(0)[:, None], 30, 1), rtol=1e-12)
    k = np.arange(200)
    pmf = stats.poisson(rates[..., None]).pmf(k)  # (draws, grid, k)
    aleatoric = special.entr(pmf).sum(-1).mean(0)
    total = special.entr(pmf.mean(0)).sum(-1)
    entropy = pdp["entropy_ice"].values[0]  # (grid, point, component)
    np.testing.assert_allclose(entropy[..., 0], np.repeat(total[:, None], 30, 1), rtol=1e-9)
    np.testing.assert_allclose(entropy[..., 1], np.repeat(aleatoric[:, None], 30, 1), rtol=1e-9)
    idata["observed_data"] = xr.Dataset({"y": ("obs", y)})
    density = pm_sens.partial_dependence(
        idata, model, grid={"x": grid}, kind="log_likelihood", progressbar=False
    )["partial_dependence"]["log_likelihood_ice"].values[0]  # (grid, point)
    assert len(again[0][0][model["x"]]) == 3  # evaluated once per grid value
    expected = special.logsumexp(stats.poisson(rates[..., None]).logpmf(y), axis=0) - np.log(6)
    np.testing.assert_allclose(density, expected, rtol=1e-12)


@pytest.mark.parametrize("likelihood", ["normal", "poisson"])
def test_pfi_of_a_models_only_input_evaluates_its_points_once(rng, monkeypatch, likelihood):
    """Permuting a model's only input gives its points again, in another order:
    the predictive is evaluated on the 25 distinct rows, not the 100 stacked
    ones. The entropy importance is then 0 (the same entropies, averaged over
    the points in another order) and the likelihood importance equals that
    of the evaluation of every row."""
    from pm_sens.uncertainty import passes as _passes

    x = rng.normal(size=25)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        a, b = pm.Normal("a"), pm.Normal("b")
        if likelihood == "normal":
            pm.Normal("y", mu=a + b * xd, sigma=pm.math.exp(0.3 * xd), observed=x + 1)
        else:
            pm.Poisson("y", mu=pm.math.exp(a + b * xd), observed=rng.poisson(1.0, 25))
    idata = posterior({"a": rng.normal(0.2, 0.1, (2, 5)), "b": rng.normal(0.5, 0.2, (2, 5))})
    idata["observed_data"] = xr.Dataset(
        {"y": ("obs", x + 1 if likelihood == "normal" else rng.poisson(1.0, 25))}
    )
    kw = dict(n_repeats=3, random_seed=1, progressbar=False, extend_inferencedata=False)
    evaluated = []
    distinct = _passes._distinct_evaluation

    def spy(ctx, values, by_row):
        found = distinct(ctx, values, by_row)
        evaluated.append(len(found[0][model["x"]]))
        return found

    monkeypatch.setattr(_passes, "_distinct_evaluation", spy)
    once = pm_sens.permutation_importance(idata, model, **kw)["permutation_importance"]
    assert evaluated == [25]
    monkeypatch.setattr(
        _passes, "_distinct_evaluation", lambda ctx, values, by_row: (values, None)
    )
    every = pm_sens.permutation_importance(idata, model, **kw)["permutation_importance"]
    np.testing.assert_allclose(once["entropy_pfi"].values, 0.0, atol=1e-12)
    assert np.abs(once["likelihood_pfi"].values).min() > 1e-3
    np.testing.assert_allclose(
        once["likelihood_pfi"].values, every["likelihood_pfi"].values, rtol=1e-12
    )


def test_equal_rows_are_grouped_by_their_bits(rng):
    """200 rows drawn from 30 (one with a NaN, one with −0.0 beside 0.0): one
    group per distinct row of bits, as NumPy's unique on the rows' bytes gives,
    each row equal to its group's first; None when most rows differ."""
    from pm_sens._core.points import _equal_rows

    base = rng.normal(size=(30, 4))
    base[3, 1], base[4] = np.nan, 0.0
    base[5], base[5, 2] = 0.0, -0.0
    table = base[rng.integers(0, 30, 200)]
    first, inverse = _equal_rows(table)
    bits = table.view(np.uint64)
    np.testing.assert_array_equal(bits[first][inverse], bits)
    keys = np.ascontiguousarray(table).view(np.dtype((np.void, 32)))[:, 0]
    assert len(first) == len(np.unique(keys)) <= 30
    assert _equal_rows(rng.normal(size=(50, 3))) is None


def test_pdp_and_permutations_in_passes_of_a_few_copies_equal_one_pass(rng, monkeypatch):
    """The rows of the PDP (grid values) and of the permutation importance
    (permutations) go through the draws in passes of at most ``PASS_ROWS`` rows,
    whole copies of the points: a negative binomial on three inputs, every kind,
    with the observed y, in one pass and in passes of two copies (the last one
    short) give the same values. A dask-backed posterior takes one pass (each
    would read its draws again)."""
    from pm_sens.uncertainty import passes as passes_module

    x = rng.normal(size=(25, 3))
    y = rng.poisson(2.0, 25)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b, alpha = pm.Normal("b", shape=3), pm.Gamma("alpha", 2, 1)
        pm.NegativeBinomial("y", mu=pm.math.exp(0.5 + xd @ b), alpha=alpha, observed=y)
    idata = posterior({"b": rng.normal(0, 0.3, (2, 8, 3)), "alpha": rng.gamma(4, 1, (2, 8))})
    idata["observed_data"] = xr.Dataset({"y": ("obs", y)})
    quiet = dict(progressbar=False, extend_inferencedata=False)

    def both(draws=idata):
        pdp = pm_sens.partial_dependence(
            draws, model, kind=("mean", "entropy", "log_likelihood"), grid_resolution=7, **quiet
        )["partial_dependence"]
        pfi = pm_sens.permutation_importance(
            draws, model, kind=("entropy", "likelihood"), n_repeats=2, random_seed=5, **quiet
        )["permutation_importance"]
        return pdp, pfi

    one = both()
    rows = []
    uncertainty_rows = passes_module.uncertainty_rows
    monkeypatch.setattr(passes_module, "PASS_ROWS", 50)  # two copies of 25 points
    monkeypatch.setattr(
        "pm_sens.uncertainty.partial_dependence.uncertainty_rows",
        lambda ctx, values, n_rows, *args, **kw: (
            rows.append(n_rows) or uncertainty_rows(ctx, values, n_rows, *args, **kw)
        ),
    )
    monkeypatch.setattr(
        "pm_sens.uncertainty.permutation_importance.uncertainty_rows",
        lambda ctx, values, n_rows, *args, **kw: (
            rows.append(n_rows) or uncertainty_rows(ctx, values, n_rows, *args, **kw)
        ),
    )
    several = both()
    # PDP: 3 features × 7 grid values; PFI: the points and 2 repeats × 3 features
    assert rows == [50] * 10 + [25] + [50] * 3 + [25]
    for got, expected in zip(several, one, strict=True):
        for name, values in expected.data_vars.items():
            np.testing.assert_allclose(got[name].values, values.values, rtol=1e-12)
    # a dask-backed posterior is read once: one pass
    lazy = idata.copy()
    lazy["posterior"] = idata["posterior"].chunk({"draw": 4})
    rows.clear()
    both(lazy)
    assert rows == [525, 175]

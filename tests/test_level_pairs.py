"""R-sens2 pairs with a categorical input, against NumPy computations of their definition.

A level × rate pair is the frequency-weighted mean over the other levels l of
``‖u_x(l) − u_x(own)‖``, with ``u_x = C^{1/2} S ∂φ/∂x`` in the mean–variance
parametrization (S the square roots of the information's diagonal, C its
correlation); a level × level pair the mean of ``‖C^{1/2} S Δ²φ‖`` at the point,
``Δ²φ`` the interaction contrast of the two level changes. Every expected value
below is computed here from the posterior draws, not by pm_sens.
"""

import numpy as np
import pymc as pm
import pytest
from scipy import linalg, special

import pm_sens
from tests.conftest import posterior

QUIET = dict(progressbar=False, extend_inferencedata=False)
N_GROUPS, N_OTHER = 3, 2


def _others(own, n_levels):
    """Weights of the other levels at each point (their frequency), (N, L)."""
    weights = np.bincount(own, minlength=n_levels) / len(own)
    others = np.tile(weights, (len(own), 1))
    others[np.arange(len(own)), own] = 0
    return others / others.sum(-1, keepdims=True)


def _rate_pairs(u, own):
    """``Σ_l w_il ‖u(l) − u(own_i)‖`` from whitened vectors u (..., N, L, K)."""
    index = np.broadcast_to(own[:, None, None], (*u.shape[:-2], 1, u.shape[-1]))
    at_own = np.take_along_axis(u, index, axis=-2)
    distance = np.linalg.norm(u - at_own, axis=-1)
    return (distance * _others(own, u.shape[-2])).sum(-1)


def _draw_values(out, feature, feature_bis):
    values = out["sensitivity"]["rsens2"].sel(feature=feature, feature_bis=feature_bis).values
    return values.reshape(-1, values.shape[-1])


@pytest.fixture
def varying_slopes(rng):
    """``y ~ Normal(a[g] + b[g] x, exp(c[g] x))``: slope and log-sd per group."""
    n = 30
    group, x = rng.integers(0, N_GROUPS, n), rng.normal(size=n)
    with pm.Model() as model:
        xd, gd = pm.Data("x", x), pm.Data("g", group)
        a, b, c = (pm.Normal(name, shape=N_GROUPS) for name in "abc")
        pm.Normal("y", a[gd] + b[gd] * xd, pm.math.exp(c[gd] * xd), observed=np.zeros(n))
    draws = {name: rng.normal(size=(2, 4, N_GROUPS)) * 0.5 for name in "abc"}
    return model, posterior(draws), draws, group, x


def test_level_rate_pair_per_draw_normal_mean_and_sd(varying_slopes):
    """``u_x(l) = (b_l/σ_l, √2 c_l)``: the mean's and the sd's rates at level l."""
    model, idata, draws, group, x = varying_slopes
    a, b, c = (draws[name].reshape(-1, 1, N_GROUPS) for name in "abc")
    sigma = np.exp(c * x[:, None])  # (S, N, L)
    u = np.stack([np.broadcast_to(b / sigma, sigma.shape), np.sqrt(2) * c + 0 * sigma], -1)
    out = pm_sens.sensitivity(idata, model, mode="draw", interactions=True, **QUIET)
    expected = _rate_pairs(u, group)
    np.testing.assert_allclose(_draw_values(out, "g", "x"), expected, rtol=1e-12)
    np.testing.assert_allclose(_draw_values(out, "x", "g"), expected, rtol=1e-12)


def test_level_rate_pair_of_the_moment_matched_normal(varying_slopes):
    """Mixture mean and variance at each level, and their derivatives, in NumPy."""
    model, idata, draws, group, x = varying_slopes
    a, b, c = (draws[name].reshape(-1, 1, N_GROUPS) for name in "abc")
    mu = a + b * x[:, None]
    sigma2 = np.exp(2 * c * x[:, None])
    m, d_m = mu.mean(0), b.mean(0)
    v = sigma2.mean(0) + (mu**2).mean(0) - m**2
    d_v = (2 * c * sigma2).mean(0) + 2 * (mu * b).mean(0) - 2 * m * d_m
    u = np.stack([d_m / np.sqrt(v), d_v / (np.sqrt(2) * v)], -1)
    out = pm_sens.sensitivity(idata, model, interactions=True, **QUIET)
    got = out["sensitivity"]["rsens2"].sel(feature="g", feature_bis="x").values
    np.testing.assert_allclose(got, _rate_pairs(u, group), rtol=1e-10)


def test_pairs_scale_as_the_square_root_of_alpha(varying_slopes):
    model, idata, *_ = varying_slopes
    calls = [
        pm_sens.sensitivity(idata, model, interactions=True, alpha=alpha, **QUIET)
        for alpha in (1.0, 0.5)
    ]
    one, half = (call["sensitivity"]["rsens2"].sel(feature="g") for call in calls)
    np.testing.assert_allclose(half, np.sqrt(0.5) * one, rtol=1e-12)


def test_additive_model_has_no_level_rate_pair_per_draw(rng):
    """``a[g] + b x`` with one sd: x acts alike at every level (0 up to rounding)."""
    n = 20
    group, x = rng.integers(0, N_GROUPS, n), rng.normal(size=n)
    with pm.Model() as model:
        xd, gd = pm.Data("x", x), pm.Data("g", group)
        a, b = pm.Normal("a", shape=N_GROUPS), pm.Normal("b")
        pm.Normal("y", a[gd] + b * xd, pm.HalfNormal("s"), observed=np.zeros(n))
    idata = posterior(
        {
            "a": rng.normal(size=(1, 3, N_GROUPS)),
            "b": rng.normal(size=(1, 3)),
            "s": np.ones((1, 3)),
        }
    )
    out = pm_sens.sensitivity(idata, model, mode="draw", interactions=True, **QUIET)
    assert np.max(np.abs(_draw_values(out, "g", "x"))) < 1e-14


def _two_groupings(rng, n=40):
    g, h, x = rng.integers(0, N_GROUPS, n), rng.integers(0, N_OTHER, n), rng.normal(size=n)
    draws = {
        "d": rng.normal(size=(2, 3, N_GROUPS, N_OTHER)),
        "b": rng.normal(size=(2, 3, N_GROUPS)),
    }
    return g, h, x, draws


def _contrast_pairs(phi, scale, g, h):
    """Mean over other levels of ``|Δ²φ| · scale`` at the points: phi (S, N, Lg, Lh)."""
    n = np.arange(len(g))
    own = phi[:, n, g, h][:, :, None, None]
    by_g = np.moveaxis(phi[:, n, :, h], 0, 1)[..., None]  # g moved, h at its own level
    by_h = phi[:, n, g, :][:, :, None, :]
    contrast = np.abs(phi - by_g - by_h + own) * scale[:, :, None, None]
    weights = _others(g, N_GROUPS)[:, :, None] * _others(h, N_OTHER)[:, None, :]
    return (contrast * weights).sum((-2, -1))


def test_level_level_pair_of_a_bernoulli_is_taken_on_p(rng):
    """``p = σ(d[g, h] + b[g] x)``: the contrast of p (not of the logit), over ``sqrt(pq)``."""
    g, h, x, draws = _two_groupings(rng)
    with pm.Model() as model:
        xd, gd, hd = pm.Data("x", x), pm.Data("g", g), pm.Data("h", h)
        d, b = pm.Normal("d", shape=(N_GROUPS, N_OTHER)), pm.Normal("b", shape=N_GROUPS)
        pm.Bernoulli("y", logit_p=d[gd, hd] + b[gd] * xd, observed=np.zeros(len(x)))
    d, b = draws["d"].reshape(-1, 1, N_GROUPS, N_OTHER), draws["b"].reshape(-1, 1, N_GROUPS)
    p = special.expit(d + (b * x[:, None])[..., None])  # (S, N, Lg, Lh)
    n = np.arange(len(x))
    own_p = p[:, n, g, h]
    expected = _contrast_pairs(p, 1 / np.sqrt(own_p * (1 - own_p)), g, h)
    out = pm_sens.sensitivity(
        idata := posterior(draws), model, mode="draw", interactions=True, **QUIET
    )
    np.testing.assert_allclose(_draw_values(out, "g", "h"), expected, rtol=1e-10)
    np.testing.assert_allclose(_draw_values(out, "h", "g"), expected, rtol=1e-10)
    # the level × rate pair of a logit: u = ∂p/sqrt(pq) = b sqrt(pq), per level of g
    q = np.moveaxis(p[:, n, :, h], 0, 1)  # h at its own level, g moved: (S, N, Lg)
    u = (b * np.sqrt(q * (1 - q)))[..., None]
    np.testing.assert_allclose(_draw_values(out, "g", "x"), _rate_pairs(u, g), rtol=1e-10)
    local = pm_sens.sensitivity(idata, model, interactions=True, **QUIET)["sensitivity"]
    assert np.isnan(local["rsens2"].sel(feature="g", feature_bis="g")).all()
    assert np.isfinite(local["rsens2"].sel(feature="g", feature_bis="h")).all()


def test_level_level_pair_of_a_normal_is_the_mean_contrast_over_sigma(rng):
    g, h, x, draws = _two_groupings(rng)
    with pm.Model() as model:
        xd, gd, hd = pm.Data("x", x), pm.Data("g", g), pm.Data("h", h)
        d, b = pm.Normal("d", shape=(N_GROUPS, N_OTHER)), pm.Normal("b", shape=N_GROUPS)
        pm.Normal("y", d[gd, hd] + b[gd] * xd, pm.HalfNormal("s"), observed=np.zeros(len(x)))
    draws["s"] = np.exp(rng.normal(size=(2, 3)))
    mean = draws["d"].reshape(-1, 1, N_GROUPS, N_OTHER) + 0 * x[:, None, None]
    scale = np.broadcast_to(1 / draws["s"].reshape(-1, 1), (6, len(x)))
    out = pm_sens.sensitivity(posterior(draws), model, mode="draw", interactions=True, **QUIET)
    np.testing.assert_allclose(
        _draw_values(out, "g", "h"), _contrast_pairs(mean, scale, g, h), rtol=1e-10
    )


def _gamma_whitened(m, v, d_m, d_v):
    """``C^{1/2} S J`` of a Gamma in (m, v), its information from shape and rate."""
    a, r = m**2 / v, m / v
    info = np.array([[special.polygamma(1, a), -1 / r], [-1 / r, a / r**2]])
    jac = np.array([[2 * m / v, -(m**2) / v**2], [1 / v, -m / v**2]])
    info = jac.T @ info @ jac
    scales = np.sqrt(np.diag(info))
    root = np.real(linalg.sqrtm(info / np.outer(scales, scales)))
    return root @ (scales * np.array([d_m, d_v]))


def test_level_rate_pair_of_a_gamma_uses_the_correlation_root(rng):
    """Mean and shape both vary with x and the group: the (m, v) information is not diagonal."""
    n = 12
    group, x = rng.integers(0, N_GROUPS, n), rng.normal(size=n)
    with pm.Model() as model:
        xd, gd = pm.Data("x", x), pm.Data("g", group)
        b, c = pm.Normal("b", shape=N_GROUPS), pm.Normal("c", shape=N_GROUPS)
        mean, shape = pm.math.exp(0.5 + b[gd] * xd), pm.math.exp(1 + c[gd] * xd)
        pm.Gamma("y", alpha=shape, beta=shape / mean, observed=np.ones(n))
    draws = {name: 0.5 * rng.normal(size=(1, 2, N_GROUPS)) for name in "bc"}
    out = pm_sens.sensitivity(posterior(draws), model, mode="draw", interactions=True, **QUIET)
    expected = np.empty((2, n))
    for s in range(2):
        b, c = draws["b"][0, s], draws["c"][0, s]
        u = np.empty((n, N_GROUPS, 2))
        for i in range(n):
            for level in range(N_GROUPS):
                m, k = np.exp(0.5 + b[level] * x[i]), np.exp(1 + c[level] * x[i])
                v = m**2 / k
                u[i, level] = _gamma_whitened(m, v, m * b[level], v * (2 * b[level] - c[level]))
        expected[s] = _rate_pairs(u, group)
    np.testing.assert_allclose(_draw_values(out, "g", "x"), expected, rtol=1e-9)


def test_one_hot_columns_give_the_index_model_pairs(varying_slopes, rng):
    """Declared one-hot columns (``categorical=``) and the integer index: the same pairs."""
    model, idata, draws, group, x = varying_slopes
    onehot = np.eye(N_GROUPS)[group]
    with pm.Model() as columns:
        xd, gd = pm.Data("x", x), pm.Data("G", onehot)
        a, b, c = (pm.Normal(name, shape=N_GROUPS) for name in "abc")
        pm.Normal("y", gd @ a + (gd @ b) * xd, pm.math.exp((gd @ c) * xd), observed=np.zeros(30))
    labels = [f"G[{k}]" for k in range(N_GROUPS)]
    for mode in ("moment", "draw"):
        index = pm_sens.sensitivity(idata, model, mode=mode, interactions=True, **QUIET)
        one_hot = pm_sens.sensitivity(
            idata,
            columns,
            mode=mode,
            interactions=True,
            categorical={"group": labels},
            **QUIET,
        )
        np.testing.assert_allclose(
            one_hot["sensitivity"]["rsens2"].sel(feature="group", feature_bis="x").values,
            index["sensitivity"]["rsens2"].sel(feature="g", feature_bis="x").values,
            rtol=1e-10,
        )


def test_summary_ranks_the_level_pairs(varying_slopes):
    model, idata, *_ = varying_slopes
    out = pm_sens.sensitivity(idata, model, interactions=True, **QUIET)
    table = pm_sens.summary(out, var_names=["rsens2"])
    assert list(table["feature"]) == ["x:g"]
    assert list(table["kind"]) == ["rate:level"]
    assert np.isfinite(table["importance"]).all()


def test_negative_binomial_level_pairs_are_taken_in_mean_and_variance(rng):
    """PyMC's NB(μ, α) per draw is mapped to (m, v = μ + μ²/α) for its level pairs,
    as R-sens2 is: with one draw, draw mode gives moment mode's values (its
    mean–variance family) for the level × level and level × rate pairs."""
    g, h, x = rng.integers(0, N_GROUPS, 40), rng.integers(0, N_OTHER, 40), rng.normal(size=40)
    with pm.Model() as model:
        xd, gd, hd = pm.Data("x", x), pm.Data("g", g), pm.Data("h", h)
        d, b = pm.Normal("d", shape=(N_GROUPS, N_OTHER)), pm.Normal("b", shape=N_GROUPS)
        e = pm.Normal("e", shape=N_OTHER)
        pm.NegativeBinomial(
            "y",
            mu=pm.math.exp(d[gd, hd] + b[gd] * xd),
            alpha=pm.math.exp(e[hd] + 0.3 * xd),
            observed=np.zeros(40, dtype=int),
        )
    draws = {
        "d": rng.normal(size=(1, 1, N_GROUPS, N_OTHER)),
        "b": rng.normal(size=(1, 1, N_GROUPS)),
        "e": rng.normal(size=(1, 1, N_OTHER)),
    }
    draw, moment = (
        pm_sens.sensitivity(posterior(draws), model, mode=mode, interactions=True, **QUIET)
        for mode in ("draw", "moment")
    )
    for pair in [("g", "h"), ("g", "x"), ("h", "x")]:
        got = _draw_values(draw, *pair)[0]
        expected = moment["sensitivity"]["rsens2"].sel(feature=pair[0], feature_bis=pair[1])
        assert np.all(got > 0)
        np.testing.assert_allclose(got, expected.values, rtol=1e-10)

"""A multivariate Normal outcome per point (a multi-output regression with an LKJ covariance).

The family's Fisher information against finite-difference KL, its KL against
numeric integration with SciPy's densities; R-sens per draw and of the
moment-matched predictive against NumPy computations of their definitions;
the mixture log density against SciPy; and the functions that need a scalar
mean refuse in our words.
"""

import numpy as np
import pymc as pm
import pytest
from scipy import integrate, stats

import pm_sens
from pm_sens.families import mvnormal
from tests.zoo._registry import known_posterior

QUIET = dict(progressbar=False, extend_inferencedata=False)
N, K, D = 15, 2, 3


def _packed(mean, cov):
    k = len(mean)
    return np.r_[mean, [cov[a, b] for a in range(k) for b in range(a + 1)]]


def test_fisher_information_is_the_kl_curvature_and_kl_is_scipys():
    rng = np.random.default_rng(0)
    root = rng.normal(size=(K, K))
    cov, mean = root @ root.T + np.eye(K), rng.normal(size=K)
    phi = _packed(mean, cov)
    direction = rng.normal(size=phi.shape)
    info = mvnormal.fisher_information(phi)
    for step in (1e-3, 1e-4):
        kl = mvnormal.kl_divergence(phi, phi + step * direction)
        np.testing.assert_allclose(kl, 0.5 * step**2 * direction @ info @ direction, rtol=5 * step)
    other = phi + 0.2 * direction
    p = stats.multivariate_normal(mean, cov)
    q = stats.multivariate_normal(*mvnormal.unpacked(other))

    def integrand(y1, y0):
        y = np.array([y0, y1])
        return p.pdf(y) * (p.logpdf(y) - q.logpdf(y))

    span = 9 * np.sqrt(np.diag(cov))
    numeric, _ = integrate.dblquad(
        integrand, mean[0] - span[0], mean[0] + span[0], mean[1] - span[1], mean[1] + span[1]
    )
    np.testing.assert_allclose(mvnormal.kl_divergence(phi, other), numeric, rtol=1e-6)
    y = rng.normal(size=K)
    np.testing.assert_allclose(mvnormal.log_density(phi, y), p.logpdf(y), rtol=1e-12)
    np.testing.assert_allclose(mvnormal.entropy(phi), p.entropy(), rtol=1e-12)


@pytest.fixture(scope="module")
def regression():
    """``y_i ~ MvNormal(x_i B, LLᵀ)``, L from an LKJ prior (the multi-output notebooks)."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(N, D))
    with pm.Model(coords={"outcome": ["a", "b"], "feature": ["f0", "f1", "f2"]}) as model:
        X = pm.Data("X", x)
        B = pm.Normal("B", 0, 1, dims=("feature", "outcome"))
        chol, _, _ = pm.LKJCholeskyCov(
            "chol", n=K, eta=2, sd_dist=pm.Exponential.dist(1), compute_corr=True
        )
        pm.MvNormal("y", mu=X @ B, chol=chol, observed=rng.normal(size=(N, K)))
    idata = known_posterior(model)
    B = idata["posterior"]["B"].values.reshape(-1, D, K)
    return model, idata, x, B


def test_rsens_per_draw_is_the_mahalanobis_length_of_a_row_of_b(regression):
    model, idata, x, B = regression
    out = pm_sens.sensitivity(idata, model, mode="draw", **QUIET)["sensitivity"]
    cov = _draw_covariances(model, idata)
    precision = np.linalg.inv(cov)
    expected = np.sqrt(np.einsum("sdk,skl,sdl->sd", B, precision, B))  # the same at every point
    got = out["rsens"].values.reshape(len(B), N, D)
    np.testing.assert_allclose(got, np.broadcast_to(expected[:, None], got.shape), rtol=1e-10)


def _draw_covariances(model, idata):
    """Σ = L Lᵀ per draw, L from the packed Cholesky draws (PyMC's own unpacking)."""
    packed = idata["posterior"]["chol"].values.reshape(-1, K * (K + 1) // 2)
    rows, cols = np.tril_indices(K)
    chol = np.zeros((len(packed), K, K))
    chol[:, rows, cols] = packed
    return chol @ np.swapaxes(chol, -1, -2)


def test_rsens_of_the_moment_matched_predictive(regression):
    """m = x E[B], Σ = E[Σ_s] + Cov_s(x B_s), and their derivatives, in NumPy."""
    model, idata, x, B = regression
    cov = _draw_covariances(model, idata)
    mu = np.einsum("nd,sdk->snk", x, B)  # (S, N, K)
    m = mu.mean(0)
    sigma = (
        cov.mean(0) + np.einsum("snk,snl->nkl", mu, mu) / len(B) - np.einsum("nk,nl->nkl", m, m)
    )
    d_m = B.mean(0)  # (D, K): ∂m/∂x_d
    d_sigma = (
        np.einsum("sdk,snl->ndkl", B, mu) / len(B)
        + np.einsum("snk,sdl->ndkl", mu, B) / len(B)
        - np.einsum("dk,nl->ndkl", d_m, m)
        - np.einsum("nk,dl->ndkl", m, d_m)
    )
    precision = np.linalg.inv(sigma)
    mean_part = np.einsum("dk,nkl,dl->nd", d_m, precision, d_m)
    spread = np.einsum("nkl,ndlm->ndkm", precision, d_sigma)
    cov_part = 0.5 * np.einsum("ndkm,ndmk->nd", spread, spread)
    out = pm_sens.sensitivity(idata, model, interactions=True, **QUIET)["sensitivity"]
    np.testing.assert_allclose(out["rsens"].values, np.sqrt(mean_part + cov_part), rtol=1e-9)
    # R-sens2: m is linear in x, Σ quadratic: ∂²Σ = E[B_d B_eᵀ + B_e B_dᵀ] − (∂m_d ∂m_eᵀ + …)
    outer = np.einsum("sdk,sel->dekl", B, B) / len(B) - np.einsum("dk,el->dekl", d_m, d_m)
    curvature = outer + np.swapaxes(outer, -1, -2)
    spread = np.einsum("nkl,delm->ndekm", precision, curvature)
    expected = np.sqrt(0.5 * np.einsum("ndekm,ndemk->nde", spread, spread))
    np.testing.assert_allclose(out["rsens2"].values, expected, rtol=1e-9)
    draw = pm_sens.sensitivity(idata, model, mode="draw", interactions=True, **QUIET)
    assert np.max(np.abs(draw["sensitivity"]["rsens2"].values)) < 1e-12  # linear, Σ fixed


def test_log_likelihood_pdp_is_scipys_mixture_density(regression):
    model, idata, x, B = regression
    cov = _draw_covariances(model, idata)
    out = pm_sens.partial_dependence(
        idata, model, kind="log_likelihood", grid_resolution=3, **QUIET
    )["partial_dependence"]
    y = idata["observed_data"]["y"].values
    grid = out["grid_value"].values[0]
    for g, value in enumerate(grid):
        moved = x.copy()
        moved[:, 0] = value
        dens = np.array(
            [
                [stats.multivariate_normal(moved[i] @ B[s], cov[s]).pdf(y[i]) for i in range(N)]
                for s in range(len(B))
            ]
        )
        np.testing.assert_allclose(
            out["log_likelihood_ice"].values[0, g], np.log(dens.mean(0)), rtol=1e-10
        )


def test_methods_of_a_scalar_mean_refuse_in_our_words(regression):
    model, idata, *_ = regression
    for method in ("ead", "var"):
        with pytest.raises(ValueError, match="outcome is a vector per point"):
            pm_sens.sensitivity(idata, model, method=method, **QUIET)
    with pytest.raises(ValueError, match="statistic='variance' is not valid.*valid: \\['mean'\\]"):
        pm_sens.integrated_gradients(idata, model, statistic="variance", **QUIET)
    pfi = pm_sens.permutation_importance(idata, model, n_repeats=2, random_seed=1, **QUIET)
    assert np.isfinite(pfi["permutation_importance"]["likelihood_pfi"].values).all()


def test_level_level_pair_of_a_vector_outcome(rng):
    """Means ``d[g, h]`` per outcome and one Σ: the contrast's Mahalanobis length, per draw."""
    g, h = rng.integers(0, 3, N), rng.integers(0, 2, N)
    with pm.Model() as model:
        gd, hd = pm.Data("g", g), pm.Data("h", h)
        d = pm.Normal("d", shape=(3, 2, K))
        chol, _, _ = pm.LKJCholeskyCov("chol", n=K, eta=2, sd_dist=pm.Exponential.dist(1))
        pm.MvNormal("y", mu=d[gd, hd], chol=chol, observed=rng.normal(size=(N, K)))
    idata = known_posterior(model)
    out = pm_sens.sensitivity(idata, model, mode="draw", interactions=True, **QUIET)
    got = out["sensitivity"]["rsens2"].sel(feature="g", feature_bis="h").values.reshape(-1, N)
    means = idata["posterior"]["d"].values.reshape(-1, 3, 2, K)
    precision = np.linalg.inv(_draw_covariances(model, idata))
    weights_g, weights_h = np.bincount(g, minlength=3) / N, np.bincount(h, minlength=2) / N
    for s in range(len(means)):
        for i in range(N):
            total = norm = 0.0
            for a in range(3):
                for b in range(2):
                    if a == g[i] or b == h[i]:
                        continue
                    c = (
                        means[s, a, b]
                        - means[s, a, h[i]]
                        - means[s, g[i], b]
                        + means[s, g[i], h[i]]
                    )
                    total += weights_g[a] * weights_h[b] * np.sqrt(c @ precision[s] @ c)
                    norm += weights_g[a] * weights_h[b]
            np.testing.assert_allclose(got[s, i], total / norm, rtol=1e-10)


# --- the multinomial: K category counts per point out of n trials ---------------------


def test_multinomial_family_against_scipy():
    from scipy.special import softmax

    rng = np.random.default_rng(2)
    p, q = softmax(rng.normal(size=(2, 3)), axis=-1)
    n = 6
    law = stats.multinomial(n, p)
    counts = [np.array([a, b, n - a - b]) for a in range(n + 1) for b in range(n + 1 - a)]
    kl = sum(law.pmf(c) * (law.logpmf(c) - stats.multinomial(n, q).logpmf(c)) for c in counts)
    from pm_sens.families import multinomial

    np.testing.assert_allclose(multinomial.kl_divergence(p, q, n), kl, rtol=1e-12)
    np.testing.assert_allclose(
        multinomial.log_density(p, counts[4], n), law.logpmf(counts[4]), rtol=1e-12
    )
    direction = rng.normal(size=3)
    direction -= direction.mean()  # along the simplex
    info = multinomial.fisher_information(p, n)
    step = 1e-4
    np.testing.assert_allclose(
        multinomial.kl_divergence(p, p + step * direction, n),
        0.5 * step**2 * direction @ info @ direction,
        rtol=1e-3,
    )


@pytest.fixture(scope="module")
def counts_regression():
    """``y_i ~ Multinomial(n_i, softmax(x_i W))`` (a multinomial logistic regression)."""
    rng = np.random.default_rng(3)
    x, n = rng.normal(size=(N, D)), rng.integers(5, 10, N)
    with pm.Model() as model:
        X = pm.Data("X", x)
        W = pm.Normal("W", 0, 1, shape=(D, 3))
        y = np.array([rng.multinomial(trials, [0.3, 0.3, 0.4]) for trials in n])
        pm.Multinomial("y", n=n, p=pm.math.softmax(X @ W, axis=-1), observed=y)
    idata = known_posterior(model)
    return model, idata, x, n, idata["posterior"]["W"].values.reshape(-1, D, 3)


def _softmax_slopes(x, W):
    """p (S, N, K) and ∂p_k/∂x_d (S, N, D, K) of p = softmax(x W)."""
    from scipy.special import softmax

    p = softmax(np.einsum("nd,sdk->snk", x, W), axis=-1)
    centred = W[:, None] - np.einsum("snk,sdk->snd", p, W)[..., None]  # (S, N, D, K)
    return p, p[:, :, None, :] * centred


def test_multinomial_rsens_in_both_modes(counts_regression):
    """Per draw ``n Σ_k (∂p_k)²/p_k``; moment mode the same for the mean p and mean ∂p."""
    model, idata, x, n, W = counts_regression
    p, slopes = _softmax_slopes(x, W)
    per_draw = np.sqrt(n[None, :, None] * (slopes**2 / p[:, :, None, :]).sum(-1))
    draw = pm_sens.sensitivity(idata, model, mode="draw", **QUIET)["sensitivity"]
    np.testing.assert_allclose(draw["rsens"].values.reshape(per_draw.shape), per_draw, rtol=1e-10)
    mean_p, mean_slopes = p.mean(0), slopes.mean(0)
    matched = np.sqrt(n[:, None] * (mean_slopes**2 / mean_p[:, None, :]).sum(-1))
    moment = pm_sens.sensitivity(idata, model, **QUIET)["sensitivity"]
    np.testing.assert_allclose(moment["rsens"].values, matched, rtol=1e-10)


def test_multinomial_likelihood_pdp(counts_regression):
    model, idata, x, n, W = counts_regression
    out = pm_sens.partial_dependence(
        idata, model, kind="log_likelihood", grid_resolution=2, **QUIET
    )["partial_dependence"]
    y = idata["observed_data"]["y"].values
    for g, value in enumerate(out["grid_value"].values[0]):
        moved = x.copy()
        moved[:, 0] = value
        p, _ = _softmax_slopes(moved, W)
        pmf = np.array(
            [[stats.multinomial(n[i], p[s, i]).pmf(y[i]) for i in range(N)] for s in range(len(W))]
        )
        np.testing.assert_allclose(
            out["log_likelihood_ice"].values[0, g], np.log(pmf.mean(0)), rtol=1e-10
        )

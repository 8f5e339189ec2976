"""Dirichlet and Dirichlet-multinomial outcomes, and the entropy of count vectors.

The families against SciPy (densities, entropies) and brute force (the
Dirichlet-multinomial's information as the score's outer product summed over
every split of the trials; its KL and every count vector's entropy summed the
same way). R-sens in both modes against the information in α with α and its
derivatives in NumPy, the moment-matched ones by complex steps; R-sens2 by a
central difference of complex steps.
"""

from itertools import product

import numpy as np
import pymc as pm
import pytest
from scipy import integrate, stats
from scipy.special import digamma, polygamma

import pm_sens
from pm_sens.families import dirichlet, dirichlet_multinomial
from tests.zoo._registry import known_posterior

QUIET = dict(progressbar=False, extend_inferencedata=False)
N, D, K = 8, 2, 3


def _packed(alpha):
    return np.r_[alpha / alpha.sum(), 1 / (1 + alpha.sum())]


def _splits(n, k=K):
    return np.array([y for y in product(range(n + 1), repeat=k) if sum(y) == n], dtype=float)


def test_dirichlet_family_against_scipy():
    rng = np.random.default_rng(0)
    alpha = np.array([2.0, 3.0, 4.5])
    phi = _packed(alpha)
    law = stats.dirichlet(alpha)
    y = rng.dirichlet(alpha)
    np.testing.assert_allclose(dirichlet.log_density(phi, y), law.logpdf(y), rtol=1e-12)
    np.testing.assert_allclose(dirichlet.entropy(phi), law.entropy(), rtol=1e-12)
    np.testing.assert_allclose(phi[:K] * (1 - phi[:K]) * phi[K], law.var(), rtol=1e-12)
    direction = rng.normal(size=K + 1)
    direction[:K] -= direction[:K].mean()  # along the simplex
    info = dirichlet.fisher_information(phi)
    for step in (1e-4, 1e-5):  # the gap is of first order in the step (third-order terms)
        kl = dirichlet.kl_divergence(phi, phi + step * direction)
        np.testing.assert_allclose(
            kl, 0.5 * step**2 * direction @ info @ direction, rtol=50 * step
        )
    other = np.array([3.0, 2.0, 2.5])
    q = stats.dirichlet(other)

    def integrand(y1, y0):
        y = np.array([y0, y1, 1 - y0 - y1])
        return np.exp(law.logpdf(y)) * (law.logpdf(y) - q.logpdf(y))

    numeric, _ = integrate.dblquad(integrand, 0, 1, 0, lambda y0: 1 - y0, epsabs=1e-11)
    kl = dirichlet.kl_divergence(phi, _packed(other))
    np.testing.assert_allclose(kl, numeric, rtol=1e-7)


def _dm_log_pmf(alpha, n):
    """Every split of n and its log pmf by SciPy."""
    y = _splits(n)
    return y, np.array([stats.dirichlet_multinomial(alpha, n).logpmf(v) for v in y])


def test_dirichlet_multinomial_family_by_brute_force():
    rng = np.random.default_rng(1)
    alpha, n = np.array([2.0, 3.0, 4.5]), 6
    phi = _packed(alpha)
    y, logp = _dm_log_pmf(alpha, n)
    np.testing.assert_allclose(dirichlet_multinomial.log_density(phi, y, n), logp, rtol=1e-12)
    # the information in α: the score's outer product over every split
    score = digamma(alpha.sum()) - digamma(n + alpha.sum()) + digamma(y + alpha) - digamma(alpha)
    info_alpha = np.einsum("w,wk,wl->kl", np.exp(logp), score, score)
    jac = np.zeros((K, K + 1))  # ∂α/∂(m, v), α = m (1/v − 1)
    jac[:, :K] = np.eye(K) * (1 / phi[K] - 1)
    jac[:, K] = -phi[:K] / phi[K] ** 2
    info = dirichlet_multinomial.fisher_information(phi, n)
    np.testing.assert_allclose(info, jac.T @ info_alpha @ jac, rtol=1e-10)
    other = np.array([3.0, 2.0, 2.5])
    _, logq = _dm_log_pmf(other, n)
    kl = dirichlet_multinomial.kl_divergence(phi, _packed(other), n)
    np.testing.assert_allclose(kl, np.sum(np.exp(logp) * (logp - logq)), rtol=1e-12)
    pmf, entropy = dirichlet_multinomial.pmf_table(phi, np.array(n))
    np.testing.assert_allclose(entropy, -np.sum(np.exp(logp) * logp), rtol=1e-12)
    direction = rng.normal(size=K + 1)
    direction[:K] -= direction[:K].mean()
    step = 1e-5
    kl = dirichlet_multinomial.kl_divergence(phi, phi + step * direction, n)
    np.testing.assert_allclose(kl, 0.5 * step**2 * direction @ info @ direction, rtol=50 * step)


@pytest.fixture(scope="module")
def proportions():
    """``y_i ~ Dirichlet(c · softmax(x_i W))``: compositional data (the Dirichlet regressions)."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(N, D))
    with pm.Model() as model:
        W = pm.Normal("W", 0, 0.5, shape=(D, K))
        conc = pm.Exponential("conc", 0.2)
        pm.Dirichlet(
            "y",
            a=conc * pm.math.softmax(pm.Data("X", x) @ W, axis=-1),
            observed=rng.dirichlet([2, 3, 4], size=N),
        )
    idata = known_posterior(model)
    post = idata["posterior"]
    return model, idata, x, post["W"].values.reshape(-1, D, K), post["conc"].values.ravel()


def _alpha(x, W, conc):
    """α per draw and point (S, N, K) (complex x allowed)."""
    eta = np.einsum("nd,sdk->snk", x, W)
    e = np.exp(eta - eta.real.max(-1, keepdims=True))
    return conc[:, None, None] * e / e.sum(-1, keepdims=True)


def _matched(x, W, conc):
    """The moment-matched (m̄, v̄) (N, K + 1) from the per-draw raw moments."""
    alpha = _alpha(x, W, conc)
    m, v = alpha / conc[:, None, None], 1 / (1 + conc)[:, None]
    squares = (m**2).sum(-1)
    r = (v * (1 - squares) + squares).mean(0)
    m = m.mean(0)
    squares = (m**2).sum(-1)
    return np.concatenate([m, ((r - squares) / (1 - squares))[:, None]], -1)


def _matched_alpha(x, W, conc):
    """The moment-matched law's concentrations (N, K)."""
    phi = _matched(x, W, conc)
    return phi[:, :K] * (1 / phi[:, K:] - 1)


def _complex_step(f, x, d, h=1e-30):
    """∂f/∂x_d at every point (x shifted along column d), exact to rounding."""
    shifted = x.astype(complex)
    shifted[:, d] += 1j * h
    return f(shifted).imag / h


def _alpha_information(alpha):
    return (
        np.eye(K) * polygamma(1, alpha)[..., None, :]
        - polygamma(1, alpha.sum(-1))[..., None, None]
    )


def test_dirichlet_rsens_in_both_modes(proportions):
    model, idata, x, W, conc = proportions
    alpha = _alpha(x, W, conc)
    slopes = _slopes(lambda z: _alpha(z, W, conc), x)
    info = _alpha_information(alpha)  # (S, N, K, K)
    per_draw = np.sqrt(np.einsum("sndk,snkl,sndl->snd", slopes, info, slopes))
    draw = pm_sens.sensitivity(idata, model, mode="draw", **QUIET)["sensitivity"]
    np.testing.assert_allclose(draw["rsens"].values.reshape(per_draw.shape), per_draw, rtol=1e-10)
    slopes = _slopes(lambda z: _matched_alpha(z, W, conc), x)
    info = _alpha_information(_matched_alpha(x, W, conc))
    expected = np.sqrt(np.einsum("ndk,nkl,ndl->nd", slopes, info, slopes))
    moment = pm_sens.sensitivity(idata, model, **QUIET)["sensitivity"]
    np.testing.assert_allclose(moment["rsens"].values, expected, rtol=1e-9)


def _slopes(f, x):
    """∂f/∂x_d for every d, stacked before f's last axis (…, N, D, K)."""
    return np.stack([_complex_step(f, x, d) for d in range(D)], -2)


def _curvature(f, x, d, e, h=1e-30, delta=1e-4):
    """∂²f/∂x_d∂x_e: a central difference in x_e of complex steps in x_d."""
    up, down = x.copy(), x.copy()
    up[:, e] += delta
    down[:, e] -= delta
    return (_complex_step(f, up, d, h) - _complex_step(f, down, d, h)) / (2 * delta)


def test_dirichlet_rsens2_in_both_modes(proportions):
    """R-sens2 in the mean–variance parametrization ``(m, v)``, both modes."""
    model, idata, x, W, conc = proportions
    out = {
        mode: pm_sens.sensitivity(idata, model, mode=mode, interactions=True, **QUIET)
        for mode in ("draw", "moment")
    }

    def per_draw(z):
        alpha = _alpha(z, W, conc)
        v = np.broadcast_to((1 / (1 + conc))[:, None, None], alpha.shape[:2] + (1,))
        return np.concatenate([alpha / conc[:, None, None], v], -1)

    for mode, f in (("draw", per_draw), ("moment", lambda z: _matched(z, W, conc))):
        phi = f(x)
        info = np.vectorize(dirichlet.fisher_information, signature="(m)->(m,m)")(phi)
        got = out[mode]["sensitivity"]["rsens2"].values
        for d, e in ((0, 0), (0, 1), (1, 1)):
            second = _curvature(f, x, d, e)
            expected = np.sqrt(np.einsum("...k,...kl,...l->...", second, info, second))
            np.testing.assert_allclose(got[..., d, e].reshape(expected.shape), expected, rtol=1e-6)


def test_dirichlet_entropy_and_log_likelihood_pdp(proportions):
    """Aleatoric: SciPy's entropy per draw; total: the matched Dirichlet's; the mixture density."""
    model, idata, x, W, conc = proportions
    out = pm_sens.partial_dependence(
        idata, model, kind=("entropy", "log_likelihood"), grid_resolution=2, **QUIET
    )["partial_dependence"]
    y = idata["observed_data"]["y"].values
    for g, value in enumerate(out["grid_value"].values[0]):
        moved = x.copy()
        moved[:, 0] = value
        alpha = _alpha(moved, W, conc)
        matched = _matched_alpha(moved, W, conc)
        entropy = out["entropy_ice"].values[0, g]
        aleatoric = np.array([[stats.dirichlet(a).entropy() for a in row] for row in alpha])
        np.testing.assert_allclose(entropy[:, 1], aleatoric.mean(0), rtol=1e-10)
        total = [stats.dirichlet(a).entropy() for a in matched]
        np.testing.assert_allclose(entropy[:, 0], total, rtol=1e-10)
        dens = np.array(
            [[stats.dirichlet(a).pdf(y[i]) for i, a in enumerate(row)] for row in alpha]
        )
        np.testing.assert_allclose(
            out["log_likelihood_ice"].values[0, g], np.log(dens.mean(0)), rtol=1e-10
        )


def test_dirichlet_outcome_means_equal_their_beta_marginals(proportions):
    """Outcome k's mean is that of the Beta(α_k, α₀ − α_k) marginal, a scalar model."""
    model, idata, x, W, conc = proportions
    ig = pm_sens.integrated_gradients(idata, model, n_steps=5, **QUIET)["attribution"]
    y = idata["observed_data"]["y"].values
    for k in range(K):
        with pm.Model() as beta:
            Wk = pm.Normal("W", 0, 0.5, shape=(D, K))
            c = pm.Exponential("conc", 0.2)
            p = pm.math.softmax(pm.Data("X", x) @ Wk, axis=-1)[:, k]
            pm.Beta("y", alpha=c * p, beta=c * (1 - p), observed=y[:, k])
        alone = pm_sens.integrated_gradients(idata, beta, n_steps=5, **QUIET)["attribution"]
        np.testing.assert_allclose(ig["ig"].isel(outcome=k).values, alone["ig"].values, rtol=1e-10)


@pytest.fixture(scope="module")
def counts():
    """``y_i ~ DirichletMultinomial(n_i, c · softmax(x_i W))`` (overdispersed counts)."""
    rng = np.random.default_rng(3)
    x, n = rng.normal(size=(N, D)), rng.integers(2, 6, N)
    y = np.array([rng.multinomial(t, [0.2, 0.3, 0.5]) for t in n])
    with pm.Model() as model:
        W = pm.Normal("W", 0, 0.5, shape=(D, K))
        conc = pm.Exponential("conc", 0.2)
        a = conc * pm.math.softmax(pm.Data("X", x) @ W, axis=-1)
        pm.DirichletMultinomial("y", n=n, a=a, observed=y)
    idata = known_posterior(model)
    post = idata["posterior"]
    return model, idata, x, n, post["W"].values.reshape(-1, D, K), post["conc"].values.ravel()


def _dm_alpha_information(alpha, n):
    """The information in α by the score's outer product over every split of n."""
    y = _splits(n)
    logp = np.array([stats.dirichlet_multinomial(alpha, n).logpmf(v) for v in y])
    score = digamma(alpha.sum()) - digamma(n + alpha.sum()) + digamma(y + alpha) - digamma(alpha)
    return np.einsum("w,wk,wl->kl", np.exp(logp), score, score)


def test_dirichlet_multinomial_rsens_in_both_modes(counts):
    model, idata, x, n, W, conc = counts
    alpha = _alpha(x, W, conc)
    slopes = _slopes(lambda z: _alpha(z, W, conc), x)
    info = np.array([[_dm_alpha_information(a, n[i]) for i, a in enumerate(row)] for row in alpha])
    per_draw = np.sqrt(np.einsum("sndk,snkl,sndl->snd", slopes, info, slopes))
    draw = pm_sens.sensitivity(idata, model, mode="draw", **QUIET)["sensitivity"]
    np.testing.assert_allclose(draw["rsens"].values.reshape(per_draw.shape), per_draw, rtol=1e-10)

    slopes = _slopes(lambda z: _matched_alpha(z, W, conc), x)
    matched = _matched_alpha(x, W, conc)
    info = np.array([_dm_alpha_information(a, n[i]) for i, a in enumerate(matched)])
    expected = np.sqrt(np.einsum("ndk,nkl,ndl->nd", slopes, info, slopes))
    moment = pm_sens.sensitivity(idata, model, **QUIET)["sensitivity"]
    np.testing.assert_allclose(moment["rsens"].values, expected, rtol=1e-9)


def _mixture_entropy(pmfs):
    """Total and aleatoric entropy from per-draw pmfs over the same splits (S, W)."""
    mixture = pmfs.mean(0)
    aleatoric = -np.sum(pmfs * np.log(np.where(pmfs > 0, pmfs, 1)), -1).mean()
    return -np.sum(mixture * np.log(mixture)), aleatoric


def test_entropy_of_count_vectors_by_brute_force(counts):
    """Dirichlet-multinomial and multinomial: the mixture's entropy over every split."""
    model, idata, x, n, W, conc = counts
    with pm.Model() as multinomial:
        Wm = pm.Normal("W", 0, 0.5, shape=(D, K))
        pm.Multinomial(
            "y",
            n=n,
            p=pm.math.softmax(pm.Data("X", x) @ Wm, axis=-1),
            observed=idata["observed_data"]["y"].values,
        )
    laws = {
        model: lambda a, t: stats.dirichlet_multinomial(a, t),
        multinomial: lambda a, t: stats.multinomial(t, a / a.sum()),
    }
    alpha = _alpha(x, W, conc)
    for which, law in laws.items():
        out = pm_sens.partial_dependence(
            idata, which, kind="entropy", grid_resolution=2, features="0", **QUIET
        )["partial_dependence"]
        value = out["grid_value"].values[0, 0]
        moved = x.copy()
        moved[:, 0] = value
        alpha = _alpha(moved, W, conc)
        for i in range(N):
            y = _splits(n[i])
            pmfs = np.array([[law(a[i], n[i]).pmf(v) for v in y] for a in alpha])
            total, aleatoric = _mixture_entropy(pmfs)
            got = out["entropy_ice"].values[0, 0, i]
            np.testing.assert_allclose(got[:2], [total, aleatoric], rtol=1e-10)


def test_too_many_splits_are_refused_before_any_evaluation(counts):
    model, idata, x, n, W, conc = counts
    big = idata.copy()
    y = big["observed_data"]["y"].values.copy()
    y[0, 0] += 300  # a row of 300+ trials: over 4.6 million count vectors
    big["observed_data"] = big["observed_data"].to_dataset().assign(y=(("y_dim_0", "y_dim_1"), y))
    with pytest.raises(ValueError, match="every split of its trials.*kind='likelihood'"):
        pm_sens.permutation_importance(big, model, **QUIET)

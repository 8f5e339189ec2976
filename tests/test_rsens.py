"""R-sens and R-sens2 against closed forms, with posteriors built from known draws."""

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pm_sens
from pm_sens._run import compiling as _compiling
from pm_sens.families import negative_binomial
from tests.conftest import posterior


def _linear_gaussian(rng, n=40, d=3, sigma=0.5, tau=2.0, draws=(2, 500)):
    """A conjugate Bayesian linear regression and exact draws from its posterior."""
    x = rng.normal(size=(n, d))
    beta_true = np.array([1.0, -2.0, 0.0])[:d]
    y = x @ beta_true + rng.normal(0, sigma, n)
    precision = x.T @ x / sigma**2 + np.eye(d) / tau**2
    cov = np.linalg.inv(precision)
    mean = cov @ x.T @ y / sigma**2
    beta = rng.multivariate_normal(mean, cov, size=draws)
    with pm.Model(coords={"obs": range(n), "feat": ["u", "v", "w"][:d]}) as model:
        xd = pm.Data("X", x, dims=("obs", "feat"))
        b = pm.Normal("beta", 0, tau, dims="feat")
        pm.Normal("y", mu=xd @ b, sigma=sigma, observed=y, dims="obs")
    idata = posterior(
        {"beta": beta}, dims={"beta": ["feat"]}, coords={"feat": ["u", "v", "w"][:d]}
    )
    return model, idata, x, beta.reshape(-1, d), sigma


def test_gaussian_moment_mode_matches_closed_form(rng):
    model, idata, x, beta, sigma = _linear_gaussian(rng)
    out = pm_sens.sensitivity(idata, model, progressbar=False)["sensitivity"]
    eta = beta @ x.T  # (S, N)
    m = eta.mean(0)
    v = sigma**2 + eta.var(0)
    dm = beta.mean(0)  # (D,)
    dv = 2 * np.einsum("sn,sd->nd", eta - m, beta) / len(beta)
    expected = np.sqrt(dm**2 / v[:, None] + dv**2 / (2 * v[:, None] ** 2))
    np.testing.assert_allclose(out["rsens"].values, expected, rtol=1e-10)
    assert out["rsens"].dims == ("obs", "feature")
    assert list(out["feature"].values) == ["u", "v", "w"]
    assert out.attrs["family"] == "normal" and out.attrs["mode"] == "moment"


def test_gaussian_interactions_are_curvature_of_the_variance(rng):
    model, idata, x, beta, sigma = _linear_gaussian(rng)
    out = pm_sens.sensitivity(idata, model, interactions=True, progressbar=False)["sensitivity"]
    eta = beta @ x.T
    v = sigma**2 + eta.var(0)
    # ∂²m = 0 and ∂²v_de = 2 cov(β_d, β_e) for a linear mean: R-sens2 = |∂²v|/(sqrt2 v)
    d2v = 2 * np.cov(beta.T, ddof=0)
    expected = np.abs(d2v)[None] / (np.sqrt(2) * v[:, None, None])
    np.testing.assert_allclose(out["rsens2"].values, expected, rtol=1e-8)
    assert out["rsens2"].dims == ("obs", "feature", "feature_bis")


def test_chunking_does_not_change_results(rng):
    """Moment sums merged over many chunks of draws equal one chunk's, every method."""
    model, idata, *_ = _linear_gaussian(rng)
    kw = dict(method=["rsens", "kl", "var", "ead", "aed"], interactions=True, progressbar=False)
    full = pm_sens.sensitivity(idata, model, **kw)["sensitivity"].to_dataset()
    tiny = pm_sens.sensitivity(idata, model, memory_limit=1.0, extend_inferencedata=False, **kw)[
        "sensitivity"
    ]
    assert set(full.data_vars) == {"rsens", "rsens2", "kl", "var", "ead", "aed", "eah", "aeh"}
    for name in full.data_vars:
        assert np.all(np.isfinite(full[name].values)), name
        # the KL divides the merged moments' round-off by delta²
        rtol = 1e-7 if name == "kl" else 1e-9
        np.testing.assert_allclose(tiny[name].values, full[name].values, rtol=rtol, err_msg=name)


def _mixture_moments(mu, d_mu, dd_mu, sigma2):
    """The mixture's mean and variance over the draws given, with their derivatives.

    Per draw ``mu`` (S, N), ``d_mu`` (S, N, D), ``dd_mu`` (S, N, D, D) and
    ``sigma2`` (S, N), constant in x. Returns phi (N, 2), jac (2, N, D), hess
    (2, N, D, D).
    """
    m, dm, ddm = mu.mean(0), d_mu.mean(0), dd_mu.mean(0)
    second = (sigma2 + mu**2).mean(0)
    d_second = (2 * mu[..., None] * d_mu).mean(0)
    dd_second = (
        2 * d_mu[..., :, None] * d_mu[..., None, :] + 2 * mu[..., None, None] * dd_mu
    ).mean(0)
    v = second - m**2
    dv = d_second - 2 * m[:, None] * dm
    ddv = dd_second - 2 * (dm[:, :, None] * dm[:, None, :] + m[:, None, None] * ddm)
    return np.stack([m, v], -1), np.stack([dm, dv]), np.stack([ddm, ddv])


def test_mixture_moments_merged_chunk_by_chunk_equal_those_of_all_draws(rng):
    """Chunks of 3, 1, 5 and 2 draws merged in place give the moments and
    derivatives computed over all 11 draws at once (the law of total variance
    differentiated twice), and leave the chunks' arrays as they were."""
    from pm_sens.measures.mixture import MixtureMoments

    x = rng.normal(size=(7, 2))
    c, e = rng.normal(size=11), rng.uniform(0.5, 2.0, 11)
    # per draw: mu = c (x1 + x1 x2), sigma² = e
    mu = c[:, None] * (x[:, 0] + x[:, 0] * x[:, 1])
    d_mu = c[:, None, None] * np.stack([1 + x[:, 1], x[:, 0]], -1)
    dd_mu = c[:, None, None, None] * np.array([[0.0, 1.0], [1.0, 0.0]])
    dd_mu = np.broadcast_to(dd_mu, (11, 7, 2, 2))
    sigma2 = np.broadcast_to(e[:, None], (11, 7))
    merged = MixtureMoments("variance")
    chunks = []
    for draws in (slice(0, 3), slice(3, 4), slice(4, 9), slice(9, 11)):
        chunk = _mixture_moments(mu[draws], d_mu[draws], dd_mu[draws], sigma2[draws])
        chunks.append((chunk, [a.copy() for a in chunk]))
        merged.add(draws.stop - draws.start, *chunk)
    expected = _mixture_moments(mu, d_mu, dd_mu, sigma2)
    for got, want in zip((merged.phi, merged.jac, merged.hess), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    for chunk, copies in chunks:
        for array, copy in zip(chunk, copies, strict=True):
            np.testing.assert_array_equal(array, copy)


def _logistic(rng, n=30, draws=(2, 50)):
    x = rng.normal(size=(n, 2))
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", 0, 1, shape=2)
        a = pm.Normal("a")
        pm.Bernoulli("y", logit_p=a + xd @ b, observed=rng.integers(0, 2, n))
    b_draws = rng.normal([1.5, -0.5], 0.3, size=(*draws, 2))
    a_draws = rng.normal(0.2, 0.3, size=draws)
    idata = posterior({"b": b_draws, "a": a_draws})
    return model, idata, x, b_draws.reshape(-1, 2), a_draws.reshape(-1)


def test_logistic_per_draw(rng):
    model, idata, x, b, a = _logistic(rng)
    out = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)["sensitivity"]
    p = 1 / (1 + np.exp(-(a[:, None] + b @ x.T)))
    expected = np.abs(b)[:, None, :] * np.sqrt(p * (1 - p))[..., None]
    assert out["rsens"].dims == ("chain", "draw", "point", "feature")
    np.testing.assert_allclose(out["rsens"].values.reshape(expected.shape), expected, rtol=1e-10)


def test_logistic_moment_mode_is_bernoulli_of_the_mean_probability(rng):
    model, idata, x, b, a = _logistic(rng)
    out = pm_sens.sensitivity(idata, model, progressbar=False)["sensitivity"]
    p = 1 / (1 + np.exp(-(a[:, None] + b @ x.T)))
    m = p.mean(0)
    dm = np.einsum("sn,sd->nd", p * (1 - p), b) / len(b)
    np.testing.assert_allclose(out["rsens"].values, np.abs(dm) / np.sqrt(m * (1 - m))[:, None])


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_logistic_interactions_match_closed_form(rng, backend, monkeypatch):
    """Moment-mode R-sens2 of a logistic GLM, run op by op in NumPy and compiled:
    the mean probability's Hessian is ``mean_s σ''(η) b_d b_e``, the Bernoulli's
    Fisher information ``1 / (m (1 - m))``. (The compiled graph factors each
    feature's column out of the second backward pass, which this pins.)"""
    monkeypatch.setattr(_compiling, "INTERPRETED_WORK", np.inf if backend == "python" else -1)
    monkeypatch.setattr(_compiling, "COMPILE_FIRST_WORK", 0)  # Numba compiled before the run
    model, idata, x, b, a = _logistic(rng)
    out = pm_sens.sensitivity(idata, model, interactions=True, progressbar=False)["sensitivity"]
    p = 1 / (1 + np.exp(-(a[:, None] + b @ x.T)))
    m = p.mean(0)
    hess = np.einsum("sn,sd,se->nde", p * (1 - p) * (1 - 2 * p), b, b) / len(b)
    expected = np.abs(hess) / np.sqrt(m * (1 - m))[:, None, None]
    np.testing.assert_allclose(out["rsens2"].values, expected, rtol=1e-10)


def _poisson(rng, n=25, draws=(2, 40)):
    x = rng.normal(size=(n, 2)) * 0.5
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", 0, 1, shape=2)
        pm.Poisson("y", mu=pm.math.exp(0.5 + xd @ b), observed=rng.poisson(2, n))
    b_draws = rng.normal([0.8, -0.3], 0.2, size=(*draws, 2))
    return model, posterior({"b": b_draws}), x, b_draws.reshape(-1, 2)


def test_poisson_log_link_per_draw(rng):
    model, idata, x, b = _poisson(rng)
    out = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)["sensitivity"]
    eta = 0.5 + b @ x.T
    expected = np.abs(b)[:, None, :] * np.exp(eta / 2)[..., None]
    np.testing.assert_allclose(out["rsens"].values.reshape(expected.shape), expected, rtol=1e-10)


def test_poisson_moment_mode_family_override(rng):
    model, idata, x, b = _poisson(rng)
    out = pm_sens.sensitivity(idata, model, family="poisson", progressbar=False)["sensitivity"]
    lam = np.exp(0.5 + b @ x.T)
    m, dm = lam.mean(0), np.einsum("sn,sd->nd", lam, b) / len(b)
    np.testing.assert_allclose(out["rsens"].values, np.abs(dm) / np.sqrt(m)[:, None])
    assert out.attrs["family"] == "poisson"


def test_poisson_moment_mode_matches_kl_of_the_matched_negative_binomial(rng):
    """Independent check of the NB(m, v) path: sqrt(2 KL)/h by summation over counts."""
    model, idata, x, b = _poisson(rng, n=4)
    out = pm_sens.sensitivity(idata, model, progressbar=False)["sensitivity"]
    assert out.attrs["family"] == "negative_binomial"

    def matched(points):
        lam = np.exp(0.5 + b @ points.T)
        m, v = lam.mean(0), lam.mean(0) + lam.var(0)
        alpha = m**2 / (v - m)
        return stats.nbinom(alpha[:, None], (alpha / (alpha + m))[:, None])

    h = 1e-4
    counts = np.arange(200)
    base = matched(x).pmf(counts)
    for d in range(2):
        shifted = matched(x + h * np.eye(2)[d]).pmf(counts)
        kl = np.sum(base * np.log(base / shifted), axis=1)
        np.testing.assert_allclose(out["rsens"].values[:, d], np.sqrt(2 * kl) / h, rtol=2e-3)


def test_explicit_interaction_term_per_draw(rng):
    n = 20
    x1, x2 = rng.normal(size=n), rng.normal(size=n)
    sigma = 0.7
    with pm.Model() as model:
        d1, d2 = pm.Data("x1", x1), pm.Data("x2", x2)
        b = pm.Normal("b", shape=3)
        pm.Normal("y", mu=b[0] * d1 + b[1] * d2 + b[2] * d1 * d2, sigma=sigma, observed=x1)
    b_draws = rng.normal(size=(1, 30, 3))
    idata = posterior({"b": b_draws})
    out = pm_sens.sensitivity(idata, model, mode="draw", interactions=True, progressbar=False)
    out = out["sensitivity"]
    assert list(out["feature"].values) == ["x1", "x2"]
    b12 = np.abs(b_draws[0, :, 2])
    r2 = out["rsens2"].values[0]
    np.testing.assert_allclose(r2[:, :, 0, 1], np.repeat(b12[:, None], n, 1) / sigma, rtol=1e-10)
    np.testing.assert_allclose(r2[:, :, 1, 0], r2[:, :, 0, 1])
    np.testing.assert_allclose(r2[:, :, 0, 0], 0, atol=1e-12)
    # first order: ∂μ/∂x1 = b1 + b12 x2
    expected = np.abs(b_draws[0, :, 0, None] + b_draws[0, :, 2, None] * x2) / sigma
    np.testing.assert_allclose(out["rsens"].values[0, :, :, 0], expected, rtol=1e-10)


def test_heteroscedastic_normal_pins_the_mean_variance_parametrization(rng):
    """σ = exp(γx): per draw R-sens² = β²/v + 2γ², R-sens2 = 2√2 γ² in (mean, variance)
    (it would be √2 γ² in (mean, sd))."""
    x = rng.normal(size=15)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        beta = pm.Normal("beta")
        gamma = pm.Normal("gamma")
        pm.Normal("y", mu=beta * xd, sigma=pm.math.exp(gamma * xd), observed=x)
    draws = {"beta": rng.normal(size=(1, 10)), "gamma": rng.normal(0, 0.5, size=(1, 10))}
    out = pm_sens.sensitivity(
        posterior(draws), model, mode="draw", interactions=True, progressbar=False
    )["sensitivity"]
    b, g = draws["beta"][0][:, None], draws["gamma"][0][:, None]
    v = np.exp(2 * g * x)
    np.testing.assert_allclose(out["rsens"].values[0, :, :, 0], np.sqrt(b**2 / v + 2 * g**2))
    np.testing.assert_allclose(
        out["rsens2"].values[0, :, :, 0, 0], np.broadcast_to(2 * np.sqrt(2) * g**2, (10, 15))
    )


@pytest.mark.parametrize("mode", ["moment", "draw"])
def test_alpha_scales_by_its_square_root(rng, mode):
    model, idata, *_ = _logistic(rng)
    one = pm_sens.sensitivity(
        idata, model, mode=mode, progressbar=False, extend_inferencedata=False
    )
    two = pm_sens.sensitivity(
        idata, model, mode=mode, alpha=2.5, progressbar=False, extend_inferencedata=False
    )
    np.testing.assert_allclose(
        two["sensitivity"]["rsens"].values, np.sqrt(2.5) * one["sensitivity"]["rsens"].values
    )
    assert two["sensitivity"].attrs["alpha"] == 2.5


def test_saturated_probabilities_stay_exact(rng):
    """A logit of 40 rounds p to 1.0 and -800 to 0: R-sens is still
    |b| sqrt(σ(η)σ(−η)) = |b| e^{-|η|/2}/(1 + e^{-|η|}): per draw on the logit,
    in moment mode from the mixture's 1 − p kept as its own column."""
    x = np.array([0.0, 40.0, -800.0])
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        pm.Bernoulli("y", logit_p=b * xd, observed=[0, 1, 0])
    idata = posterior({"b": np.ones((1, 3))})
    expected = np.exp(-np.abs(x) / 2) / (1 + np.exp(-np.abs(x)))
    out = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)["sensitivity"]
    np.testing.assert_allclose(out["rsens"].values.reshape(-1, 3), np.tile(expected, (3, 1)))
    assert expected[2] > 0
    # the mixture's p = e^-800 underflows: moment mode says so and gives 0 there
    with pytest.warns(UserWarning, match="too close to 0 or 1 .* 1 evaluation.*point 2") as record:
        out = pm_sens.sensitivity(idata, model, progressbar=False)["sensitivity"]
    assert record[0].filename == __file__  # attributed to the caller's line
    np.testing.assert_allclose(out["rsens"].values[:, 0], [*expected[:2], 0.0])


def test_draw_mode_rsens_and_rsens2_whiten_each_chunk_once(monkeypatch):
    """A negative binomial's α information is a sum over each row's counts: draw-mode
    R-sens and R-sens2 take it once per chunk (one chunk here), not once per order.
    R-sens of the one input is sqrt(I_μμ (∂μ)² + I_αα (∂α)²) with μ = e^{1 + b x},
    α = e^{0.5 + g x}, I_μμ = 1/(μ(1 + μ/α)) and I_αα = Σ_k P(Y > k)/(α + k)² −
    μ/(α(α + μ)) from SciPy's survival function."""
    x = np.linspace(-1, 1, 12)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        g = pm.Normal("g")
        pm.NegativeBinomial(
            "y",
            mu=pm.math.exp(1 + b * xd),
            alpha=pm.math.exp(0.5 + g * xd),
            observed=np.ones(12),
        )
    draws = {"b": np.array([[0.4, -0.7]]), "g": np.array([[0.3, -0.5]])}
    calls = []
    information = negative_binomial.alpha_information
    monkeypatch.setattr(
        negative_binomial,
        "alpha_information",
        lambda m, a, *rest: calls.append(np.shape(m)) or information(m, a, *rest),
    )
    out = pm_sens.sensitivity(
        posterior(draws),
        model,
        mode="draw",
        interactions=True,
        progressbar=False,
        extend_inferencedata=False,
    )["sensitivity"]
    assert len(calls) == 1
    b, g = draws["b"][0][:, None], draws["g"][0][:, None]
    mu, a = np.exp(1 + b * x), np.exp(0.5 + g * x)
    k = np.arange(400)[:, None, None]
    i_aa = (stats.nbinom.sf(k, a, a / (a + mu)) / (a + k) ** 2).sum(0) - mu / (a * (a + mu))
    expected = np.sqrt((b * mu) ** 2 / (mu * (1 + mu / a)) + i_aa * (g * a) ** 2)
    np.testing.assert_allclose(out["rsens"].values.reshape(2, 12), expected, rtol=1e-10)
    assert np.isfinite(out["rsens2"].values).all()


@pytest.mark.parametrize("dispersion", ["varying", "constant"])
def test_negative_binomial_rsens2_is_taken_in_mean_and_variance(dispersion):
    """Draw-mode R-sens2 of PyMC's NB(μ, α) is that of (m, v = μ + μ²/α): the
    Hessians of m and v in x (closed forms of the exponentials below) under the
    (m, v) information ``Jᵀ diag(I_μμ, I_αα) J``, J = ∂(μ, α)/∂(m, v), with
    I_αα from SciPy's survival function (as above). v moves with μ where α is
    constant too. With one draw, moment mode — its (m, v) family — agrees."""
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (15, 2))
    g_true = 0.6 if dispersion == "varying" else 0.0
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b, c = pm.Normal("b"), pm.Normal("c")
        eta = 1 + b * xd[:, 0] + c * xd[:, 0] * xd[:, 1]
        log_alpha = 0.5 + g_true * xd[:, 1]
        pm.NegativeBinomial(
            "y", mu=pm.math.exp(eta), alpha=pm.math.exp(log_alpha), observed=np.ones(15)
        )
    b, c = 0.7, -0.9
    idata = posterior({"b": np.array([[b]]), "c": np.array([[c]])})
    calls = [
        pm_sens.sensitivity(idata, model, mode=mode, interactions=True, progressbar=False)[
            "sensitivity"
        ]["rsens2"].values.reshape(15, 2, 2)
        for mode in ("draw", "moment")
    ]
    x0, x1 = x[:, 0], x[:, 1]
    eta, log_alpha = 1 + b * x0 + c * x0 * x1, 0.5 + g_true * x1
    mu, a = np.exp(eta), np.exp(log_alpha)

    def exp_hessian(value, grad, hess):  # ∂²e^f = e^f (∂f ∂fᵀ + ∂²f)
        return value[:, None, None] * (grad[:, :, None] * grad[:, None, :] + hess)

    grad_eta = np.stack([b + c * x1, c * x0], -1)
    hess_eta = np.broadcast_to(np.array([[0.0, c], [c, 0.0]]), (15, 2, 2))
    grad_k = 2 * grad_eta - np.array([0.0, g_true])  # k = 2η − log α: μ²/α = e^k
    hess_m = exp_hessian(mu, grad_eta, hess_eta)
    hess_v = hess_m + exp_hessian(mu**2 / a, grad_k, 2 * hess_eta)
    k = np.arange(400)[:, None]
    i_aa = (stats.nbinom.sf(k, a, a / (a + mu)) / (a + k) ** 2).sum(0) - mu / (a * (a + mu))
    i_mm = 1 / (mu * (1 + mu / a))
    jac = np.zeros((15, 2, 2))  # rows (μ, α), columns (m, v)
    jac[:, 0, 0] = 1
    jac[:, 1, 0], jac[:, 1, 1] = 2 * a / mu + (a / mu) ** 2, -((a / mu) ** 2)
    info = np.einsum("nim,ni,nik->nmk", jac, np.stack([i_mm, i_aa], -1), jac)
    hessians = np.stack([hess_m, hess_v], -1)  # (N, D, D, 2)
    expected = np.sqrt(np.einsum("ndem,nmk,ndek->nde", hessians, info, hessians))
    np.testing.assert_allclose(calls[0], expected, rtol=1e-10)
    np.testing.assert_allclose(calls[1], calls[0], rtol=1e-10)

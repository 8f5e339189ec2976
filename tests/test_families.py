"""Closed-form Fisher information of every family against an independent estimate:
E[s sᵀ] by quadrature (or summation) of scores obtained by finite differences
of scipy's log densities in the mean–variance parametrization."""

import importlib
import pkgutil
from itertools import pairwise

import numpy as np
import pytest
from scipy import integrate, special, stats

from pm_sens import families
from pm_sens.families import negative_binomial, poisson
from pm_sens.families._base import Family, softplus
from tests.test_renyi import _continuous_renyi


def _normal(phi):
    return stats.norm(phi[0], np.sqrt(phi[1]))


def _laplace(phi):
    return stats.laplace(phi[0], np.sqrt(phi[1] / 2))


def _lognormal(phi):
    s = np.log1p(phi[1] / phi[0] ** 2)
    return stats.lognorm(s=np.sqrt(s), scale=np.exp(np.log(phi[0]) - s / 2))


def _gamma(phi):
    return stats.gamma(phi[0] ** 2 / phi[1], scale=phi[1] / phi[0])


def _beta(phi):
    kappa = phi[0] * (1 - phi[0]) / phi[1] - 1
    return stats.beta(phi[0] * kappa, (1 - phi[0]) * kappa)


def _nb_mean_variance(phi):
    alpha = phi[0] ** 2 / (phi[1] - phi[0])
    return stats.nbinom(alpha, alpha / (alpha + phi[0]))


def _nb_mean_alpha(phi):
    return stats.nbinom(phi[1], phi[1] / (phi[1] + phi[0]))


def _studentt(phi):
    return stats.t(phi[2], phi[0], np.sqrt(phi[1]))


CONTINUOUS = [
    (families.MOMENT_FAMILIES["normal"], _normal, [1.3, 0.7]),
    (families.MOMENT_FAMILIES["laplace"], _laplace, [-0.4, 2.1]),
    (families.MOMENT_FAMILIES["lognormal"], _lognormal, [2.0, 1.5]),
    (families.MOMENT_FAMILIES["gamma"], _gamma, [3.0, 2.0]),
    (families.MOMENT_FAMILIES["beta"], _beta, [0.3, 0.02]),
    (families.MOMENT_FAMILIES["exponential"], lambda phi: stats.expon(scale=phi[0]), [1.7]),
    (families.STUDENTT, _studentt, [0.5, 1.4, 4.5]),
    (families.STUDENTT, _studentt, [0.5, 1.4, 1.5]),  # no variance: ν <= 2
    (
        families.MOMENT_FAMILIES["studentt"],
        lambda phi: stats.t(1 / phi[2], phi[0], np.sqrt(phi[1])),
        [-0.3, 2.2, 1 / 1.2],
    ),
    (families.NORMAL_MEAN_SD, lambda phi: stats.norm(phi[0], phi[1]), [1.3, 0.8]),
    (families.WEIBULL, lambda phi: stats.weibull_min(phi[0], scale=phi[1]), [1.7, 2.5]),
    (families.WEIBULL, lambda phi: stats.weibull_min(phi[0], scale=phi[1]), [0.6, 0.3]),
    (families.GUMBEL, lambda phi: stats.gumbel_r(phi[0], phi[1]), [-0.8, 1.9]),
    (families.LOGISTIC, lambda phi: stats.logistic(phi[0], phi[1]), [0.4, 1.3]),
    (families.WALD, lambda phi: stats.invgauss(phi[0] / phi[1], scale=phi[1]), [1.5, 2.0]),
    # 2λ/μ = 160: E[log y]'s e^z E₁(z) by its asymptotic series
    (families.WALD, lambda phi: stats.invgauss(phi[0] / phi[1], scale=phi[1]), [0.5, 40.0]),
    (
        families.GAMMA_MEAN_SHAPE,
        lambda phi: stats.gamma(phi[1], scale=phi[0] / phi[1]),
        [3.0, 4.5],
    ),
]
DISCRETE = [
    (families.MOMENT_FAMILIES["bernoulli"], lambda phi: stats.bernoulli(phi[0]), [0.3], {}),
    (
        families.MOMENT_FAMILIES["binomial"],
        lambda phi: stats.binom(7, phi[0]),
        [0.35],
        {"n": np.array(7.0)},
    ),
    (families.MOMENT_FAMILIES["poisson"], lambda phi: stats.poisson(phi[0]), [3.2], {}),
    (families.MOMENT_FAMILIES["negative_binomial"], _nb_mean_variance, [3.0, 7.5], {}),
    (families.NEGATIVE_BINOMIAL_MEAN_ALPHA, _nb_mean_alpha, [4.0, 2.5], {}),
    (
        families.BERNOULLI_LOGIT,
        lambda phi: stats.bernoulli(1 / (1 + np.exp(-phi[0]))),
        [0.7],
        {},
    ),
    (
        families.BINOMIAL_LOGIT,
        lambda phi: stats.binom(7, 1 / (1 + np.exp(-phi[0]))),
        [-0.4],
        {"n": np.array(7.0)},
    ),
    (
        families.BETA_BINOMIAL,
        lambda phi: stats.betabinom(23, phi[0], phi[1]),
        [2.5, 0.8],
        {"n": np.array(23.0)},
    ),
]


def _truncated_normal(lower, upper):
    def make(phi):
        mu, sigma = phi
        return stats.truncnorm((lower - mu) / sigma, (upper - mu) / sigma, mu, sigma)

    return make


#: continuous families with fixed truncation bounds
TRUNCATED = [
    (families.TRUNCATED_NORMAL, _truncated_normal(low, high), phi, {"lower": low, "upper": high})
    for phi, low, high in [
        ([0.3, 1.2], -0.5, 0.9),
        ([1.0, 0.8], 0.0, np.inf),
        ([-2.0, 1.0], 0.5, 4.0),  # 2.5 sds into the upper tail
        ([3.0, 0.5], -np.inf, 1.0),  # 4 sds into the lower tail
    ]
]
CONTINUOUS_FIXED = [(f, make, phi, {}) for f, make, phi in CONTINUOUS] + TRUNCATED
ALL_FAMILIES = CONTINUOUS_FIXED + DISCRETE


def _breaks(*dists):
    """Quantiles that split a quadrature so it finds the bulk of heavy-tailed laws too."""
    levels = [1e-8, 1e-4, 0.01, 0.25, 0.5, 0.75, 0.99, 1 - 1e-4, 1 - 1e-8]
    return sorted({float(y) for d in dists for y in d.ppf(levels)})


def _expectation_by_quantiles(dist, f):
    """``E f(y) = ∫₀¹ f(F⁻¹(u)) du``: heavy tails become (integrable) log ends."""
    return integrate.quad(
        lambda u: f(dist.ppf(u)), 0, 1, points=[1e-6, 0.5, 1 - 1e-6], epsrel=1e-12, limit=400
    )[0]


def _steps(phi):
    """The central differences' step in each component of phi."""
    return [1e-5 * max(abs(value), 1e-3) for value in phi]


def _scores(logpdf, make, phi, y):
    """Central finite-difference score of the log density in each component of phi."""
    out = []
    for k, h in enumerate(_steps(phi)):
        up, down = np.array(phi, float), np.array(phi, float)
        up[k] += h
        down[k] -= h
        out.append((logpdf(make(up), y) - logpdf(make(down), y)) / (2 * h))
    return out


@pytest.mark.parametrize(
    ("family", "make", "phi", "fixed"), CONTINUOUS_FIXED, ids=lambda x: getattr(x, "name", "")
)
def test_continuous_fisher_matches_quadrature(family, make, phi, fixed):
    dist = make(np.array(phi, float))
    lo, hi = dist.ppf(1e-13), dist.ppf(1 - 1e-13)
    m = len(phi)
    pairs = [(a, b) for a in range(m) for b in range(a, m)]
    shifted = [make(np.array(phi, float) + step) for step in np.diag(_steps(phi))]
    lowered = [make(np.array(phi, float) - step) for step in np.diag(_steps(phi))]

    def integrand(y):
        """Every entry ``p s_a s_b`` at once, the scores by central differences."""
        s = [
            (up.logpdf(y) - down.logpdf(y)) / (2 * h)
            for up, down, h in zip(shifted, lowered, _steps(phi), strict=True)
        ]
        return dist.pdf(y) * np.array([s[a] * s[b] for a, b in pairs])

    entries = integrate.quad_vec(
        integrand, lo, hi, points=_breaks(dist), limit=400, epsrel=1e-10, norm="max"
    )[0]
    expected = np.empty((m, m))
    for (a, b), value in zip(pairs, entries, strict=True):
        expected[a, b] = expected[b, a] = value
    got = family.fisher_information(np.array([phi], float), **fixed)[0]
    np.testing.assert_allclose(got, expected, rtol=2e-5, atol=1e-8 * np.abs(expected).max())


@pytest.mark.parametrize(
    ("family", "make", "phi", "fixed"), DISCRETE, ids=lambda x: getattr(x, "name", "")
)
def test_discrete_fisher_matches_summation(family, make, phi, fixed):
    dist = make(np.array(phi, float))
    y = np.arange(int(dist.ppf(1 - 1e-15)) + 1)
    s = np.array(_scores(lambda d, v: d.logpmf(v), make, phi, y))
    expected = np.einsum("ay,by,y->ab", s, s, dist.pmf(y))
    got = family.fisher_information(np.array([phi], float), **fixed)[0]
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-9 * np.abs(expected).max())


def test_categorical_fisher_is_the_simplex_information():
    # KL between nearby categoricals: KL(p||p+δu) ≈ ½ δ² uᵀ I u for u on the simplex
    p = np.array([0.2, 0.5, 0.3])
    u = np.array([1.0, -0.4, -0.6])
    delta = 1e-4
    q = p + delta * u
    kl = np.sum(p * np.log(p / q))
    quad = u @ families.MOMENT_FAMILIES["categorical"].fisher_information(p[None])[0] @ u
    np.testing.assert_allclose(kl, 0.5 * delta**2 * quad, rtol=1e-3)


def test_negative_binomial_alpha_information_of_cells_of_every_width():
    """Cells of means 0 to 5,000 and α 0.3 to 10⁶ in one call, each summed to its own
    tail: against ``Σ_k P(Y > k)/(α + k)² − m/(α(α + m))`` (−E of the score's
    derivative, from SciPy's survival function) to 1e-12, and to 1e-5 of α's
    Poisson-limit form ``m²/(2α⁴)`` where that identity cancels."""
    rng = np.random.default_rng(3)
    m = np.concatenate([[0.0, 1e-3, 0.5, 5000.0], np.exp(rng.normal(np.log(112), 1.2, 300))])
    a = np.concatenate([[1.0, 2.0, 0.3, 0.5], np.exp(rng.normal(np.log(2), 1.0, 300))])
    got = negative_binomial.alpha_information(m, a)
    expected = []
    for mean, alpha in zip(m, a, strict=True):
        law = stats.nbinom(alpha, alpha / (alpha + mean))
        k = np.arange(int(law.isf(1e-18)) + 100)
        expected.append(np.sum(law.sf(k) / (alpha + k) ** 2) - mean / (alpha * (alpha + mean)))
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)
    far = negative_binomial.alpha_information(np.array([40.0, 3.0]), np.array([1e8, 1e6]))
    np.testing.assert_allclose(far, [40.0**2 / (2 * 1e8**4), 3.0**2 / (2 * 1e6**4)], rtol=1e-5)


def test_negative_binomial_is_poisson_without_overdispersion():
    info = negative_binomial.fisher_information(np.array([[2.5, 2.5], [2.5, 2.0]]))
    np.testing.assert_allclose(info, [[[0.4, 0], [0, 0]]] * 2)


def test_negative_binomial_kl_between_poissons_is_poissons_without_a_warning():
    """Two laws without overdispersion (v <= m: α infinite) are Poissons: their KL is
    ``m₁ log(m₁/m₂) + m₂ − m₁``, with no floating-point warning on the way."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = negative_binomial.kl_divergence(np.array([2.0, 1.5]), np.array([2.6, 2.6]))
    np.testing.assert_allclose(got, 2.0 * np.log(2.0 / 2.6) + 0.6, rtol=1e-12)


def test_negative_binomial_information_is_continuous_at_the_poisson_limit():
    m = 3.0
    near = negative_binomial.fisher_information(np.array([[m, m * (1 + 1e-7)]]))[0]
    limit = negative_binomial.fisher_information(np.array([[m, m * (1 + 1e-13)]]))[0]
    c = 1 / (2 * m**2)
    np.testing.assert_allclose(limit, [[1 / m + c, -c], [-c, c]])
    np.testing.assert_allclose(near, limit, rtol=1e-5)


def test_families_are_batched():
    phi = np.stack([np.linspace(1, 2, 6).reshape(2, 3), np.full((2, 3), 0.5)], -1)
    info = families.MOMENT_FAMILIES["gamma"].fisher_information(phi)
    assert info.shape == (2, 3, 2, 2)
    np.testing.assert_allclose(
        info[1, 2], families.MOMENT_FAMILIES["gamma"].fisher_information(phi[1, 2][None])[0]
    )


@pytest.mark.parametrize(
    ("family", "make", "phi", "fixed"), ALL_FAMILIES, ids=lambda x: getattr(x, "name", "")
)
def test_kl_divergence_matches_numeric_integration(family, make, phi, fixed):
    phi_p = np.array(phi, float)
    phi_q = phi_p * (1 + 0.05 * np.array([1, -1, 1][: len(phi)]))
    p, q = make(phi_p), make(phi_q)
    if hasattr(p, "pdf"):
        expected = _expectation_by_quantiles(p, lambda y: p.logpdf(y) - q.logpdf(y))
    else:
        y = np.arange(int(p.ppf(1 - 1e-15)) + 1)
        expected = np.sum(p.pmf(y) * (p.logpmf(y) - q.logpmf(y)))
    got = family.kl_divergence(phi_p[None], phi_q[None], **fixed)[0]
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert family.kl_divergence(phi_p[None], phi_p[None], **fixed)[0] == pytest.approx(
        0, abs=1e-14
    )


@pytest.mark.parametrize("phi_q", [[40.0, 300.0], [0.4, 0.9]], ids=["larger", "smaller"])
def test_negative_binomial_kl_between_distant_laws(phi_q):
    """A level change moves the predictive far: q may put its mass beyond p's support."""
    family = families.MOMENT_FAMILIES["negative_binomial"]
    phi_p = np.array([2.0, 5.0])
    p, q = _nb_mean_variance(phi_p), _nb_mean_variance(np.array(phi_q))
    y = np.arange(20_000)
    expected = np.sum(p.pmf(y) * (p.logpmf(y) - q.logpmf(y)))
    got = family.kl_divergence(phi_p[None], np.array(phi_q)[None])[0]
    np.testing.assert_allclose(got, expected, rtol=1e-10)


@pytest.mark.parametrize(
    ("m1", "m2", "alpha"),
    [
        (500.0, 500.5, 3.0),
        (500.0, 620.0, 3.0),
        (2.0, 40.0, 7.0),
        (30.0, 0.3, 1e-3),
        (1.5, 1.2, 1e6),
    ],
)
def test_negative_binomial_kl_with_a_shared_alpha_is_scipys_sum(m1, m2, alpha):
    """One α in both laws (an input's step under a global dispersion): the closed form
    equals SciPy's direct sum over the counts, near and far."""
    p = stats.nbinom(alpha, alpha / (alpha + m1))
    q = stats.nbinom(alpha, alpha / (alpha + m2))
    y = np.arange(int(p.isf(1e-18)) + 1)
    expected = np.sum(p.pmf(y) * (p.logpmf(y) - q.logpmf(y)))
    got = negative_binomial.kl_divergence_mean_alpha(
        np.array([[m1, alpha]]), np.array([[m2, alpha]])
    )[0]
    np.testing.assert_allclose(got, expected, rtol=1e-9)


def test_negative_binomial_kl_with_a_shared_alpha_is_quadratic_in_a_small_step():
    """A step too small for a sum to resolve (KL ~ 1e-13): ½ d² I(m), I = α/(m(m + α))."""
    m, alpha, d = 4.0, 0.5, 4e-6
    got = negative_binomial.kl_divergence_mean_alpha(
        np.array([[m, alpha]]), np.array([[m + d, alpha]])
    )[0]
    np.testing.assert_allclose(got, 0.5 * d**2 * alpha / (m * (m + alpha)), rtol=1e-5)


@pytest.mark.parametrize(
    ("family", "phi"),
    [
        (families.MOMENT_FAMILIES["gamma"], [25.0, 14.0]),  # shape 45
        (families.MOMENT_FAMILIES["gamma"], [0.3, 2.0]),  # shape 0.045
        (families.GAMMA_MEAN_SHAPE, [3.0, 2000.0]),
    ],
    ids=["gamma", "gamma-small-shape", "gamma-mean-shape"],
)
@pytest.mark.parametrize("step", [1e-4, 1e-6, 1e-8])
def test_gamma_kl_is_quadratic_in_a_small_step(family, phi, step):
    """Steps too small for log Γ differences to resolve (a moment-matched Gamma's
    finite-difference KL): ``KL(φ ‖ φ ± δ) ≈ ½ δᵀ I δ``, the odd orders cancelling
    in the sum of both sides; the shapes' log Γ terms by their Taylor series."""
    phi = np.array(phi)
    u = np.array([1.0, -0.7]) * step * phi
    both = sum(family.kl_divergence(phi[None], (phi + s * u)[None])[0] for s in (1, -1))
    info = family.fisher_information(phi[None])[0]
    np.testing.assert_allclose(both, u @ info @ u, rtol=1e-6)


@pytest.mark.parametrize(
    ("eta_p", "eta_q"),
    [(-20.0, 20.0), (0.0, 40.0), (20.0, -20.0), (-40.0, 40.0), (3.0, 2.5), (0.3, 0.2), (5.0, 5.0)],
)
def test_bernoulli_kl_by_logits_is_exact_for_any_distance(eta_p, eta_q):
    """Levels far apart: p rounded to 1 made the KL infinite; from the log masses
    it is finite, equal to SciPy's relative entropy of exactly computed masses."""
    from pm_sens.families import bernoulli

    got = bernoulli.kl_divergence_logit(np.array([[eta_p]]), np.array([[eta_q]]))[0]
    log_p = stats.logistic.logcdf([eta_p, -eta_p])  # log σ(η), log σ(−η), exact in the tails
    log_q = stats.logistic.logcdf([eta_q, -eta_q])
    expected = np.sum(np.exp(log_p) * (log_p - log_q))
    assert np.isfinite(got)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(
    ("family", "make", "phi", "fixed"), ALL_FAMILIES, ids=lambda x: getattr(x, "name", "")
)
def test_kl_hessian_is_the_fisher_information(family, make, phi, fixed):
    """KL(φ ‖ φ + δu) = ½ δ² uᵀ I u + O(δ³): check along each axis and a diagonal."""
    phi_p = np.array(phi, float)
    info = family.fisher_information(phi_p[None], **fixed)[0]
    for u in [*np.eye(len(phi)), np.ones(len(phi)) / np.sqrt(len(phi))]:
        delta = 1e-4 * np.abs(phi_p).min()
        kl = family.kl_divergence(phi_p[None], (phi_p + delta * u)[None], **fixed)[0]
        kl += family.kl_divergence(phi_p[None], (phi_p - delta * u)[None], **fixed)[0]
        np.testing.assert_allclose(kl / delta**2, u @ info @ u, rtol=1e-4)


def test_categorical_kl():
    p, q = np.array([0.2, 0.5, 0.3]), np.array([0.25, 0.45, 0.3])
    got = families.MOMENT_FAMILIES["categorical"].kl_divergence(p[None], q[None])[0]
    np.testing.assert_allclose(got, np.sum(p * np.log(p / q)), rtol=1e-12)


@pytest.mark.parametrize(
    ("family", "make", "phi", "fixed"), CONTINUOUS_FIXED, ids=lambda x: getattr(x, "name", "")
)
def test_entropy_and_density_of_continuous_families(family, make, phi, fixed):
    phi_a = np.array(phi, float)
    dist = make(phi_a)
    expected = _expectation_by_quantiles(dist, lambda y: -dist.logpdf(y))
    np.testing.assert_allclose(family.entropy(phi_a[None], **fixed)[0], expected, rtol=1e-7)
    y = dist.ppf([1e-9, 0.1, 0.5, 0.9, 1 - 1e-9])
    np.testing.assert_allclose(
        family.log_density(phi_a[None], y[:, None], **fixed)[:, 0], dist.logpdf(y)
    )


@pytest.mark.parametrize(
    ("family", "make", "phi", "fixed"), DISCRETE, ids=lambda x: getattr(x, "name", "")
)
def test_density_and_support_of_discrete_families(family, make, phi, fixed):
    phi_a = np.array(phi, float)[None]
    top = int(family.support_upper(phi_a, 1e-12, **fixed)[0])
    y = np.arange(top + 1)
    logp = family.log_density(phi_a, y[:, None], **fixed)[:, 0]
    np.testing.assert_allclose(logp, make(phi_a[0]).logpmf(y), rtol=1e-12)
    assert 1 - np.exp(logp).sum() < 1e-11


def _beta_binomial_pmf_exactly(k, n, a, b):
    """``C(n, k) Π_{j<k}(a + j) Π_{j<n−k}(b + j) / Π_{j<n}(a + b + j)`` in rationals."""
    from fractions import Fraction
    from math import comb, prod

    if k > n:
        return 0.0
    a, b = Fraction(a), Fraction(b)
    value = comb(n, k) * prod(a + j for j in range(k)) * prod(b + j for j in range(n - k))
    return float(value / prod(a + b + j for j in range(n)))


def test_beta_binomial_pmf_table_by_its_ratio_is_exact():
    """Rows of 0, 1, 12 and 60 trials and shapes from 1e-3 to 1e4 (p(0) below 1e-300
    at α = 1e4, β = 1e-3): the pmf from the ratio p(k + 1)/p(k) equals the pmf in
    exact rational arithmetic (SciPy's is within 4e-11 of it, ours within 2e-11:
    log Γ of 1e4 carries 1e-11), 0 past each row's trials; the entropy is its
    ``Σ −p log p`` (to 3e-11 absolute where it is near 0: a pmf near 1 off by 2e-11)."""
    shapes = [1e-3, 0.4, 3.0, 1e4]
    rows = [(n, a, b) for a in shapes for b in shapes for n in (0, 1, 12, 60)]
    n, a, b = (np.array(column, float) for column in zip(*rows, strict=True))
    pmf, entropy = families.BETA_BINOMIAL.pmf_table(np.stack([a, b], -1), n=n)
    assert len(pmf) == 61
    expected = np.array(
        [[_beta_binomial_pmf_exactly(k, int(t), x, y) for t, x, y in rows] for k in range(61)]
    )
    np.testing.assert_allclose(np.stack(pmf), expected, rtol=3e-11, atol=1e-290)
    assert np.all(np.stack(pmf)[np.arange(61)[:, None] > n] == 0)
    np.testing.assert_allclose(entropy, special.entr(expected).sum(0), rtol=3e-11, atol=3e-11)


def _zero_modified_pmf(base, hurdle):
    """pmf of the zero-inflated (or hurdle) law on a SciPy base law, written out."""

    def pmf(phi, k):
        psi, law = phi[0], base(phi[1:])
        if hurdle:
            return np.where(k == 0, 1 - psi, psi * law.pmf(k) / law.sf(0))
        return np.where(k == 0, 1 - psi + psi * law.pmf(0), psi * law.pmf(k))

    return pmf


@pytest.mark.parametrize(
    ("family", "pmf", "phi"),
    [
        (
            families.ZERO_INFLATED_POISSON,
            _zero_modified_pmf(lambda t: stats.poisson(t[0]), False),
            [0.7, 2.3],
        ),
        (
            families.HURDLE_POISSON,
            _zero_modified_pmf(lambda t: stats.poisson(t[0]), True),
            [0.4, 0.8],
        ),
        (
            families.ZERO_INFLATED_NEGATIVE_BINOMIAL,
            _zero_modified_pmf(_nb_mean_alpha, False),
            [0.6, 3.0, 1.7],
        ),
        (
            families.HURDLE_NEGATIVE_BINOMIAL,
            _zero_modified_pmf(_nb_mean_alpha, True),
            [0.8, 1.5, 4.0],
        ),
    ],
)
def test_zero_modified_families_against_scipy(family, pmf, phi):
    """Fisher information vs summed finite-difference scores of SciPy pmfs; log density,
    KL(p‖p) = 0 and KL against a direct sum."""
    phi = np.asarray(phi, dtype=float)
    k = np.arange(400)
    h = 1e-6
    scores = []
    for j in range(len(phi)):
        step = np.zeros_like(phi)
        step[j] = h * max(1.0, abs(phi[j]))
        with np.errstate(divide="ignore", invalid="ignore"):  # log 0 − log 0 where no mass
            up, down = np.log(pmf(phi + step, k)), np.log(pmf(phi - step, k))
            scores.append((up - down) / (2 * step[j]))
    p = pmf(phi, k)
    scores = np.where(p > 0, np.array(scores), 0.0)  # no mass, no score (log 0 − log 0)
    expected = np.einsum("k,ik,jk->ij", p, scores, scores)
    np.testing.assert_allclose(
        family.fisher_information(phi[None])[0], expected, rtol=1e-6, atol=1e-9
    )
    np.testing.assert_allclose(family.log_density(phi, k[:30]), np.log(p[:30]), rtol=1e-10)
    assert family.kl_divergence(phi[None], phi[None])[0] == 0
    other = phi * np.r_[0.9, np.full(len(phi) - 1, 1.2)]
    mass = p > 0
    direct = np.sum(p[mass] * (np.log(p[mass]) - np.log(pmf(other, k[mass]))))
    np.testing.assert_allclose(family.kl_divergence(phi[None], other[None])[0], direct, rtol=1e-8)


@pytest.mark.parametrize(
    ("family", "make", "phi"),
    [
        (families.HURDLE_LOGNORMAL, _lognormal, [0.7, 2.0, 1.5]),
        (
            families.HURDLE_GAMMA,
            lambda phi: stats.gamma(phi[1], scale=phi[0] / phi[1]),
            [0.4, 1.5, 2.5],
        ),
    ],
    ids=lambda x: getattr(x, "name", ""),
)
def test_continuous_hurdles_against_scipy(family, make, phi):
    """y = 0 with mass 1 − ψ, else SciPy's density times ψ: the Fisher information by
    quadrature of finite-difference scores (the zero's own term added), entropy,
    KL and Rényi divergences by ``quad`` over y > 0 plus the zero's term."""
    phi = np.asarray(phi, dtype=float)
    other = phi * np.r_[0.9, np.full(len(phi) - 1, 1.1)]

    frozen = {}  # SciPy's frozen laws, made once per parameter vector

    def log_p(theta, y):  # y > 0
        key = tuple(theta)
        if key not in frozen:
            frozen[key] = make(theta[1:])
        return np.log(theta[0]) + frozen[key].logpdf(y)

    def positive_integral(f):
        edges = [0.0, *_breaks(make(phi[1:])), np.inf]
        return sum(integrate.quad(f, a, b, limit=200)[0] for a, b in pairwise(edges))

    steps = [1e-6 * max(1.0, abs(value)) for value in phi]

    def shifted(j, sign):
        step = np.zeros_like(phi)
        step[j] = sign * steps[j]
        return phi + step

    def score(y):
        return np.array(
            [
                (log_p(shifted(j, 1), y) - log_p(shifted(j, -1), y)) / (2 * steps[j])
                for j in range(len(phi))
            ]
        )

    zero_score = np.r_[-1 / (1 - phi[0]), np.zeros(len(phi) - 1)]
    expected = (1 - phi[0]) * np.outer(zero_score, zero_score)
    edges = [0.0, *_breaks(make(phi[1:])), np.inf]
    expected += sum(
        integrate.quad_vec(
            lambda y: np.exp(log_p(phi, y)) * np.outer(score(y), score(y)), a, b, epsrel=1e-10
        )[0]
        for a, b in pairwise(edges)
    )
    np.testing.assert_allclose(
        family.fisher_information(phi[None])[0], expected, rtol=1e-6, atol=1e-9
    )
    y = np.array([0.0, 0.3, 2.0, -1.0])
    np.testing.assert_allclose(
        family.log_density(phi, y), [np.log1p(-phi[0]), *log_p(phi, y[1:3]), -np.inf]
    )
    entropy = -special.xlogy(1 - phi[0], 1 - phi[0]) - positive_integral(
        lambda y: np.exp(log_p(phi, y)) * log_p(phi, y)
    )
    np.testing.assert_allclose(family.entropy(phi[None])[0], entropy, rtol=1e-9)
    zero = (1 - phi[0]) * np.log((1 - phi[0]) / (1 - other[0]))
    kl = zero + positive_integral(
        lambda y: np.exp(log_p(phi, y)) * (log_p(phi, y) - log_p(other, y))
    )
    np.testing.assert_allclose(family.kl_divergence(phi[None], other[None])[0], kl, rtol=1e-8)
    assert family.kl_divergence(phi[None], phi[None])[0] == pytest.approx(0, abs=1e-15)
    for alpha in (0.4, 2.5):
        terms = (1 - phi[0]) ** alpha * (1 - other[0]) ** (1 - alpha) + positive_integral(
            lambda y, a=alpha: np.exp(a * log_p(phi, y) + (1 - a) * log_p(other, y))
        )
        np.testing.assert_allclose(
            family.renyi_divergence(phi[None], other[None], alpha)[0],
            np.log(terms) / (alpha - 1),
            rtol=1e-8,
        )


def test_censored_normal_against_scipy():
    """Fisher information from finite-difference scores of SciPy's logcdf/logpdf/logsf
    (masses at the bounds + quadrature between); KL and entropy the same way."""
    from scipy import integrate

    from pm_sens.families import censored_normal

    lower, upper = -0.5, 0.9
    phi, other = np.array([0.3, 1.2]), np.array([0.35, 1.1])

    def logp(theta, y):
        law = stats.norm(*theta)
        return (
            law.logcdf(lower) if y <= lower else law.logsf(upper) if y >= upper else law.logpdf(y)
        )

    def score(y, h=1e-6):
        return np.array(
            [(logp(phi + h * e, y) - logp(phi - h * e, y)) / (2 * h) for e in np.eye(2)]
        )

    def expect(f):
        masses = sum(np.exp(logp(phi, b)) * f(b) for b in (lower, upper))
        inner = integrate.quad_vec(
            lambda y: np.exp(logp(phi, y)) * f(y), lower, upper, epsabs=1e-13
        )
        return masses + inner[0]

    fisher = expect(lambda y: np.outer(score(y), score(y)))
    np.testing.assert_allclose(
        censored_normal.fisher_information(phi[None], lower, upper)[0], fisher, rtol=1e-7
    )
    kl = expect(lambda y: logp(phi, y) - logp(other, y))
    np.testing.assert_allclose(
        censored_normal.kl_divergence(phi, other, lower, upper), kl, rtol=1e-9
    )
    entropy = expect(lambda y: -logp(phi, y))
    np.testing.assert_allclose(censored_normal.entropy(phi, lower, upper), entropy, rtol=1e-9)
    # no censoring: the Normal's (μ, σ) information diag(1/σ², 2/σ²)
    np.testing.assert_allclose(
        censored_normal.fisher_information(phi[None], -np.inf, np.inf)[0],
        np.diag([1 / 1.44, 2 / 1.44]),
        rtol=1e-12,
    )


@pytest.mark.parametrize("z", [1e-6, 0.4, 1.99, 2.01, 2.99, 3.01, 9.0, 60.0])
def test_censored_weibull_log_moments_against_quadrature(z):
    """``∫_0^z u^n (log u)^j e^{−u} du`` by its series (z <= 3) and by the whole
    integral less a Gauss–Laguerre tail (z > 3), against ``quad``."""
    from scipy import integrate

    from pm_sens.families import censored_weibull

    expected = [
        [
            integrate.quad(
                lambda u, n=n, j=j: u**n * np.log(u) ** j * np.exp(-u), 0, z, epsabs=1e-15
            )[0]
            for n in range(3)
        ]
        for j in range(3)
    ]
    np.testing.assert_allclose(
        censored_weibull.log_moments(np.array(z)), expected, rtol=1e-10, atol=1e-16
    )
    # the entropy's and the KL's three, from elementary functions and Ein
    first = censored_weibull._first_moments(np.array(z))
    np.testing.assert_allclose(
        first, [expected[0][0], expected[1][0], expected[0][1]], rtol=1e-10, atol=1e-16
    )


@pytest.mark.parametrize(
    ("phi", "lower", "upper"),
    [((1.5, 2.0), -np.inf, 1.0), ((0.6, 1.0), 0.2, 3.0), ((4.0, 1.0), 0.3, np.inf)],
)
def test_censored_weibull_against_scipy(phi, lower, upper):
    """Fisher information from finite-difference scores of the censored log density
    written out (log CDF at l, log survival at u, log density between); KL,
    entropy and the Rényi divergence as expectations by ``quad`` with the
    masses added."""
    from scipy import integrate

    from pm_sens.families import censored_weibull

    phi, other = np.array(phi), np.array(phi) * np.array([1.1, 0.9])

    def logp(theta, y):
        k, scale = theta
        if y <= max(lower, 0) and lower > 0:
            return np.log(-np.expm1(-((lower / scale) ** k)))
        if y >= upper:
            return -((upper / scale) ** k)
        return np.log(k / scale) + (k - 1) * np.log(y / scale) - (y / scale) ** k

    def score(y, h=1e-6):
        return [(logp(phi + h * e, y) - logp(phi - h * e, y)) / (2 * h) for e in np.eye(2)]

    def expect(f):
        masses = sum(np.exp(logp(phi, b)) * f(b) for b in (lower, upper) if 0 < b < np.inf)
        cuts = [max(lower, 0), *(c * phi[1] for c in (1, 3) if c * phi[1] < upper), upper]
        inner = sum(
            integrate.quad_vec(lambda y: np.exp(logp(phi, y)) * f(y), a, b, epsabs=1e-14)[0]
            for a, b in zip(cuts, cuts[1:], strict=False)
        )
        return masses + inner

    fisher = expect(lambda y: np.outer(score(y), score(y)))
    np.testing.assert_allclose(
        censored_weibull.fisher_information(phi[None], lower, upper)[0], fisher, rtol=1e-8
    )
    kl = expect(lambda y: np.array(logp(phi, y) - logp(other, y)))
    np.testing.assert_allclose(
        censored_weibull.kl_divergence(phi, other, lower, upper), kl, rtol=1e-11
    )
    assert censored_weibull.kl_divergence(phi, phi, lower, upper) == pytest.approx(0, abs=1e-15)
    entropy = expect(lambda y: np.array(-logp(phi, y)))
    np.testing.assert_allclose(censored_weibull.entropy(phi, lower, upper), entropy, rtol=1e-11)
    # Rényi (0 < α < 1): ∫ p^α q^(1−α) over the interior and the masses' terms
    alpha = 0.4
    tilted = expect(lambda y: np.array(np.exp((1 - alpha) * (logp(other, y) - logp(phi, y)))))
    np.testing.assert_allclose(
        censored_weibull.renyi_divergence(phi, other, alpha, lower, upper),
        np.log(tilted) / (alpha - 1),
        rtol=1e-8,
    )


def test_censored_weibull_of_undefined_parameters_is_nan():
    """A draw whose shape or scale is nan (an overflowed linear predictor) gives nan
    partial moments, entropy and KL, and a Fisher information with nan on its
    diagonal, right-censored or not."""
    from pm_sens.families import censored_weibull

    assert np.isnan(censored_weibull._first_moments(np.array([np.nan]))).all()
    phi = np.array([[np.nan, 2.0], [1.5, np.nan]])
    upper = np.array([3.0, np.inf])
    assert np.isnan(censored_weibull.entropy(phi, 0.0, upper)).all()
    assert np.isnan(censored_weibull.kl_divergence(phi, np.ones(2), 0.0, upper)).all()
    information = censored_weibull.fisher_information(phi, 0.0, upper)
    assert np.isnan(np.diagonal(information, axis1=-2, axis2=-1)).any(-1).all()


def test_censored_weibull_without_bounds_is_the_weibull():
    """No bound: the Weibull's closed forms (Fisher information, entropy, KL)."""
    from pm_sens.families import censored_weibull, weibull

    phi = np.array([[1.5, 2.0], [0.7, 0.3]])
    other = phi * 1.2
    bounds = (-np.inf, np.inf)
    for name in ("fisher_information", "entropy"):
        np.testing.assert_allclose(
            getattr(censored_weibull, name)(phi, *bounds),
            getattr(weibull, name)(phi),
            rtol=1e-12,
        )
    np.testing.assert_allclose(
        censored_weibull.kl_divergence(phi, other, *bounds),
        weibull.kl_divergence(phi, other),
        rtol=1e-10,
    )


@pytest.mark.parametrize(
    ("family", "make", "phi", "fixed"),
    [f for f in ALL_FAMILIES if f[0].fisher_factors is not None],
    ids=lambda x: getattr(x, "name", ""),
)
def test_fisher_factors_rebuild_the_information(family, make, phi, fixed):
    """``diag(s) corr diag(s)`` is the information, and whitened derivatives give Jᵀ I J."""
    phi_a = np.array([phi, np.array(phi) * 1.3], float)
    scales, corr = family.fisher_factors(phi_a, list(range(len(phi))), **fixed)
    corr = np.eye(len(phi)) if corr is None else corr
    info = family.fisher_information(phi_a, **fixed)
    np.testing.assert_allclose(scales[..., :, None] * corr * scales[..., None, :], info, rtol=1e-9)
    jac = np.random.default_rng(0).normal(size=(len(phi), 2, 3))
    u, c = family.whitened(phi_a, list(jac), 1, **fixed)
    c = np.broadcast_to(np.eye(len(phi)), info.shape) if c is None else c
    form = np.einsum("ind,nij,jnd->nd", np.array(u), c, np.array(u))
    np.testing.assert_allclose(form, np.einsum("ind,nij,jnd->nd", jac, info, jac), rtol=1e-9)


#: every family whose scales a compiled graph computes (`Family.graph_scales`), and parameters
GRAPH_SCALED = [
    (families.MOMENT_FAMILIES["normal"], [0.3, 1.7]),
    (families.NORMAL_MEAN_SD, [0.3, 1.7]),
    (families.MOMENT_FAMILIES["poisson"], [2.5]),
    (families.MOMENT_FAMILIES["bernoulli"], [0.3]),
    (families.MOMENT_FAMILIES["bernoulli"], [0.3, 0.7]),  # 1 − p as its own column
    (families.BERNOULLI_LOGIT, [0.8]),
]


def test_every_family_with_graph_scales_is_checked():
    """`test_scales_written_for_a_graph_are_numpys` runs every such family."""
    found = set()
    for module in pkgutil.iter_modules(families.__path__):
        content = vars(importlib.import_module(f"pm_sens.families.{module.name}")).values()
        written = (f for f in content if isinstance(f, Family))
        found |= {id(f) for f in written if f.graph_scales(np, [], []) is not None}
    assert found == {id(f) for f, _ in GRAPH_SCALED}


@pytest.mark.parametrize(("family", "phi"), GRAPH_SCALED)
def test_scales_written_for_a_graph_are_numpys(family, phi):
    """`Family.graph_scales` in PyTensor, compiled, gives `Family.whitening`'s scales
    in NumPy (to rounding: PyTensor may reorder a product), at the family's
    parameters and at values that round off (a rate of 0, a probability of 0 or
    1, a logit whose cosh overflows)."""
    import pytensor
    import pytensor.tensor as pt

    rows = np.array([phi, np.array(phi) * 1.3, np.zeros(len(phi)), np.full(len(phi), 1.0)])
    if family is families.BERNOULLI_LOGIT:
        rows[2:, 0] = [1500.0, -1500.0]
    given = list(range(len(family.parameters)))
    columns = [pt.vector(f"phi{m}") for m in range(len(phi))]
    scales = family.graph_scales(pt, columns, given)
    function = pytensor.function(columns, scales, on_unused_input="ignore")
    got = np.stack(function(*rows.T), -1)
    with np.errstate(divide="ignore"):
        expected, _ = family.whitening(rows, given)
    np.testing.assert_allclose(got, expected, rtol=1e-15)  # the same to rounding


def _mean_variance_hessian(to_mean_variance, phi, jac, hess):
    """Chain rule by finite differences of the map ψ -> (mean, variance)."""
    h = 1e-4
    k = len(phi)
    grad = np.empty((len(to_mean_variance(phi)), k))
    second = np.empty((len(grad), k, k))
    for a in range(k):
        e = np.eye(k)[a] * h
        grad[:, a] = (to_mean_variance(phi + e) - to_mean_variance(phi - e)) / (2 * h)
        for b in range(k):
            f = np.eye(k)[b] * h
            second[:, a, b] = (
                to_mean_variance(phi + e + f)
                - to_mean_variance(phi + e - f)
                - to_mean_variance(phi - e + f)
                + to_mean_variance(phi - e - f)
            ) / (4 * h**2)
    return np.einsum("ma,a...->m...", grad, hess) + np.einsum("mab,ad,be->mde", second, jac, jac)


@pytest.mark.parametrize(
    ("family", "moment_family", "to_mean_variance", "phi", "fixed"),
    [
        (
            families.NORMAL_MEAN_SD,
            families.MOMENT_FAMILIES["normal"],
            lambda p: np.array([p[0], p[1] ** 2]),
            [0.4, 1.7],
            {},
        ),
        (
            families.GAMMA_MEAN_SHAPE,
            families.MOMENT_FAMILIES["gamma"],
            lambda p: np.array([p[0], p[0] ** 2 / p[1]]),
            [2.5, 3.5],
            {},
        ),
        (
            families.BERNOULLI_LOGIT,
            families.MOMENT_FAMILIES["bernoulli"],
            lambda p: np.array([1 / (1 + np.exp(-p[0]))]),
            [0.8],
            {},
        ),
        (
            families.BINOMIAL_LOGIT,
            families.MOMENT_FAMILIES["binomial"],
            lambda p: np.array([1 / (1 + np.exp(-p[0]))]),
            [-1.1],
            {"n": np.array([5.0])},
        ),
    ],
    ids=lambda x: getattr(x, "name", ""),
)
@pytest.mark.parametrize("varying", ["all", "first"])
def test_second_order_is_in_the_mean_variance_parametrization(
    family, moment_family, to_mean_variance, phi, fixed, varying
):
    """R-sens2 of a family kept in a stable parametrization equals R-sens2 of the
    same law in (mean, variance), the parametrization SPEC §3 pins."""
    rng = np.random.default_rng(1)
    phi = np.array(phi)
    d = 3
    jac = rng.normal(size=(len(phi), d))
    hess = rng.normal(size=(len(phi), d, d))
    hess = hess + np.swapaxes(hess, -1, -2)
    if varying == "first":
        jac[1:], hess[1:] = 0, 0
    given = [jac[m] if varying == "all" or m == 0 else None for m in range(len(phi))]
    given_hess = [hess[m] if varying == "all" or m == 0 else None for m in range(len(phi))]
    u, corr = family.whitened_second_order(
        phi[None],
        [g[None] if g is not None else None for g in given],
        [g[None] if g is not None else None for g in given_hess],
        **fixed,
    )
    corr = np.eye(len(u)) if corr is None else corr[0]
    got = np.einsum("ide,ij,jde->de", np.array(u)[:, 0], corr, np.array(u)[:, 0])
    h_mv = _mean_variance_hessian(to_mean_variance, phi, jac, hess)
    info = moment_family.fisher_information(to_mean_variance(phi)[None], **fixed)[0]
    np.testing.assert_allclose(got, np.einsum("ide,ij,jde->de", h_mv, info, h_mv), rtol=1e-6)


def test_softplus_is_logaddexp_on_both_tails():
    x = np.array([-1e3, -745.0, -40.0, -1e-300, 0.0, 1e-300, 1e-8, 3.0, 40.0, 700.0, 1e300])
    expected = np.logaddexp(0, x)
    np.testing.assert_allclose(softplus(x), expected, rtol=4e-16, atol=0)
    assert softplus(np.array([-1e3]))[0] == 0.0 and np.isinf(softplus(np.array([np.inf]))[0])


def test_normal_log_density_against_scipy_across_float_range(rng):
    """The Normal's log density, written out, equals SciPy's in both
    parametrizations, for sds from 1e-300 to 1e300, infinite y, and nan where
    the sd is not positive; y broadcasts against the parameters."""
    mean = rng.normal(size=(4, 6)) * 10
    sd = np.exp(rng.uniform(-690, 690, size=(4, 6)))
    sd[0, :2] = [0.0, -1.0]
    y = rng.normal(size=6) * 10
    y[3] = np.inf
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        expected = stats.norm.logpdf(y, mean, sd)
        variance = np.where(sd > 0, sd, np.nan) ** 2
    got_sd = families.NORMAL_MEAN_SD.log_density(np.stack([mean, sd], -1), y)
    np.testing.assert_allclose(got_sd, expected, rtol=1e-13)
    finite = np.isfinite(variance) & (variance > 0)  # squares in float64's range
    got_variance = families.MOMENT_FAMILIES["normal"].log_density(
        np.stack([mean, variance], -1), y
    )
    np.testing.assert_allclose(got_variance[finite], expected[finite], rtol=1e-13)


#: every family has a Rényi divergence for 0 < α < 1, closed forms for any α
RENYI = [
    (*case, alpha)
    for case in ALL_FAMILIES
    for alpha in (0.3, 2.5)
    if alpha < 1 or case[0].renyi_above_one
]


@pytest.mark.parametrize(
    ("family", "make", "phi", "fixed", "alpha"), RENYI, ids=lambda x: getattr(x, "name", "")
)
def test_renyi_divergence_matches_numeric_integration(family, make, phi, fixed, alpha):
    """``D_α = log E_p[(q/p)^(1−α)] / (α − 1)``, and the KL as α → 1."""
    phi_p = np.array(phi, float)
    phi_q = phi_p * (1 + 0.05 * np.array([1, -1, 1][: len(phi)]))
    p, q = make(phi_p), make(phi_q)
    if hasattr(p, "pdf"):
        expected = _continuous_renyi(p, q, alpha)
    else:
        y = np.arange(int(3 * max(p.ppf(1 - 1e-15), q.ppf(1 - 1e-15))) + 2)
        y = y[p.pmf(y) > 0]  # classes without mass under p add nothing
        ratio = np.sum(np.exp(alpha * p.logpmf(y) + (1 - alpha) * q.logpmf(y)))
        expected = np.log(ratio) / (alpha - 1)
    got = family.renyi_divergence(phi_p[None], phi_q[None], alpha, **fixed)[0]
    np.testing.assert_allclose(got, expected, rtol=1e-7)
    near_one = family.renyi_divergence(phi_p[None], phi_q[None], 1 + 1e-6, **fixed)[0]
    kl = family.kl_divergence(phi_p[None], phi_q[None], **fixed)[0]
    np.testing.assert_allclose(near_one, kl, rtol=1e-4)


@pytest.mark.parametrize("alpha", [0.5, 3.0])
@pytest.mark.parametrize(("eta_p", "eta_q"), [(-40.0, 40.0), (20.0, -20.0), (0.3, 0.2)])
def test_bernoulli_renyi_by_logits_is_exact_for_any_distance(eta_p, eta_q, alpha):
    from pm_sens.families import bernoulli

    got = bernoulli.renyi_divergence_logit(np.array([[eta_p]]), np.array([[eta_q]]), alpha)[0]
    log_p = stats.logistic.logcdf([eta_p, -eta_p])
    log_q = stats.logistic.logcdf([eta_q, -eta_q])
    expected = special.logsumexp(alpha * log_p + (1 - alpha) * log_q) / (alpha - 1)
    assert np.isfinite(got)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_categorical_and_normal_renyi():
    p, q = np.array([0.2, 0.5, 0.3]), np.array([0.25, 0.45, 0.3])
    got = families.MOMENT_FAMILIES["categorical"].renyi_divergence(p[None], q[None], 2.0)[0]
    np.testing.assert_allclose(got, np.log(np.sum(p**2 / q)), rtol=1e-12)
    normal = families.MOMENT_FAMILIES["normal"]
    # α > 1 and q much narrower than p: ∫ p^α q^(1−α) diverges
    assert (
        normal.renyi_divergence(np.array([[0.0, 4.0]]), np.array([[0.0, 1.0]]), 2.0)[0] == np.inf
    )


def test_hurdle_kl_at_small_rates_against_scipy():
    """A hurdle Poisson's KL sums its support up to a tail of 1e-15 × (1 − f₀):
    below 1e-16 at small rates, where ``ppf(1 − tail)`` is infinite (the sum failed
    with no width); summed by hand with SciPy's pmf."""
    psi, mu_p, mu_q = 0.3, np.array([1e-3, 0.02]), np.array([1.5e-3, 0.03])
    phi_p, phi_q = (np.stack([np.full(2, psi), m], -1) for m in (mu_p, mu_q))
    k = np.arange(1, 200)

    def log_pmf(m):
        # ψ f(k) / (1 − f(0)) on k >= 1, and 1 − ψ at 0
        m = m[:, None]
        positive = np.log(psi) + stats.poisson(m).logpmf(k) - np.log(-np.expm1(-m))
        return np.concatenate([np.full((len(m), 1), np.log1p(-psi)), positive], 1)

    lp, lq = log_pmf(mu_p), log_pmf(mu_q)
    expected = (np.exp(lp) * (lp - lq)).sum(1)
    kl = families.HURDLE_POISSON.kl_divergence(phi_p, phi_q)
    np.testing.assert_allclose(kl, expected, rtol=1e-9)
    upper = poisson.support_upper(mu_p[:, None], 1e-20)
    assert np.all(upper >= 1) and np.all(stats.poisson(mu_p).sf(upper) <= 1e-16)


def test_zero_inflated_kl_of_far_apart_laws_is_finite_and_exact():
    """A level change can move a count law far: q/p overflows where p is tiny (the fish
    example's livebait). KL(ZIP(ψ, μ₁) ‖ ZIP(ψ, μ₂)) summed directly with SciPy."""
    from scipy import stats

    from pm_sens.families import ZERO_INFLATED_POISSON

    def log_zip(y, psi, mu):
        positive = np.log(psi) + stats.poisson.logpmf(y, mu)
        # P(0) = 1 − ψ + ψ e^(−μ)
        return np.where(y == 0, np.log1p(psi * np.expm1(-mu)), positive)

    pairs = [(0.6, 0.05, 40.0), (0.6, 40.0, 0.05), (0.9, 3.0, 3.5), (0.3, 200.0, 0.5)]
    y = np.arange(2000)
    for psi, mu1, mu2 in pairs:
        log_p, log_q = log_zip(y, psi, mu1), log_zip(y, psi, mu2)
        expected = np.sum(np.exp(log_p) * (log_p - log_q))
        got = ZERO_INFLATED_POISSON.kl_divergence(np.array([psi, mu1]), np.array([psi, mu2]))
        np.testing.assert_allclose(got, expected, rtol=1e-9)


@pytest.mark.parametrize(
    ("family", "columns"),
    [
        # logits to ±800 and beyond (σ rounds to 0 or 1; exp overflows past 709)
        ("BERNOULLI_LOGIT", np.array([-1e4, -800.0, -40.0, -1.0, 0.0, 1e-9, 2.5, 40.0, 750.0])),
        ("MOMENT", np.array([0.0, 1e-300, 1e-9, 0.3, 0.5, 1 - 1e-12, 1.0])),
    ],
)
def test_bernoulli_tables_written_for_a_graph_are_the_numpy_tables(family, columns):
    """`graph_pmf_table` and `graph_log_pmf_table`, compiled by PyTensor (as a device
    sums them), against the NumPy `pmf_table` and `log_density` the CPU backend uses,
    and against SciPy's entropy and log pmf."""
    import pytensor
    import pytensor.tensor as pt

    family = (
        families.MOMENT_FAMILIES["bernoulli"] if family == "MOMENT" else families.BERNOULLI_LOGIT
    )
    x = pt.vector("x")
    pmf, entropy = family.graph_pmf_table(pt, x)
    with np.errstate(over="ignore"):
        got = pytensor.function([x], [*pmf, entropy])(columns)
        (q, p), expected = family.pmf_table(columns[:, None])
    np.testing.assert_allclose(got[0], q, rtol=1e-15, atol=1e-300)
    np.testing.assert_allclose(got[1], p, rtol=1e-15, atol=1e-300)
    np.testing.assert_allclose(got[2], expected, rtol=1e-14, atol=1e-300)
    probability = p if family is families.BERNOULLI_LOGIT else columns
    # p kept off 0 and 1 (`clip_probability`): an entropy of 1e-16 where SciPy has 0
    np.testing.assert_allclose(
        got[2], stats.bernoulli(probability).entropy(), rtol=1e-9, atol=1e-15
    )
    # the log tables, against the log density the CPU backend reads at y, and SciPy's
    log_q, log_p = pytensor.function([x], list(family.graph_log_pmf_table(pt, x)))(columns)
    for y, got_log in ((0, log_q), (1, log_p)):
        with np.errstate(divide="ignore", over="ignore"):
            expected = family.log_density(columns[:, None], np.full(len(columns), y))
        np.testing.assert_allclose(got_log, expected, rtol=1e-15)
        # where SciPy's logpmf sees p off 0 and 1 (it rounds σ(η) first; we clip p)
        exact = (probability > 0) & (probability < 1 - 1e-9)
        scipy = stats.bernoulli(probability[exact]).logpmf(y)
        np.testing.assert_allclose(got_log[exact], scipy, rtol=1e-12, atol=1e-15)


def test_categorical_tables_written_for_a_graph_are_the_numpy_tables(rng):
    """`graph_pmf_table` and `graph_log_pmf_table` of K = 4 class probabilities (rows
    with a class of probability 0 and 1 among them), compiled by PyTensor, against the
    NumPy `pmf_table` and `log_density`, and SciPy's entropy."""
    import pytensor
    import pytensor.tensor as pt

    family = families.MOMENT_FAMILIES["categorical"]
    phi = rng.dirichlet(np.ones(4), size=6)
    phi[0] = [0.0, 0.3, 0.7, 0.0]
    phi[1] = [0.0, 0.0, 1.0, 0.0]
    columns = [pt.vector(f"p{k}") for k in range(4)]
    pmf, entropy = family.graph_pmf_table(pt, *columns)
    log_pmf = family.graph_log_pmf_table(pt, *columns)
    got = pytensor.function(columns, [*pmf, entropy, *log_pmf])(*phi.T)
    expected_pmf, expected_entropy = family.pmf_table(phi)
    for k in range(4):
        np.testing.assert_array_equal(got[k], expected_pmf[k])
        with np.errstate(divide="ignore"):
            log_density = family.log_density(phi, np.full(6, k))
        np.testing.assert_allclose(got[5 + k], log_density, rtol=1e-15)
    np.testing.assert_allclose(got[4], expected_entropy, rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(got[4], stats.entropy(phi, axis=1), rtol=1e-12, atol=1e-300)


#: every family with a log density written for a graph (`Family.graph_log_density`): its
#: parameters' columns as (low, high) ranges to draw from, and the y to read them at
GRAPH_LOG_DENSITIES = [
    (families.MOMENT_FAMILIES["normal"], [(-3, 3), (1e-4, 9)], [-40.0, -1.3, 0.0, 2.2, 1e3]),
    (families.NORMAL_MEAN_SD, [(-3, 3), (1e-3, 3)], [-40.0, -1.3, 0.0, 2.2, 1e3]),
    (families.LOGISTIC, [(-3, 3), (1e-3, 3)], [-800.0, -1.3, 0.0, 2.2, 800.0]),
    (families.GUMBEL, [(-3, 3), (0.05, 3)], [-5.0, -1.3, 0.0, 2.2, 60.0]),
    (families.MOMENT_FAMILIES["laplace"], [(-3, 3), (1e-3, 9)], [-40.0, -1.3, 0.0, 2.2]),
    (families.MOMENT_FAMILIES["exponential"], [(1e-3, 5)], [-1.0, 0.0, 1e-9, 2.2, 40.0]),
    (families.MOMENT_FAMILIES["lognormal"], [(1e-2, 5), (1e-4, 9)], [-1.0, 0.0, 1e-6, 2.2, 80.0]),
    (families.STUDENTT, [(-3, 3), (1e-3, 9), (0.3, 100)], [-1e3, -1.3, 0.0, 2.2, 1e6]),
    (families.GAMMA_MEAN_SHAPE, [(1e-2, 5), (0.1, 20)], [-1.0, 0.0, 1e-6, 2.2, 80.0]),
    # the variance below m(1 − m): shapes from 0.03 to 1000
    (families.MOMENT_FAMILIES["beta"], "beta", [-0.5, 0.0, 1e-6, 0.37, 1 - 1e-9, 1.0, 1.5]),
    (families.WALD, [(0.05, 5), (0.01, 50)], [-1.0, 0.0, 1e-6, 0.7, 40.0]),
    # hurdles: ψ, then the base law's columns; y = 0 is the hurdle's mass
    (
        families.HURDLE_LOGNORMAL,
        [(0.05, 0.95), (1e-2, 5), (1e-4, 9)],
        [-1.0, 0.0, 1e-6, 2.2, 80.0],
    ),
    (families.HURDLE_GAMMA, [(0.05, 0.95), (1e-2, 5), (0.1, 20)], [-1.0, 0.0, 1e-6, 2.2, 80.0]),
]


def _zero_modified_logpmf(base, hurdle):
    """log pmf of the zero-inflated (or hurdle) law on a SciPy base law's, written out."""

    def logpmf(y, psi, *theta):
        law = base(theta)
        if hurdle:
            positive = np.log(psi) + law.logpmf(y) - law.logsf(0)
            return np.where(y == 0, np.log1p(-psi), positive)
        return np.where(y == 0, np.log1p(-psi + psi * law.pmf(0)), np.log(psi) + law.logpmf(y))

    return logpmf


def _nb_law(theta):
    m, a = theta
    return stats.nbinom(a, a / (a + m))


#: every count law with a log pmf written for a graph: its columns' ranges, SciPy's log pmf
#: of (y, *columns) and its fixed trials n (None without)
COUNT_LOG_DENSITIES = [
    (families.MOMENT_FAMILIES["poisson"], [(1e-3, 60)], lambda y, m: stats.poisson.logpmf(y, m)),
    (
        families.NEGATIVE_BINOMIAL_MEAN_ALPHA,
        [(1e-3, 60), (0.05, 500)],
        lambda y, m, a: _nb_law((m, a)).logpmf(y),
    ),
    (
        families.BERNOULLI_LOGIT,
        [(-30, 30)],
        lambda y, eta: np.where(
            y == 1, -softplus(-eta), np.where(y == 0, -softplus(eta), -np.inf)
        ),
    ),
    (
        families.BINOMIAL_LOGIT,
        [(-4, 4)],
        lambda y, eta, n: stats.binom.logpmf(y, n, special.expit(eta)),
    ),
    (
        families.BETA_BINOMIAL,
        [(0.05, 40), (0.05, 40)],
        lambda y, a, b, n: stats.betabinom.logpmf(y, n, a, b),
    ),
    (
        families.ZERO_INFLATED_POISSON,
        [(0.05, 0.95), (1e-2, 30)],
        _zero_modified_logpmf(lambda t: stats.poisson(t[0]), False),
    ),
    (
        families.HURDLE_POISSON,
        [(0.05, 1.0), (1e-2, 30)],
        _zero_modified_logpmf(lambda t: stats.poisson(t[0]), True),
    ),
    (
        families.ZERO_INFLATED_NEGATIVE_BINOMIAL,
        [(0.05, 0.95), (1e-2, 30), (0.1, 50)],
        _zero_modified_logpmf(_nb_law, False),
    ),
    (
        families.HURDLE_NEGATIVE_BINOMIAL,
        [(0.05, 0.95), (1e-2, 30), (0.1, 50)],
        _zero_modified_logpmf(_nb_law, True),
    ),
]


@pytest.mark.parametrize(
    ("family", "ranges", "logpmf"),
    COUNT_LOG_DENSITIES,
    ids=[f"{f.name} {'/'.join(f.parameters)}" for f, _, _ in COUNT_LOG_DENSITIES],
)
def test_a_count_laws_log_density_in_a_graph_is_scipys(family, ranges, logpmf, rng):
    """`Family.graph_log_density` of a count law compiled by PyTensor (as a device sums it
    over draws), and the NumPy `log_density` the CPU backend uses (the same function in
    NumPy), against SciPy's log pmf: at counts in and past the support, −inf at negative
    and fractional y. Binomial laws with trials from 1 to 40 per row."""
    import pytensor
    import pytensor.tensor as pt

    n_rows = 200
    phi = np.stack([rng.uniform(low, high, size=n_rows) for low, high in ranges], -1)
    trials = family.support in ("binomial", "binary") or family is families.BETA_BINOMIAL
    fixed = {"n": rng.integers(1, 41, n_rows).astype(float)} if family.name != "bernoulli" else {}
    fixed = fixed if trials else {}
    y = pt.vector("y")
    columns = [pt.vector(f"c{k}") for k in range(phi.shape[-1])]
    given = {name: pt.vector(name) for name in fixed}
    graph = family.graph_log_density(pt, y, *columns, **given)
    log_density = pytensor.function([y, *columns, *given.values()], graph)
    counts = rng.integers(0, 80, n_rows).astype(float)
    if "n" in fixed:  # up to two past the trials
        counts = np.minimum(counts, fixed["n"] + 2)
    for at_y in (counts, np.zeros(n_rows), np.ones(n_rows), np.full(n_rows, -1.0), counts + 0.5):
        with np.errstate(divide="ignore", invalid="ignore"):
            expected = logpmf(at_y, *phi.T, *fixed.values())
            from_numpy = family.log_density(phi, at_y, **fixed)
        got = log_density(at_y, *phi.T, *fixed.values())
        for value in (got, from_numpy):
            np.testing.assert_array_equal(np.isneginf(value), np.isneginf(expected))
            finite = np.isfinite(expected)
            np.testing.assert_allclose(value[finite], expected[finite], rtol=1e-11, atol=1e-11)
        assert np.isfinite(expected).any() or at_y[0] < 0 or at_y[0] % 1


def test_every_family_with_a_graph_log_density_is_checked():
    """`test_log_densities_written_for_a_graph_are_numpys` runs every such family but
    count laws, which `test_a_count_laws_log_density_in_a_graph_is_scipys` runs, and
    those with bounds, which `test_a_truncated_normals_log_density_in_a_graph_is_numpys` and
    `test_a_censored_laws_log_density_in_a_graph_is_scipys` vary."""
    found = {
        id(f) for f in vars(families).values() if isinstance(f, Family) and f.graph_log_density
    }
    for module in pkgutil.iter_modules(families.__path__):
        content = vars(importlib.import_module(f"pm_sens.families.{module.name}")).values()
        found |= {id(f) for f in content if isinstance(f, Family) and f.graph_log_density}
    bounded = [families.TRUNCATED_NORMAL, families.CENSORED_NORMAL, families.CENSORED_WEIBULL]
    counts = [f for f, _, _ in COUNT_LOG_DENSITIES]
    checked = [f for f, _, _ in GRAPH_LOG_DENSITIES] + counts + bounded
    assert found == {id(f) for f in checked}


@pytest.mark.parametrize(
    ("family", "ranges", "ys"),
    GRAPH_LOG_DENSITIES,
    ids=[f"{f.name} {'/'.join(f.parameters)}" for f, _, _ in GRAPH_LOG_DENSITIES],
)
def test_log_densities_written_for_a_graph_are_numpys(family, ranges, ys, rng):
    """`Family.graph_log_density` compiled by PyTensor (as a device sums it over draws)
    against the NumPy `log_density` the CPU backend uses (SciPy's logpdf for most),
    at parameters over their ranges and y inside and outside the support (−inf)."""
    import pytensor
    import pytensor.tensor as pt

    if ranges == "beta":  # a mean and a variance it allows
        mean = rng.uniform(0.05, 0.95, size=50)
        variance = mean * (1 - mean) / (1 + np.exp(rng.uniform(-3.5, 7, size=50)))
        phi = np.stack([mean, variance], -1)
    else:
        phi = np.stack([rng.uniform(low, high, size=50) for low, high in ranges], -1)
    y = pt.vector("y")
    columns = [pt.vector(f"c{k}") for k in range(phi.shape[-1])]
    log_density = pytensor.function([y, *columns], family.graph_log_density(pt, y, *columns))
    inside = False
    for value in ys:
        at_y = np.full(len(phi), value)
        with np.errstate(divide="ignore"):
            expected = family.log_density(phi, at_y)
            got = log_density(at_y, *phi.T)
        inside |= np.isfinite(expected).any()
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-13, err_msg=str(value))
    assert inside  # some y in the support


def beyond_a_bound_in_50_digits(z):
    """The standard normal beyond a bound at z > 0, in 50-digit decimals.

    The Mills ratio ``R = (1 − Φ(z))/φ(z)`` by Laplace's continued fraction to
    4000 levels, ``t = 1/R`` the mean, the raw moments by ``E[y^k] = z^(k−1) t +
    (k − 1) E[y^(k−2)]`` (integration by parts) and the entropy ``log(√(2πe)
    Z) + z t/2``, ``Z = φ(z) R``: the textbook forms, whose cancellation the 50
    digits absorb. Returns the mean, the variance, ``Cov(y, y²)``, ``Var y²``
    and the entropy.
    """
    from decimal import Decimal, localcontext

    with localcontext() as context:
        context.prec = 50
        z = Decimal(z)
        fraction = z
        for k in range(4000, 0, -1):
            fraction = z + k / fraction
        raw = [Decimal(1), fraction]  # E[y⁰], E[y¹] = 1/R
        for k in range(2, 5):
            raw.append(z ** (k - 1) * fraction + (k - 1) * raw[k - 2])
        log_2pi = (2 * Decimal(np.pi)).ln()
        log_mass = -(z**2) / 2 - log_2pi / 2 - fraction.ln()
        entropy = (log_2pi + 1) / 2 + log_mass + z * fraction / 2
        central = [raw[2] - raw[1] ** 2, raw[3] - raw[1] * raw[2], raw[4] - raw[2] ** 2]
        return tuple(float(x) for x in (raw[1], *central, entropy))


@pytest.mark.parametrize(("lower", "upper"), [(0.0, np.inf), (0.0, 300.0), (-np.inf, 0.0)])
def test_a_truncated_normals_information_far_beyond_a_bound_keeps_its_precision(lower, upper):
    """The truncated Normal's Fisher information and entropy at locations from half a
    scale to 40 scales beyond a bound (the other infinite or far), against the standard
    normal's beyond a bound in 50-digit arithmetic: ``σ²I`` is the covariance of ``(z,
    z²)``, 1e-12 relative (differences of moments near z² were 2e-7 off at 40 scales)."""
    sigma = 0.7
    distance = np.array([0.5, 2.0, 3.0, 3.99, 4.0, 6.0, 10.0, 20.0, 40.0])
    side = 1.0 if lower == 0.0 else -1.0  # the law lies above the location, or below
    phi = np.stack([-side * sigma * distance, np.full(len(distance), sigma)], -1)
    _, variance, skew, spread, entropy = np.array(
        [beyond_a_bound_in_50_digits(z) for z in distance]
    ).T
    family = families.TRUNCATED_NORMAL
    with np.errstate(all="ignore"):  # the moments' tail terms at an infinite bound
        information = family.fisher_information(phi, lower, upper) * sigma**2
        got = family.entropy(phi, lower, upper)
    np.testing.assert_allclose(information[:, 0, 0], variance, rtol=1e-12)
    np.testing.assert_allclose(information[:, 0, 1], side * skew, rtol=1e-12)
    np.testing.assert_allclose(information[:, 1, 1], spread, rtol=1e-12)
    np.testing.assert_allclose(got, entropy + np.log(sigma), rtol=1e-13)


@pytest.mark.parametrize(
    ("lower", "upper"), [(-1.0, 2.0), (0.5, np.inf), (-np.inf, -3.0), (-np.inf, np.inf)]
)
def test_a_truncated_normals_log_density_in_a_graph_is_numpys(lower, upper, rng):
    """The truncated Normal's `Family.graph_log_density` compiled by PyTensor (its
    ``log Z`` from the tail nearer to the interval) against the NumPy `log_density`, at
    locations inside and far outside the bounds and y inside and outside them."""
    import pytensor
    import pytensor.tensor as pt

    family = families.TRUNCATED_NORMAL
    phi = np.stack([rng.uniform(-12, 12, size=60), rng.uniform(0.05, 3, size=60)], -1)
    y, mu, sigma = pt.vector("y"), pt.vector("mu"), pt.vector("sigma")
    graph = family.graph_log_density(pt, y, mu, sigma, lower=lower, upper=upper)
    log_density = pytensor.function([y, mu, sigma], graph)
    for value in (-5.0, -1.0, -0.2, 0.7, 2.0, 6.0):
        at_y = np.full(len(phi), value)
        expected = family.log_density(phi, at_y, lower, upper)
        np.testing.assert_allclose(
            log_density(at_y, *phi.T), expected, rtol=1e-12, atol=1e-13, err_msg=str(value)
        )


@pytest.mark.parametrize(
    ("name", "lower", "upper"),
    [
        ("normal", -1.0, 2.0),
        ("normal", -np.inf, 1.5),
        ("normal", 0.5, np.inf),
        ("weibull", -np.inf, 2.0),
        ("weibull", 0.3, 2.0),
        ("weibull", 0.0, np.inf),
    ],
)
def test_a_censored_laws_log_density_in_a_graph_is_scipys(name, lower, upper, rng):
    """The censored Normal's and Weibull's `Family.graph_log_density` compiled by
    PyTensor, and the NumPy `log_density`, against SciPy's law written out: its log CDF
    at y <= l, log survival at y >= u, log density between (−inf below a Weibull's 0),
    at locations far outside the bounds and y at, inside and outside them."""
    import pytensor
    import pytensor.tensor as pt

    if name == "normal":
        family = families.CENSORED_NORMAL
        phi = np.stack([rng.uniform(-12, 12, size=60), rng.uniform(0.05, 3, size=60)], -1)
        law = stats.norm(phi[:, 0], phi[:, 1])
        ys = (-5.0, lower, -0.2, 0.7, 1.5, upper, 6.0)
    else:
        family = families.CENSORED_WEIBULL
        phi = np.stack([rng.uniform(0.3, 6, size=60), rng.uniform(0.05, 8, size=60)], -1)
        law = stats.weibull_min(phi[:, 0], scale=phi[:, 1])
        ys = (-1.0, lower, 0.1, 0.3, 1.2, upper, 9.0)
    y, first, second = pt.vector("y"), pt.vector("first"), pt.vector("second")
    graph = family.graph_log_density(pt, y, first, second, lower=lower, upper=upper)
    log_density = pytensor.function([y, first, second], graph)
    for value in ys:
        if not np.isfinite(value):
            continue
        at_y = np.full(len(phi), value)
        with np.errstate(divide="ignore"):
            inner = law.logpdf(at_y)  # SciPy's Weibull: −inf below 0
            expected = np.where(
                at_y <= lower,
                law.logcdf(lower) if lower > -np.inf else -np.inf,
                np.where(at_y >= upper, law.logsf(upper), inner),
            )
            numpy = family.log_density(phi, at_y, lower, upper)
        for got in (log_density(at_y, *phi.T), numpy):
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-13, err_msg=str(value))


def test_the_wald_entropys_special_function_in_a_graph_is_scipys():
    """``e^z E₁(z)``, the Wald entropy's special function (PyTensor has no E₁), as an
    elementwise op that NumPy's linker runs whole: SciPy's ``exp1`` times ``e^z`` to
    1e-15 from z = 1e-6 to 600 (beyond, where ``e^z`` overflows, its asymptotic series:
    against SciPy's ``exp1`` in logs to 700, then the series' first terms), and its
    derivative ``e^z E₁(z) − 1/z``; the JAX backend's form by arithmetic alone, to 1e-14."""
    import pytensor
    import pytensor.tensor as pt

    from pm_sens.graph.compile.rewrites import compile_mode
    from pm_sens.graph.compile.rewrites.numpy_linker import runs_element_by_element
    from pm_sens.graph.compile.special import scaled_exp1, scaled_exp1_by_arithmetic

    z = pt.vector("z")
    value = scaled_exp1(z)
    function = pytensor.function(
        [z], [value, pytensor.grad(value.sum(), z)], mode=compile_mode("python")
    )
    assert not runs_element_by_element(function)
    near, far = np.geomspace(1e-6, 600, 400), np.geomspace(600, 700, 50)
    got, slope = function(near)
    expected = np.exp(near) * special.exp1(near)
    np.testing.assert_allclose(got, expected, rtol=1e-15)
    np.testing.assert_allclose(slope, expected - 1 / near, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(
        np.log(function(far)[0]) - far, np.log(special.exp1(far)), rtol=1e-14
    )
    # past SciPy's underflow: 1/z (1 − 1/z + 2/z² − 6/z³), within 24/z⁴ (relative)
    farther = np.geomspace(1e3, 1e8, 50)
    series = (1 - (1 - (2 - 6 / farther) / farther) / farther) / farther
    np.testing.assert_allclose(function(farther)[0], series, rtol=3e-11)
    # the JAX backend's form, by series and continued fraction, in NumPy here
    np.testing.assert_allclose(scaled_exp1_by_arithmetic(np, near), expected, rtol=1e-14)
    np.testing.assert_allclose(scaled_exp1_by_arithmetic(np, farther), series, rtol=3e-11)

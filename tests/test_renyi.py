"""Rényi divergences between laws far apart, as level changes give them.

Closed forms against SciPy's densities integrated numerically; the sums and
the rules of both laws (0 < α < 1) against the same integral computed in
quantile space, as ``E_p[g] + E_q[g]`` with ``g = p^α q^(1−α)/(p + q)`` (an
identity), or summed over a support far wider than both laws'.
"""

import numpy as np
import pytest
from scipy import integrate, special, stats

from pm_sens import families
from pm_sens.families import exponential, gamma, laplace, lognormal, studentt, wald

#: quantiles of each law that cut the real line into pieces for quad
_CUTS = np.concatenate([[1e-13, 1e-10, 1e-7, 1e-5, 1e-3], np.linspace(0.01, 0.99, 25)])
_CUTS = np.concatenate([_CUTS, 1 - _CUTS[::-1]])


def _continuous_renyi(p, q, alpha):
    """``log ∫ p^α q^(1−α) / (α − 1)`` by quad between quantiles of both laws.

    For 0 < α < 1 the integrand is at most ``α p + (1 − α) q``: beyond both
    laws' extreme cuts it holds under 1e-13 of mass.
    """

    def tilted(y):
        return np.exp(alpha * p.logpdf(y) + (1 - alpha) * q.logpdf(y))

    cuts = np.unique(np.concatenate([p.ppf(_CUTS), q.ppf(_CUTS)]))
    pieces = [
        integrate.quad(tilted, a, b, epsabs=0, epsrel=1e-13, limit=200)[0]
        for a, b in zip(cuts[:-1], cuts[1:], strict=True)
    ]
    return np.log(np.sum(pieces)) / (alpha - 1)


def _gamma(phi):
    return stats.gamma(phi[0] ** 2 / phi[1], scale=phi[1] / phi[0])


CONTINUOUS = [
    # family, SciPy law, p, q far apart (several sds, or scales far apart)
    (families.MOMENT_FAMILIES["gamma"], _gamma, [2.0, 1.5], [15.0, 4.0]),
    (
        families.GAMMA_MEAN_SHAPE,
        lambda phi: stats.gamma(phi[1], scale=phi[0] / phi[1]),
        [2.0, 4.0],
        [30.0, 0.8],
    ),
    (
        families.MOMENT_FAMILIES["beta"],
        lambda phi: stats.beta(*_beta_shapes(phi)),
        [0.1, 0.002],
        [0.8, 0.01],
    ),
    (exponential.FAMILY, lambda phi: stats.expon(scale=phi[0]), [0.2], [9.0]),
    (
        wald.FAMILY,
        lambda phi: stats.invgauss(phi[0] / phi[1], scale=phi[1]),
        [1.0, 2.0],
        [8.0, 0.5],
    ),
    (
        lognormal.FAMILY,
        lambda phi: stats.lognorm(
            s=np.sqrt(np.log1p(phi[1] / phi[0] ** 2)),
            scale=phi[0] / np.sqrt(1 + phi[1] / phi[0] ** 2),
        ),
        [2.0, 1.0],
        [40.0, 30.0],
    ),
    (
        laplace.FAMILY,
        lambda phi: stats.laplace(phi[0], np.sqrt(phi[1] / 2)),
        [0.0, 2.0],
        [15.0, 0.5],
    ),
    (
        studentt.FAMILY,
        lambda phi: stats.t(phi[2], phi[0], np.sqrt(phi[1])),
        [0.0, 1.0, 0.7],
        [30.0, 2.0, 40.0],
    ),
    (
        families.MOMENT_FAMILIES["studentt"],
        lambda phi: stats.t(1 / phi[2], phi[0], np.sqrt(phi[1])),
        [0.0, 1.0, 1 / 3],
        [-12.0, 0.3, 1 / 25],
    ),
]


def _beta_shapes(phi):
    kappa = phi[0] * (1 - phi[0]) / phi[1] - 1
    return phi[0] * kappa, (1 - phi[0]) * kappa


@pytest.mark.parametrize("alpha", [0.3, 0.8])
@pytest.mark.parametrize(
    ("family", "make", "phi_p", "phi_q"), CONTINUOUS, ids=lambda x: getattr(x, "name", "")
)
def test_continuous_renyi_between_distant_laws(family, make, phi_p, phi_q, alpha):
    """(α > 1: the closed forms, against integration at nearby laws in test_families.)"""
    phi_p, phi_q = np.array(phi_p), np.array(phi_q)
    got = family.renyi_divergence(phi_p[None], phi_q[None], alpha)[0]
    expected = _continuous_renyi(make(phi_p), make(phi_q), alpha)
    # Student-t 30 scales apart: the rules' error is 2e-7 there
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_closed_forms_are_infinite_exactly_where_the_integral_diverges():
    """Laplace: ``a + c = α/b₁ + (1 − α)/b₂ <= 0``, with b₁ = 1, b₂ = ½ from α = 2;
    Beta(4.4, 39.6) against Beta(12, 3): ``p^α q^(1−α) ~ y^(3.4α − 11(α−1))`` at 0,
    not integrable from α = 12/7.6; the exponential family's η_α leaves the domain;
    Wald: ``p^α q^(1−α) ~ e^{−B/y}`` at 0 with ``2B = α λ₁ + (1 − α) λ₂``, λ₁ = 1, λ₂ = 2:
    not integrable from α = 2."""
    p, q = np.array([[0.0, 2.0]]), np.array([[1.0, 0.5]])
    assert np.isfinite(laplace.FAMILY.renyi_divergence(p, q, 1.99)[0])
    assert laplace.FAMILY.renyi_divergence(p, q, 2.0)[0] == np.inf
    beta = families.MOMENT_FAMILIES["beta"]
    p, q = np.array([[0.1, 0.002]]), np.array([[0.8, 0.01]])
    assert np.isfinite(beta.renyi_divergence(p, q, 12 / 7.6 - 1e-3)[0])
    assert beta.renyi_divergence(p, q, 12 / 7.6 + 1e-3)[0] == np.inf
    p, q = np.array([[1.0, 1.0]]), np.array([[3.0, 2.0]])
    assert np.isfinite(wald.FAMILY.renyi_divergence(p, q, 1.99)[0])
    assert wald.FAMILY.renyi_divergence(p, q, 2.0)[0] == np.inf
    assert (
        gamma.FAMILY.renyi_divergence(np.array([[2.0, 1.5]]), np.array([[3.0, 0.7]]), 1.5)[0]
        == np.inf
    )


def _nb(mean, alpha):
    return stats.nbinom(alpha, alpha / (alpha + mean))


def _zero_modified(base, hurdle):
    def law(phi):
        psi, rest = phi[0], phi[1:]
        base_law = base(*rest)

        def logpmf(y):
            y = np.asarray(y)
            zero = base_law.logpmf(0)
            if hurdle:
                positive = np.log(psi) + base_law.logpmf(y) - np.log1p(-np.exp(zero))
                return np.where(y == 0, np.log1p(-psi), positive)
            positive = np.log(psi) + base_law.logpmf(y)
            return np.where(y == 0, np.log1p(-psi + psi * np.exp(zero)), positive)

        return logpmf

    return law


DISCRETE = [
    (
        families.MOMENT_FAMILIES["negative_binomial"],
        lambda phi: _nb(phi[0], phi[0] ** 2 / (phi[1] - phi[0])).logpmf,
        [2.0, 5.0],
        [60.0, 400.0],
    ),
    (families.NEGATIVE_BINOMIAL_MEAN_ALPHA, lambda phi: _nb(*phi).logpmf, [3.0, 2.0], [80.0, 0.5]),
    (
        families.ZERO_INFLATED_POISSON,
        _zero_modified(stats.poisson, hurdle=False),
        [0.7, 3.0],
        [0.2, 40.0],
    ),
    (
        families.HURDLE_NEGATIVE_BINOMIAL,
        _zero_modified(_nb, hurdle=True),
        [0.7, 3.0, 2.0],
        [0.4, 50.0, 5.0],
    ),
]


@pytest.mark.parametrize("alpha", [0.3, 0.8])
@pytest.mark.parametrize(
    ("family", "logpmf", "phi_p", "phi_q"), DISCRETE, ids=lambda x: getattr(x, "name", "")
)
def test_discrete_renyi_between_distant_laws(family, logpmf, phi_p, phi_q, alpha):
    phi_p, phi_q = np.array(phi_p), np.array(phi_q)
    y = np.arange(20_000)
    expected = special.logsumexp(alpha * logpmf(phi_p)(y) + (1 - alpha) * logpmf(phi_q)(y))
    got = family.renyi_divergence(phi_p[None], phi_q[None], alpha)[0]
    np.testing.assert_allclose(got, expected / (alpha - 1), rtol=1e-10)


def test_renyi_routes_below_one_are_batched_and_chunked(monkeypatch):
    """Rows of any leading shape, in blocks of rows (`_MAX_CELLS`), give the row's value."""
    monkeypatch.setattr(studentt, "_MAX_CELLS", 3000)  # two rows per block
    rng = np.random.default_rng(3)
    phi_p = np.stack(
        [rng.normal(size=(2, 3)), rng.uniform(0.5, 2, (2, 3)), np.full((2, 3), 3.0)], -1
    )
    phi_q = phi_p + np.array([1.5, 0.3, 2.0])
    got = studentt.FAMILY.renyi_divergence(phi_p, phi_q, 0.6)
    one_by_one = [
        studentt.FAMILY.renyi_divergence(phi_p[i, j][None], phi_q[i, j][None], 0.6)[0]
        for i in range(2)
        for j in range(3)
    ]
    assert got.shape == (2, 3)
    np.testing.assert_allclose(got.reshape(-1), one_by_one, rtol=1e-13)


@pytest.mark.parametrize("alpha", [0.3, 0.7, 1.5, 2.0, 4.0])
@pytest.mark.parametrize(
    ("phi_p", "phi_q", "lower", "upper"),
    [
        ([0.3, 1.0], [1.5, 0.7], -0.5, 1.0),
        ([0.0, 1.0], [0.5, 0.4], -1.0, 2.0),  # above 1: the Dawson branch (P < 0)
        ([2.0, 1.0], [0.5, 0.3], -1.0, 0.5),
        ([0.3, 1.0], [4.0, 0.7], -np.inf, 1.0),
        ([0.0, 1.0], [6.0, 2.0], -np.inf, np.inf),
    ],
)
def test_censored_normal_renyi_against_quadrature(phi_p, phi_q, lower, upper, alpha):
    """The masses at the bounds plus ``∫ p^α q^(1−α)`` between them by quad (the
    censored Normal in (μ, σ)); infinite where the interval is unbounded and the
    tilted exponent opens upwards (α > 1, q much narrower)."""
    from pm_sens.families import censored_normal

    p, q = stats.norm(*phi_p), stats.norm(*phi_q)
    got = censored_normal.renyi_divergence(
        np.array([phi_p]), np.array([phi_q]), alpha, lower, upper
    )[0]
    precision = alpha / phi_p[1] ** 2 + (1 - alpha) / phi_q[1] ** 2
    if precision <= 0 and not (np.isfinite(lower) and np.isfinite(upper)):
        assert got == np.inf
        return
    low = lower if np.isfinite(lower) else min(phi_p[0], phi_q[0]) - 60 * max(phi_p[1], phi_q[1])
    high = upper if np.isfinite(upper) else max(phi_p[0], phi_q[0]) + 60 * max(phi_p[1], phi_q[1])
    cuts = np.linspace(low, high, 200)
    interior = sum(
        integrate.quad(
            lambda y: np.exp(alpha * p.logpdf(y) + (1 - alpha) * q.logpdf(y)),
            a,
            b,
            epsabs=0,
            epsrel=1e-13,
        )[0]
        for a, b in zip(cuts[:-1], cuts[1:], strict=True)
    )
    masses = sum(
        mass_p**alpha * mass_q ** (1 - alpha)
        for mass_p, mass_q, bound in (
            (p.cdf(lower), q.cdf(lower), lower),
            (p.sf(upper), q.sf(upper), upper),
        )
        if np.isfinite(bound)
    )
    np.testing.assert_allclose(got, np.log(interior + masses) / (alpha - 1), rtol=1e-12)

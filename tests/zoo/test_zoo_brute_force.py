"""Every measure recomputed by brute force, independently of pm_sens, on zoo models:
the predictive written again in NumPy, densities and entropies from SciPy, the same
permutations, integrated gradients by quadrature of finite differences."""

import numpy as np
import pytest
from scipy import integrate, special, stats

import pm_sens
from tests.zoo import ZOO_MODULES  # noqa: F401 (registers the models)
from tests.zoo._registry import ZOO

QUIET = dict(progressbar=False, extend_inferencedata=False)
#: discrete mixtures' entropies sum the support until the mass left is below
#: 1e-10 (`pm_sens.graph.likelihoods.generic.likelihood.TAIL`, the families' pmf tables alike)
ENTROPY_ATOL = 1e-9


def _draws(case, name):
    values = case.idata["posterior"][name].values
    return values.reshape(-1, *values.shape[2:])


class NormalLinear:
    """``normal_linear``: Normal(Intercept + slope·x, sigma), x a NumPy array."""

    name, features, discrete = "normal_linear", ["x_slope"], False
    #: the notebook's x, passed to the model as a NumPy array
    x = np.linspace(0, 1, 40)[:, None]

    def __init__(self, case):
        self.a, self.b = _draws(case, "Intercept"), _draws(case, "slope")
        self.sigma = _draws(case, "sigma")

    def law(self, x):  # x (N, 1) -> a frozen SciPy law with (S, N) parameters
        mu = self.a[:, None] + self.b[:, None] * x[:, 0]
        return stats.norm(mu, np.broadcast_to(self.sigma[:, None], mu.shape))

    def mean(self, x):
        return self.law(x).mean()

    def entropy(self, x):
        law = self.law(x)
        mu, var = law.mean(), law.var()
        mixture_var = var.mean(0) + mu.var(0)  # law of total variance
        total = 0.5 * np.log(2 * np.pi * np.e * mixture_var)  # moment-matched Normal
        aleatoric = law.entropy().mean(0)
        return np.stack([total, aleatoric, total - aleatoric], -1)


class BernoulliLogit:
    """``bernoulli_logit``: Bernoulli(invlogit(a + X @ beta))."""

    name, features, discrete = "bernoulli_logit", ["0", "1", "2"], True

    def __init__(self, case):
        self.a, self.beta = _draws(case, "a"), _draws(case, "beta")

    def law(self, x):
        return stats.bernoulli(special.expit(self.a[:, None] + self.beta @ x.T))

    def mean(self, x):
        return self.law(x).mean()

    def entropy(self, x):
        p = self.law(x).mean()
        total = stats.bernoulli(p.mean(0)).entropy()  # a mixture of Bernoullis is one
        aleatoric = stats.bernoulli(p).entropy().mean(0)
        return np.stack([total, aleatoric, total - aleatoric], -1)


class PoissonOffset:
    """``poisson_offset``: Poisson(exp(log_exposure + b0 + b1 x)); both inputs."""

    name, features, discrete = "poisson_offset", ["x", "log_exposure"], True

    def __init__(self, case):
        self.b = _draws(case, "b")

    def law(self, x):
        return stats.poisson(np.exp(x[:, 1] + self.b[:, :1] + self.b[:, 1:] * x[:, 0]))

    def mean(self, x):
        return self.law(x).mean()

    def entropy(self, x):
        law = self.law(x)
        support = np.arange(int(law.ppf(1 - 1e-14).max()) + 2)[:, None, None]
        q = law.pmf(support).mean(1)  # the mixture's pmf, (Y, N)
        total = -special.xlogy(q, q).sum(0)  # exact mixture entropy
        aleatoric = law.entropy().mean(0)
        return np.stack([total, aleatoric, total - aleatoric], -1)


class BetaBinomialTrials:
    """``beta_binomial_trials``: BetaBinomial(trials, p κ, (1 − p) κ), p = invlogit(a + b x);
    each row keeps its trials (not an input)."""

    name, features, discrete = "beta_binomial_trials", ["dose"], True

    def __init__(self, case):
        self.a, self.b = _draws(case, "a"), _draws(case, "b")
        self.kappa = _draws(case, "kappa")[:, None]
        self.trials = case.model["trials"].get_value()

    def law(self, x):
        p = special.expit(self.a[:, None] + self.b[:, None] * x[:, 0])
        return stats.betabinom(self.trials, p * self.kappa, (1 - p) * self.kappa)

    def mean(self, x):
        return self.law(x).mean()

    def entropy(self, x):
        support = np.arange(self.trials.max() + 1)[:, None, None]
        pmf = self.law(x).pmf(support)  # (Y, S, N)
        total = special.entr(pmf.mean(1)).sum(0)
        aleatoric = special.entr(pmf).sum(0).mean(0)
        return np.stack([total, aleatoric, total - aleatoric], -1)


class BartRegression(NormalLinear):
    """``bart_regression``: Normal(the sum of trees at x, sigma), the trees of each
    draw evaluated by pymc-bart itself (one chain: its history is in draw order)."""

    name, features = "bart_regression", ["0", "1", "2"]
    x = None  # the model's pm.Data X

    def __init__(self, case):
        from pymc_bart.utils import _get_posterior_sampler

        self.sampler = _get_posterior_sampler(case.model["mu"].owner.op)
        self.sigma = _draws(case, "sigma")
        at_rows = self.law(case.model["X"].get_value()).mean()
        np.testing.assert_allclose(at_rows, _draws(case, "mu"), atol=1e-12)

    def law(self, x):
        draws = list(range(len(self.sigma)))
        mu = self.sampler.sample_posterior(np.ascontiguousarray(x), draws, None)[:, 0]
        return stats.norm(mu, np.broadcast_to(self.sigma[:, None], mu.shape))


SMOOTH = [NormalLinear, BernoulliLogit, PoissonOffset, BetaBinomialTrials]
#: PFI and PDP evaluate the predictive at moved points only: trees too
MODELS = [*SMOOTH, BartRegression]


def _inputs(case, reference):
    if getattr(reference, "x", None) is not None:  # NumPy inputs, as the reference knows them
        return reference.x, reference
    model = case.model
    columns = [
        model[name].get_value()
        for name in ("x1", "x2", "data", "x", "log_exposure", "X", "dose")
        if name in model.named_vars
    ]
    return np.column_stack(columns).astype(float), reference


def _log_mixture_density(model, x, y):
    law = model.law(x)
    logp = law.logpmf(y) if model.discrete else law.logpdf(y)
    return special.logsumexp(logp, axis=0) - np.log(len(logp))


def _setup(reference_class):
    case = ZOO[reference_class.name]()
    reference = reference_class(case)
    x, _ = _inputs(case, reference)
    y = next(iter(case.idata["observed_data"].to_dataset().data_vars.values())).values
    return case, reference, x, y


@pytest.fixture(params=MODELS, ids=lambda m: m.name)
def setup(request):
    return _setup(request.param)


@pytest.fixture(params=SMOOTH, ids=lambda m: m.name)
def smooth_setup(request):
    """Models with derivatives (IG), whose predictive mean Gauss-Hermite integrates (VAR)."""
    return _setup(request.param)


def test_permutation_importance_equals_brute_force(setup):
    case, ref, x, y = setup
    n_repeats, seed = 3, 11
    out = pm_sens.permutation_importance(
        case.idata, case.model, n_repeats=n_repeats, random_seed=seed, **QUIET
    )["permutation_importance"]
    assert list(out["feature"].values) == ref.features
    rng = np.random.default_rng(
        seed
    )  # the same permutations: repeat by repeat, feature by feature
    orders = [[rng.permutation(len(x)) for _ in ref.features] for _ in range(n_repeats)]
    base_h, base_l = ref.entropy(x), _log_mixture_density(ref, x, y)
    for r in range(n_repeats):
        for d in range(len(ref.features)):
            permuted = x.copy()
            permuted[:, d] = x[orders[r][d], d]
            entropy = (ref.entropy(permuted) - base_h).mean(0)
            loss = (base_l - _log_mixture_density(ref, permuted, y)).mean()
            got = out["entropy_pfi"].values[r, d]
            assert np.all(np.isfinite(got))
            np.testing.assert_allclose(got, entropy, rtol=1e-9, atol=ENTROPY_ATOL)
            np.testing.assert_allclose(out["likelihood_pfi"].values[r, d], loss, rtol=1e-9)


def test_partial_dependence_equals_brute_force(setup):
    case, ref, x, y = setup
    out = pm_sens.partial_dependence(
        case.idata,
        case.model,
        kind=("mean", "entropy", "log_likelihood"),
        grid_resolution=4,
        **QUIET,
    )["partial_dependence"]
    n_chains, n_draws = out.sizes["chain"], out.sizes["draw"]
    for d in range(len(ref.features)):
        for k, value in enumerate(out["grid_value"].values[d]):
            if np.isnan(value):
                continue
            at = x.copy()
            at[:, d] = value
            mean = ref.mean(at)  # (S, N)
            entropy = ref.entropy(at)  # (N, 3)
            loglik = _log_mixture_density(ref, at, y)
            expected = {
                "mean_ice": mean.mean(0),
                "mean_pdp": mean.mean(1).reshape(n_chains, n_draws),
                "entropy_ice": entropy,
                "entropy_pdp": entropy.mean(0),
                "log_likelihood_ice": loglik,
                "log_likelihood_pdp": loglik.mean(),
            }
            for name, values in expected.items():
                got = out[name].isel(feature=d, grid=k).values
                assert np.all(np.isfinite(got)), name
                np.testing.assert_allclose(got, values, rtol=1e-9, atol=ENTROPY_ATOL, err_msg=name)


def test_integrated_gradients_equal_quadrature_of_finite_differences(smooth_setup):
    case, ref, x, _ = smooth_setup
    out = pm_sens.integrated_gradients(case.idata, case.model, **QUIET)["attribution"]
    baseline = x.mean(0)
    step = 1e-6

    def gradient(t):  # ∂F/∂x_d along the path, by central differences: (S, N, D)
        path = baseline + t * (x - baseline)
        columns = []
        for d in range(x.shape[1]):
            shift = np.zeros(x.shape[1])
            shift[d] = step
            columns.append((ref.mean(path + shift) - ref.mean(path - shift)) / (2 * step))
        return np.stack(columns, -1)

    integral, _ = integrate.quad_vec(gradient, 0.0, 1.0, epsabs=1e-10, epsrel=1e-8, limit=50)
    expected = (x - baseline) * integral
    got = out["ig"].values.reshape(expected.shape)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)


def _conditionals(x):
    """Mean (N, D) and sd (D,) of x_d given the other columns, by the Schur
    complement of the sample covariance (pm_sens goes through the precision)."""
    mu, cov = x.mean(0), np.atleast_2d(np.cov(x.T))
    means, sds = np.empty_like(x), np.empty(x.shape[1])
    for d in range(x.shape[1]):
        rest = [k for k in range(x.shape[1]) if k != d]
        gain = np.linalg.solve(cov[np.ix_(rest, rest)], cov[rest, d])
        means[:, d] = mu[d] + (x[:, rest] - mu[rest]) @ gain
        sds[d] = np.sqrt(cov[d, d] - cov[d, rest] @ gain)
    return means, sds


@pytest.mark.parametrize("mode", ["moment", "draw"])
def test_var_equals_adaptive_quadrature_over_the_conditionals(smooth_setup, mode):
    case, ref, x, _ = smooth_setup
    # 60 Gauss-Hermite nodes: the default 11 are within 1e-2 relative on these models
    out = pm_sens.sensitivity(
        case.idata, case.model, method="var", mode=mode, var_nodes=60, **QUIET
    )
    got = out["sensitivity"]["var"].values
    means, sds = _conditionals(x)
    expected = np.empty((len(ref.mean(x)), *x.shape))  # (S, N, D)
    for d in range(x.shape[1]):

        def moments(z, d=d):  # the predictive mean and its square, weighted by N(0, 1)
            at = x.copy()
            at[:, d] = means[:, d] + sds[d] * z
            mean = ref.mean(at)  # (S, N)
            mean = mean.mean(0, keepdims=True) if mode == "moment" else mean
            return stats.norm.pdf(z) * np.stack([mean, mean**2])

        # beyond 12 sd the weight is below 1e-31 (and a log-link mean would overflow)
        (first, second), _ = integrate.quad_vec(moments, -12, 12, epsrel=1e-11)
        expected[: len(first), :, d] = second - first**2
    expected = expected[:1] if mode == "moment" else expected
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got.reshape(expected.shape), expected, rtol=1e-7, atol=1e-12)

"""BART models: the trees of each posterior draw at moved points, against pymc-bart's own
evaluation of them (brute force), and the refusals of what needs derivatives."""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pymc_bart.utils import _get_posterior_sampler
from pytensor.graph.replace import vectorize_graph

import pm_sens
from tests.zoo import ZOO_MODULES  # noqa: F401 (registers the models)
from tests.zoo._registry import ZOO, known_posterior

QUIET = dict(progressbar=False, extend_inferencedata=False)


@pytest.fixture(scope="module")
def bart():
    """The zoo's BART regression (one chain of 60 draws) and pymc-bart's evaluator."""
    case = ZOO["bart_regression"]()
    sampler = _get_posterior_sampler(case.model["mu"].owner.op)
    x = case.model["X"].get_value()
    # one chain sampled: the history of trees is in the posterior's order
    at_rows = sampler.sample_posterior(np.ascontiguousarray(x), list(range(60)), None)[:, 0]
    np.testing.assert_allclose(at_rows, case.idata.posterior["mu"].values[0], atol=1e-12)
    return case, sampler, x


def _trees(sampler, x):
    """Each draw's sum of trees at the rows of x, (S, N), by pymc-bart."""
    return sampler.sample_posterior(np.ascontiguousarray(x), list(range(sampler.n_draws)), None)[
        :, 0
    ]


def test_tree_sums_vectorized_over_draws_are_pymc_barts_predictions(bart):
    from pm_sens.graph.frontends.trees import TreeSums

    case, sampler, x = bart
    X = pt.matrix("X")
    draw = pt.scalar("draw", dtype="int64")
    one = TreeSums(case.model["mu"].owner.op, "mu", 1)(X, draw[None])[0, 0]
    draws = pt.vector("draws", dtype="int64")
    batched = vectorize_graph(one, {draw: draws})
    x_new = x[::-1] + 0.3
    got = batched.eval({X: x_new, draws: np.arange(60)})
    np.testing.assert_array_equal(got, _trees(sampler, x_new))


def test_kl_over_a_step_against_pymc_barts_trees(bart):
    """Draw mode: sqrt(KL(+h) + KL(−h)) / h per draw; moment mode: the same between the
    mixtures' moment-matched Normals (law of total variance)."""
    case, sampler, x = bart
    sigma = case.idata.posterior["sigma"].values[0]  # (S,)
    draw = pm_sens.sensitivity(case.idata, case.model, mode="draw", **QUIET)["sensitivity"]
    moment = pm_sens.sensitivity(case.idata, case.model, **QUIET)["sensitivity"]
    assert draw.attrs["method"] == ["kl"] and draw.attrs["kl_scheme"] == "central"
    assert draw.attrs["delta"] == 0.1
    assert draw.attrs["steps"] == "X: the trees of the BART variable 'mu'"
    h = 0.1 * x.std(0)
    m0 = _trees(sampler, x)
    for d in range(3):
        shifted = [_trees(sampler, x + s * h[d] * np.eye(3)[d]) for s in (1, -1)]
        kl = sum((m - m0) ** 2 / (2 * sigma[:, None] ** 2) for m in shifted)
        expected = np.sqrt(kl) / h[d]
        np.testing.assert_allclose(draw["kl"].values[0, :, :, d], expected, rtol=1e-10)

        def mixture(m):
            return m.mean(0), (sigma[:, None] ** 2).mean(0) + m.var(0)

        (a, va), kls = mixture(m0), 0
        for m in shifted:
            b, vb = mixture(m)
            kls = kls + 0.5 * (np.log(vb / va) + (va + (a - b) ** 2) / vb - 1)
        np.testing.assert_allclose(moment["kl"].values[:, d], np.sqrt(kls) / h[d], rtol=1e-9)


def test_thinned_draws_are_the_same_draws_of_the_trees(bart):
    case, _, _ = bart
    full = pm_sens.sensitivity(case.idata, case.model, mode="draw", **QUIET)["sensitivity"]
    thinned = pm_sens.sensitivity(
        case.idata, case.model, mode="draw", num_draws=15, random_seed=2, **QUIET
    )["sensitivity"]
    kept = full["kl"].sel(draw=thinned["draw"].values)
    np.testing.assert_allclose(thinned["kl"].values, kept.values, rtol=1e-12)


def test_derivative_measures_are_refused_naming_the_trees(bart):
    case, _, _ = bart
    for call in (
        lambda: pm_sens.sensitivity(case.idata, case.model, method="rsens", **QUIET),
        lambda: pm_sens.sensitivity(case.idata, case.model, interactions=True, **QUIET),
        lambda: pm_sens.integrated_gradients(case.idata, case.model, **QUIET),
    ):
        with pytest.raises(ValueError, match=r"\['X'\] only through the trees of the BART "):
            call()


def test_a_posterior_without_the_fits_trees_is_refused(rng):
    import pymc_bart as pmb

    x = rng.normal(size=(20, 2))
    with pm.Model() as model:
        mu = pmb.BART("mu", pm.Data("X", x), x[:, 0], m=5)
        pm.Normal("y", mu, 1.0, observed=x[:, 0], shape=mu.shape)
    with pytest.raises(ValueError, match="trees are not here.*session that ran pm.sample"):
        pm_sens.permutation_importance(known_posterior(model), model, **QUIET)


@pytest.mark.slow
def test_chains_are_matched_to_the_histories_of_trees(rng):
    """Two chains: the results do not depend on the order of the posterior's chains,
    and chains sampled one after another (pymc-bart keeps one history) are refused."""
    import pymc_bart as pmb

    x = rng.normal(size=(30, 2))
    with pm.Model() as model:
        mu = pmb.BART("mu", pm.Data("X", x), x[:, 0], m=5)
        pm.Normal("y", mu, 0.5, observed=x[:, 0], shape=mu.shape)
        idata = pm.sample(20, tune=20, chains=2, cores=2, random_seed=1, progressbar=False)
    out = pm_sens.sensitivity(idata, model, mode="draw", **QUIET)["sensitivity"]
    swapped = idata.isel(chain=[1, 0])
    again = pm_sens.sensitivity(swapped, model, mode="draw", **QUIET)["sensitivity"]
    np.testing.assert_array_equal(again["kl"].sel(chain=[0, 1]).values, out["kl"].values)
    with model:  # pymc-bart adds the new fit's histories to the op's (one here)
        two = pm.sample(20, tune=20, chains=2, cores=1, random_seed=3, progressbar=False)
    with pytest.raises(ValueError, match=r"in chain 1 .*one after another \(cores=1\)"):
        pm_sens.sensitivity(two, model, **QUIET)
    first = pm_sens.sensitivity(two.isel(chain=[0]), model, mode="draw", **QUIET)
    assert np.isfinite(first["sensitivity"]["kl"].values).all()


def test_a_bart_of_two_outputs_against_pymc_barts_trees():
    """BART of shape (2, n): a Gamma's log mean and log sd from one set of trees; the
    draw-mode KL over a step against the Gamma KL in closed form (shape-rate)."""
    from scipy.special import digamma, gammaln

    case = ZOO["bart_heteroscedastic_gamma"]()
    sampler = _get_posterior_sampler(case.model["w"].owner.op)
    age = np.asarray(case.model["w"].owner.op.X)[:, 0]  # the NumPy column pymc-bart holds

    def shape_rate(x):
        w = sampler.sample_posterior(np.ascontiguousarray(x[:, None]), list(range(60)), None)
        mean, sd = np.exp(w[:, 0]), np.exp(w[:, 1])  # (S, N)
        return mean**2 / sd**2, mean / sd**2

    def gamma_kl(p, q):
        (a1, b1), (a2, b2) = p, q
        return (
            (a1 - a2) * digamma(a1)
            - gammaln(a1)
            + gammaln(a2)
            + a2 * (np.log(b1) - np.log(b2))
            + a1 * (b2 - b1) / b1
        )

    out = pm_sens.sensitivity(case.idata, case.model, mode="draw", **QUIET)["sensitivity"]
    h = 0.1 * age.std()
    base = shape_rate(age)
    kl = gamma_kl(base, shape_rate(age + h)) + gamma_kl(base, shape_rate(age - h))
    np.testing.assert_allclose(out["kl"].values[0, :, :, 0], np.sqrt(kl) / h, rtol=1e-9)


def test_integer_columns_jittered_by_pymc_bart_are_checked_at_the_rows_it_left(rng, caplog):
    """pymc-bart's sampler grows trees on a copy of X whose repeated whole numbers are
    jittered: the draws match the trees only at first occurrences, which pm_sens checks;
    the trees are evaluated at the rows' own values, with a message. A posterior of
    another fit still fails the check."""
    import pymc_bart as pmb

    from pm_sens.graph.frontends.trees import jittered_rows

    n = 40
    x = np.column_stack([rng.normal(size=n), rng.integers(0, 2, n), rng.integers(0, 3, n)])
    y = x[:, 0] + 2 * x[:, 1] - x[:, 2] + rng.normal(0, 0.3, n)
    with pm.Model() as model:
        mu = pmb.BART("mu", pm.Data("X", x.astype(float)), y, m=10)
        pm.Normal("y", mu, 0.3, observed=y, shape=mu.shape)
        idata = pm.sample(
            20,
            tune=20,
            chains=1,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
    first = {k: np.unique(x[:, k], return_index=True)[1] for k in (1, 2)}
    unmoved = np.isin(np.arange(n), first[1]) & np.isin(np.arange(n), first[2])
    np.testing.assert_array_equal(jittered_rows(mu, x), ~unmoved)
    sampler = _get_posterior_sampler(mu.owner.op)
    at_rows = sampler.sample_posterior(np.ascontiguousarray(x, dtype=float), [0], None)[0, 0]
    draws = idata.posterior["mu"].values[0, 0]
    np.testing.assert_allclose(at_rows[unmoved], draws[unmoved], rtol=1e-12)
    assert not np.allclose(at_rows, draws)  # pymc-bart's own evaluation, at the rows moved

    with caplog.at_level("INFO", logger="pm_sens"):
        out = pm_sens.permutation_importance(idata, model, **QUIET)["permutation_importance"]
    assert np.isfinite(out["likelihood_pfi"]).all()
    assert "jittered copies of the repeated values" in caplog.text

    other = idata.copy()
    other.posterior["mu"] = other.posterior["mu"] + 0.01
    with pytest.raises(ValueError, match=r"do not reproduce idata.posterior\['mu'\]"):
        pm_sens.permutation_importance(other, model, **QUIET)

"""The JAX backend: the ``backend`` option, the same results as the CPU backend's on
JAX's CPU build, the data copied to JAX's device once, and its errors."""

import importlib.util
import threading

import arviz_base as azb
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pytensor.compile.ops import wrap_py
from scipy import special, stats

import pm_sens
from pm_sens._core import context as _context
from pm_sens._core.request import Request
from pm_sens._run import chunks as _chunks
from pm_sens._run.chunks import equal_chunks
from pm_sens._run.compiling import dependence_of
from pm_sens.graph.compile import functions as _functions
from pm_sens.graph.compile import jax_functions as _jax_functions
from pm_sens.graph.compile.compiled import CompiledPredictive
from pm_sens.graph.compile.jax_functions import DeviceArrays, JaxGraphFunction

pytest.importorskip("jax")

QUIET = dict(progressbar=False, extend_inferencedata=False)


@pytest.fixture(scope="module")
def heteroscedastic():
    """μ = Xb, log σ = c + g·x₀: two varying parameters, both moment and draw mode."""
    rng = np.random.default_rng(7)
    n, d = 300, 3
    x = rng.normal(size=(n, d))
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", shape=d)
        c = pm.Normal("c")
        g = pm.Normal("g")
        y = rng.normal(size=n)
        pm.Normal("y", mu=xd @ b, sigma=pt.exp(c + g * xd[:, 0]), observed=y)
    idata = azb.from_dict(
        {
            "posterior": {
                "b": rng.normal(size=(2, 40, d)),
                "c": 0.1 * rng.normal(size=(2, 40)),
                "g": 0.3 * rng.normal(size=(2, 40)),
            },
            "observed_data": {"y": y},
        }
    )
    return model, idata


def test_set_options_chooses_the_backend_and_a_call_overrides_it(heteroscedastic, monkeypatch):
    model, idata = heteroscedastic
    assert pm_sens.get_options("backend") == "cpu"
    chosen = []
    real = _functions.compile_mode

    def recording(backend):
        chosen.append(backend)
        return real(backend)

    monkeypatch.setattr(_functions, "compile_mode", recording)
    monkeypatch.setattr(_jax_functions, "compile_mode", recording)
    with pm_sens.set_options(backend="jax"):
        assert pm_sens.get_options() == {"cores": 1, "backend": "jax", "dtype": "float64"}
        pm_sens.sensitivity(idata, model, mode="draw", method="var", **QUIET)
        assert set(chosen) == {"jax"}
        chosen.clear()
        pm_sens.sensitivity(idata, model, mode="draw", method="var", backend="cpu", **QUIET)
        assert "jax" not in chosen
    assert pm_sens.get_options("backend") == "cpu"


@pytest.mark.parametrize(
    ("call", "kwargs"),
    [
        ("sensitivity", {"mode": "moment", "interactions": True}),
        ("sensitivity", {"mode": "draw", "interactions": True}),
        ("sensitivity", {"mode": "draw", "local": False}),
        ("permutation_importance", {"random_seed": 3}),
        ("partial_dependence", {"kind": ("mean", "entropy", "log_likelihood")}),
        ("integrated_gradients", {}),
    ],
)
def test_the_jax_backend_gives_the_cpu_backends_results(heteroscedastic, call, kwargs):
    model, idata = heteroscedastic
    function = getattr(pm_sens, call)
    cpu = function(idata, model, **kwargs, **QUIET)
    jax = function(idata, model, backend="jax", **kwargs, **QUIET)
    group = next(name for name in cpu.children if name not in idata.children)
    expected, got = cpu[group].to_dataset(), jax[group].to_dataset()
    assert set(got.data_vars) == set(expected.data_vars)
    for name, var in expected.data_vars.items():
        scale = np.nanmax(np.abs(var.values))
        assert scale > 0, name
        np.testing.assert_allclose(
            got[name].values, var.values, rtol=1e-10, atol=1e-10 * scale, err_msg=name
        )


def _recorded_outputs(monkeypatch):
    """A list that each compiled predictive's call appends its outputs to: the
    parameters, the statistics' names, and the sums' shapes with the chunk's draws."""
    returned = []
    real = CompiledPredictive.__call__

    def recording(self, data_values, draw_values):
        out = real(self, data_values, draw_values)
        sums = {k: v.shape for k, v in out.sums.items()}
        returned.append((out.phi, list(out.statistics), (sums, len(draw_values[0]))))
        return out

    monkeypatch.setattr(CompiledPredictive, "__call__", recording)
    return returned


def test_jax_sums_the_entropies_and_the_mixture_over_draws_on_the_device(
    heteroscedastic, monkeypatch
):
    """A closed-form entropy's PDP comes back as sums over each chunk's draws (no
    per-draw entropy, variance or parameters), equal to the Normal's closed forms:
    aleatoric E_s[½ log 2πe + c_s + g_s v] at x₀ = v, total ½ log 2πe V with V the
    mixture's variance E_s σ_s² + Var_s μ_s."""
    model, idata = heteroscedastic
    returned = _recorded_outputs(monkeypatch)
    pdp = pm_sens.partial_dependence(
        idata, model, features="0", grid_resolution=3, backend="jax", **QUIET
    )["partial_dependence"]
    rows = 3 * 300  # the 300 points at each grid value (the others: finding the dependence)
    on_rows = [out for out in returned if out[0] is None or out[0].shape[-2] == rows]
    assert on_rows and all(
        phi is None
        and not statistics
        and sums
        == {
            "entropy": (rows,),
            "mixture": (rows, 2),
            "point_means": (size, 3),
            "mean_sum": (rows,),
        }
        for phi, statistics, (sums, size) in on_rows
    )
    post = idata.posterior
    x = model["X"].get_value()
    b = post["b"].values.reshape(-1, 3)
    c, g = post["c"].values.ravel(), post["g"].values.ravel()
    values = pdp["grid_value"].values[0]
    for k, v in enumerate(values):
        moved = x.copy()
        moved[:, 0] = v
        mu, log_sigma = moved @ b.T, c + g * v  # (N, S), (S,)
        aleatoric = 0.5 * np.log(2 * np.pi * np.e) + log_sigma.mean()
        variance = np.exp(2 * log_sigma).mean() + mu.var(axis=1)
        total = 0.5 * np.log(2 * np.pi * np.e * variance)
        ice = pdp["entropy_ice"].values[0, k]
        np.testing.assert_allclose(ice[:, 1], aleatoric, rtol=1e-12)
        np.testing.assert_allclose(ice[:, 0], total, rtol=1e-12)


@pytest.mark.parametrize("logit", [True, False])
def test_an_accelerator_sums_a_bernoullis_tables_over_draws_on_the_device(logit, monkeypatch):
    """Bernoulli entropies and log likelihoods (logit_p= or p=): on an accelerator the
    pmf tables and their logs are summed in the graph (nothing per draw comes back but
    the means the curves need), and the PDP's entropies are H(E_s p_s) and E_s H(p_s),
    its log likelihood log E_s p_s(y), as on the CPU backend; so are permutation
    importance's, with nothing per draw coming back."""
    rng = np.random.default_rng(3)
    # each point twice: rows the CPU backend evaluates once, an accelerator every time,
    # so that the curves' sums are taken there
    x, y = np.repeat(rng.normal(size=(25, 2)), 2, axis=0), rng.integers(0, 2, 50)
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", shape=2)
        eta = xd @ b
        if logit:
            pm.Bernoulli("y", logit_p=eta, observed=y)
        else:
            pm.Bernoulli("y", p=pm.math.sigmoid(eta), observed=y)
    beta = 3 * rng.normal(size=(2, 10, 2))
    idata = azb.from_dict({"posterior": {"b": beta}, "observed_data": {"y": y}})
    # the CPU backend's calls below ignore it
    monkeypatch.setattr(_jax_functions, "on_an_accelerator", lambda: True)
    returned = _recorded_outputs(monkeypatch)
    rows = 3 * 50
    table = {"table": (rows, 3)}
    curves = {"point_means": (None, 3), "mean_sum": (rows,)}
    # the default kinds (the rows' repeats not evaluated apart on the CPU), then the
    # observed y's log likelihood too
    for kind, on_device in (
        (("mean", "entropy"), table | curves),
        (("mean", "entropy", "log_likelihood"), table | {"log_table": (rows, 2)} | curves),
    ):
        kwargs = dict(features="0", grid_resolution=3, kind=kind, **QUIET)
        cpu = pm_sens.partial_dependence(idata, model, **kwargs)["partial_dependence"]
        returned.clear()
        jax = pm_sens.partial_dependence(idata, model, backend="jax", **kwargs)
        jax = jax["partial_dependence"]
        on_rows = [out for out in returned if out[0] is None or out[0].shape[-2] == rows]
        assert on_rows and all(
            phi is None and not statistics and sums == on_device | {"point_means": (size, 3)}
            for phi, statistics, (sums, size) in on_rows
        )
        for name in jax.data_vars:
            np.testing.assert_allclose(
                jax[name].values, cpu[name].values, rtol=1e-12, err_msg=name
            )
    for k, v in enumerate(jax["grid_value"].values[0]):
        moved = x.copy()
        moved[:, 0] = v
        p = 1 / (1 + np.exp(-(moved @ beta.reshape(-1, 2).T)))  # (N, S)
        entropy = special.entr(p) + special.entr(1 - p)
        p_bar = p.mean(1)
        total = special.entr(p_bar) + special.entr(1 - p_bar)
        ice = jax["entropy_ice"].values[0, k]
        np.testing.assert_allclose(ice[:, 1], entropy.mean(1), rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(ice[:, 0], total, rtol=1e-10, atol=1e-14)
        log_likelihood = np.log(np.where(y == 1, p_bar, (1 - p).mean(1)))
        np.testing.assert_allclose(
            jax["log_likelihood_ice"].values[0, k], log_likelihood, rtol=1e-10
        )
    pfi = dict(n_repeats=2, random_seed=1, **QUIET)
    cpu = pm_sens.permutation_importance(idata, model, **pfi)["permutation_importance"]
    returned.clear()
    jax = pm_sens.permutation_importance(idata, model, backend="jax", **pfi)
    assert returned and all(phi is None and not statistics for phi, statistics, _ in returned)
    for name in ("entropy_pfi", "likelihood_pfi"):
        np.testing.assert_allclose(
            jax["permutation_importance"][name].values, cpu[name].values, rtol=1e-12, atol=1e-15
        )


@pytest.mark.parametrize(
    "kind", [("mean", "entropy"), ("mean", "entropy", "log_likelihood")], ids=["default", "all"]
)
def test_an_accelerator_evaluates_repeated_rows_once_where_few_are_distinct(kind, monkeypatch):
    """A one-input logistic regression: at each grid value every point is the same row,
    so an accelerator evaluates the distinct rows only, as the CPU does (their tables
    and log tables spread back to the points, the observed y read at each), and the
    curves' means come back per draw (sums over rows spread back from distinct ones
    would be wrong); the PDP is the CPU backend's (an epistemic entropy, a difference,
    to rounding)."""
    rng = np.random.default_rng(9)
    x, y = rng.normal(size=40), rng.integers(0, 2, 40)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        pm.Bernoulli("y", logit_p=b * xd, observed=y)
    idata = azb.from_dict({"posterior": {"b": rng.normal(size=(1, 8))}, "observed_data": {"y": y}})
    kwargs = dict(grid_resolution=5, kind=kind, **QUIET)
    cpu = pm_sens.partial_dependence(idata, model, **kwargs)["partial_dependence"]
    monkeypatch.setattr(_jax_functions, "on_an_accelerator", lambda: True)
    returned = _recorded_outputs(monkeypatch)
    jax = pm_sens.partial_dependence(idata, model, backend="jax", **kwargs)["partial_dependence"]
    on_device = [(statistics, sums) for phi, statistics, (sums, _) in returned if phi is None]
    assert [sums["table"][0] for _, sums in on_device] == [5]  # a row per grid value
    assert all(
        "mean" in statistics and "point_means" not in sums for statistics, sums in on_device
    )
    for name in jax.data_vars:
        scale = np.abs(cpu[name].values).max()
        np.testing.assert_allclose(
            jax[name].values, cpu[name].values, rtol=1e-12, atol=1e-14 * scale, err_msg=name
        )


def test_an_accelerator_sums_a_categoricals_tables_over_draws_on_the_device(monkeypatch):
    """Softmax regression over 3 classes: on an accelerator the class probabilities, their
    logs and the entropies are summed in the graph; the PDP's entropies are H(E_s p_s)
    and E_s H(p_s) and its log likelihood log E_s p_s(y), as on the CPU backend."""
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=(40, 2)), rng.integers(0, 3, 40)
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", shape=(2, 3))
        pm.Categorical("y", p=pm.math.softmax(xd @ b, axis=1), observed=y)
    beta = 2 * rng.normal(size=(1, 12, 2, 3))
    idata = azb.from_dict({"posterior": {"b": beta}, "observed_data": {"y": y}})
    monkeypatch.setattr(_jax_functions, "on_an_accelerator", lambda: True)
    returned = _recorded_outputs(monkeypatch)
    kwargs = dict(features="0", grid_resolution=3, kind=("entropy", "log_likelihood"), **QUIET)
    cpu = pm_sens.partial_dependence(idata, model, **kwargs)["partial_dependence"]
    returned.clear()
    jax = pm_sens.partial_dependence(idata, model, backend="jax", **kwargs)
    jax = jax["partial_dependence"]
    rows = 3 * 40
    # the device's sums (the others: finding the dependence on the points)
    on_device = [sums for phi, statistics, (sums, _) in returned if phi is None]
    assert on_device == [{"table": (rows, 4), "log_table": (rows, 3)}]
    assert not [out for out in returned if out[0] is not None and out[0].shape[-2] == rows]
    for name in jax.data_vars:
        np.testing.assert_allclose(jax[name].values, cpu[name].values, rtol=1e-12, err_msg=name)
    for k, v in enumerate(jax["grid_value"].values[0]):
        moved = x.copy()
        moved[:, 0] = v
        p = special.softmax(np.einsum("nd,sdk->snk", moved, beta[0]), axis=-1)  # (S, N, K)
        entropy = special.entr(p).sum(-1)
        p_bar = p.mean(0)
        ice = jax["entropy_ice"].values[0, k]
        np.testing.assert_allclose(ice[:, 1], entropy.mean(0), rtol=1e-10)
        np.testing.assert_allclose(ice[:, 0], special.entr(p_bar).sum(-1), rtol=1e-10)
        np.testing.assert_allclose(
            jax["log_likelihood_ice"].values[0, k],
            np.log(p_bar[np.arange(40), y]),
            rtol=1e-10,
        )


def test_jax_sums_a_normals_log_density_at_the_observed_y_on_the_device(
    heteroscedastic, monkeypatch
):
    """μ = Xb, log σ = c + g·x₀: on the JAX backend (its CPU build too) each row's
    observed y enters the graph and its log density is summed over draws there beside
    the entropies, so nothing per draw comes back for permutation importance's
    default kinds or the PDP's; the PDP's log likelihood is log E_s N(y | μ_s, σ_s)
    (SciPy), and both give the CPU backend's numbers."""
    model, idata = heteroscedastic
    returned = _recorded_outputs(monkeypatch)
    pfi = dict(n_repeats=2, random_seed=1, **QUIET)
    cpu = pm_sens.permutation_importance(idata, model, **pfi)["permutation_importance"]
    returned.clear()
    jax = pm_sens.permutation_importance(idata, model, backend="jax", **pfi)
    rows = (1 + 2 * 3) * 300  # the points, then each repeat's permutation of each input
    on_rows = [out for out in returned if out[0] is None or out[0].shape[-2] == rows]
    sums = {"entropy": (rows,), "mixture": (rows, 2), "log_density": (rows,)}
    assert on_rows and all(
        phi is None and not statistics and got == sums for phi, statistics, (got, _) in on_rows
    )
    for name in ("entropy_pfi", "likelihood_pfi"):
        np.testing.assert_allclose(
            jax["permutation_importance"][name].values, cpu[name].values, rtol=1e-12, atol=1e-15
        )
    kwargs = dict(features="0", grid_resolution=3, kind=("mean", "log_likelihood"), **QUIET)
    cpu = pm_sens.partial_dependence(idata, model, **kwargs)["partial_dependence"]
    returned.clear()
    jax = pm_sens.partial_dependence(idata, model, backend="jax", **kwargs)["partial_dependence"]
    rows = 3 * 300
    on_rows = [out for out in returned if out[0] is None or out[0].shape[-2] == rows]
    assert on_rows and all(
        phi is None and got.keys() == {"log_density", "point_means", "mean_sum"}
        for phi, _, (got, _) in on_rows
    )
    for name in jax.data_vars:
        np.testing.assert_allclose(jax[name].values, cpu[name].values, rtol=1e-12, err_msg=name)
    post = idata.posterior
    x, y = model["X"].get_value(), idata.observed_data["y"].values
    b = post["b"].values.reshape(-1, 3)
    c, g = post["c"].values.ravel(), post["g"].values.ravel()
    for k, v in enumerate(jax["grid_value"].values[0]):
        moved = x.copy()
        moved[:, 0] = v
        cells = stats.norm.logpdf(y[:, None], moved @ b.T, np.exp(c + g * v))  # (N, S)
        np.testing.assert_allclose(
            jax["log_likelihood_ice"].values[0, k],
            special.logsumexp(cells, axis=1) - np.log(len(c)),
            rtol=1e-12,
        )


def _regression_on_two_inputs(law, y, rng):
    """``law(X @ b, y)`` on 30 rows of two normal inputs, with 10 known draws of b."""
    with pm.Model() as model:
        xd = pm.Data("X", rng.normal(size=(len(y), 2)))
        law(xd @ pm.Normal("b", shape=2), y)
    observed = model.observed_RVs[0]
    idata = azb.from_dict(
        {
            "posterior": {"b": 0.5 * rng.normal(size=(1, 10, 2))},
            "observed_data": {"y": model.rvs_to_values[observed].data},
        }
    )
    return model, idata


@pytest.mark.parametrize(
    "law",
    [
        lambda mu, y: pm.Laplace("y", mu=mu, b=0.7, observed=y),
        lambda mu, y: pm.Logistic("y", mu=mu, s=0.7, observed=y),
        lambda mu, y: pm.Gumbel("y", mu=mu, beta=0.7, observed=y),
        lambda mu, y: pm.Exponential("y", scale=pt.exp(mu), observed=np.exp(y)),
        lambda mu, y: pm.LogNormal("y", mu=mu, sigma=0.7, observed=np.exp(y)),
        lambda mu, y: pm.StudentT("y", nu=pt.exp(mu) + 1, mu=mu, sigma=0.7, observed=y),
        lambda mu, y: pm.Gamma("y", alpha=pt.exp(mu) + 0.5, beta=2.0, observed=np.exp(y)),
        lambda mu, y: pm.Beta(
            "y", alpha=pt.exp(mu) + 0.5, beta=3.0, observed=special.expit(y).clip(0.01, 0.99)
        ),
        # bounds: fixed parameters of its log density
        lambda mu, y: pm.TruncatedNormal(
            "y", mu=mu, sigma=0.7, lower=-2.0, upper=2.5, observed=y.clip(-1.9, 2.4)
        ),
        # shifted: the shift is a fixed parameter of its log density
        lambda mu, y: pm.Wald("y", mu=pt.exp(mu), lam=2.0, alpha=0.2, observed=np.exp(y) + 0.2),
        # censored: a mass's log at y on a bound
        lambda mu, y: pm.Censored(
            "y", pm.Normal.dist(mu, 0.7), lower=-1.0, upper=1.0, observed=y.clip(-1.0, 1.0)
        ),
        lambda mu, y: pm.Censored(
            "y",
            pm.Weibull.dist(alpha=1.5, beta=pt.exp(mu)),
            lower=None,
            upper=2.0,
            observed=np.minimum(np.exp(y), 2.0),
        ),
        # hurdles: a mass at 0
        lambda mu, y: pm.HurdleLogNormal(
            "y", psi=0.7, mu=mu, sigma=0.7, observed=np.where(y > 0.5, 0.0, np.exp(y))
        ),
        lambda mu, y: pm.HurdleGamma(
            "y",
            psi=pt.sigmoid(mu),
            alpha=2.0,
            beta=pt.exp(-mu),
            observed=np.where(y > 0.5, 0.0, np.exp(y)),
        ),
    ],
    ids=[
        "laplace",
        "logistic",
        "gumbel",
        "exponential",
        "lognormal",
        "studentt",
        "gamma",
        "beta",
        "truncated_normal",
        "wald",
        "censored_normal",
        "censored_weibull",
        "hurdle_lognormal",
        "hurdle_gamma",
    ],
)
def test_jax_sums_each_closed_form_log_density_on_the_device(law, monkeypatch):
    """Every family with a log density written for a graph: permutation importance's
    default kinds come back from the JAX backend without per-draw arrays, the log
    density summed over draws in the graph, and equal the CPU backend's."""
    rng = np.random.default_rng(11)
    model, idata = _regression_on_two_inputs(law, rng.normal(size=30), rng)
    pfi = dict(n_repeats=1, random_seed=2, **QUIET)
    cpu = pm_sens.permutation_importance(idata, model, **pfi)["permutation_importance"]
    returned = _recorded_outputs(monkeypatch)
    jax = pm_sens.permutation_importance(idata, model, backend="jax", **pfi)
    # no per-draw parameters of the rows (a moment pass's mixture moments, the
    # Student-t's, are the rows' size)
    assert not [phi for phi, _, _ in returned if phi is not None and phi.shape[:-1] == (10, 90)]
    assert any(got.get("log_density") == (90,) for _, _, (got, _) in returned)
    for name in ("entropy_pfi", "likelihood_pfi"):
        np.testing.assert_allclose(
            jax["permutation_importance"][name].values, cpu[name].values, rtol=1e-12, atol=1e-15
        )


@pytest.mark.parametrize(
    "law",
    [
        lambda mu, y: pm.Poisson("y", mu=pt.exp(mu), observed=y),
        lambda mu, y: pm.NegativeBinomial("y", mu=pt.exp(mu), alpha=2.5, observed=y),
        lambda mu, y: pm.Bernoulli("y", logit_p=mu, observed=(y > 1).astype(int)),
        # trials per row: a fixed parameter of its log pmf
        lambda mu, y: pm.Binomial("y", n=y + 3, p=pt.sigmoid(mu), observed=y),
        lambda mu, y: pm.BetaBinomial("y", n=y + 3, alpha=pt.exp(mu) + 0.5, beta=2.0, observed=y),
        lambda mu, y: pm.ZeroInflatedPoisson("y", psi=0.7, mu=pt.exp(mu), observed=y),
        lambda mu, y: pm.HurdleNegativeBinomial(
            "y", psi=pt.sigmoid(mu), mu=2.0, alpha=3.0, observed=y
        ),
        lambda mu, y: pm.Truncated("y", pm.Poisson.dist(mu=pt.exp(mu)), lower=1, observed=y + 1),
    ],
    ids=[
        "poisson",
        "negative_binomial",
        "bernoulli",
        "binomial",
        "beta_binomial",
        "zero_inflated_poisson",
        "hurdle_negative_binomial",
        "zero_truncated_poisson",
    ],
)
def test_jax_sums_each_count_laws_log_pmf_on_the_device(law, monkeypatch):
    """Every count law with a log pmf written for a graph: the likelihood's permutation
    importance comes back from the JAX backend without per-draw arrays, the observed
    count's log pmf summed over draws in the graph, and equals the CPU backend's."""
    rng = np.random.default_rng(12)
    model, idata = _regression_on_two_inputs(law, rng.poisson(1.5, size=30), rng)
    pfi = dict(kind="likelihood", n_repeats=1, random_seed=2, **QUIET)
    cpu = pm_sens.permutation_importance(idata, model, **pfi)["permutation_importance"]
    returned = _recorded_outputs(monkeypatch)
    jax = pm_sens.permutation_importance(idata, model, backend="jax", **pfi)
    # no per-draw parameters of the permuted rows (the dependence probe's are of 8 draws)
    assert not [phi for phi, _, _ in returned if phi is not None and phi.shape[-2] == 90]
    assert any(got.get("log_density") == (90,) for _, _, (got, _) in returned)
    np.testing.assert_allclose(
        jax["permutation_importance"]["likelihood_pfi"].values,
        cpu["likelihood_pfi"].values,
        rtol=1e-12,
        atol=1e-15,
    )


def test_the_wald_entropys_special_function_runs_on_jax_with_scipys_values():
    """``e^z E₁(z)`` (`pm_sens.graph.compile.special`) compiled by the JAX backend's
    linker (by series and continued fraction): SciPy's values to 1e-14."""
    from pm_sens.graph.compile.special import scaled_exp1

    z = pt.vector("z")
    function = JaxGraphFunction([z], [scaled_exp1(z)])
    near = np.geomspace(1e-6, 600, 400)
    (got,) = function(near)
    np.testing.assert_allclose(got, np.exp(near) * special.exp1(near), rtol=1e-14)
    far = np.geomspace(600, 700, 50)  # e^z overflows, SciPy's E₁ does not underflow yet
    (got,) = function(far)
    np.testing.assert_allclose(np.log(got) - far, np.log(special.exp1(far)), rtol=1e-14)


def test_the_incomplete_gamma_functions_run_on_jax_with_scipys_values():
    """PyTensor's ``gammainc`` and ``gammaincc`` compiled by the JAX backend: by
    arithmetic where every shape is at most 40, by XLA's own beyond, SciPy's values
    (to 1e-12 absolute) either way."""
    s, x = pt.vector("s"), pt.vector("x")
    function = JaxGraphFunction([s, x], [pt.gammainc(s, x), pt.gammaincc(s, x)])
    rng = np.random.default_rng(3)
    within = rng.uniform(1e-3, 40, 2000)
    at = np.append(within[:-1] * np.exp(rng.normal(0, 1, 1999)), np.inf)
    for shapes in (within, np.append(within[:-1], 60.0)):  # 60: XLA's
        lower, upper = function(shapes, at)
        np.testing.assert_allclose(lower, special.gammainc(shapes, at), rtol=0, atol=1e-12)
        np.testing.assert_allclose(upper, special.gammaincc(shapes, at), rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("kind", "memory_limit", "rows"), [("entropy", 2e6, 90), (None, 1.2e7, 300)]
)
def test_sums_over_draws_take_every_draw_at_once_and_the_rows_in_blocks(
    heteroscedastic, monkeypatch, kind, memory_limit, rows
):
    """A graph that returns sums over its draws only takes every draw in one chunk, and
    as many rows as fit the memory limit with them (whole copies of the points where it
    averages the mean over each: the default kinds' curves), so that the arrays that come
    back are of the rows' size once; the PDP is the CPU backend's."""
    model, idata = heteroscedastic
    kwargs = dict(features="0", grid_resolution=3, memory_limit=memory_limit, **QUIET)
    if kind is not None:
        kwargs["kind"] = kind
    cpu = pm_sens.partial_dependence(idata, model, **kwargs)["partial_dependence"]
    returned = _recorded_outputs(monkeypatch)
    jax = pm_sens.partial_dependence(idata, model, backend="jax", **kwargs)["partial_dependence"]
    sums = [(sums["entropy"][0], draws) for _, _, (sums, draws) in returned if sums]
    assert sums == [(rows, 80)] * (900 // rows)
    for name in jax.data_vars:
        np.testing.assert_allclose(jax[name].values, cpu[name].values, rtol=1e-12, err_msg=name)


def test_a_nan_in_an_entropy_summed_on_the_device_names_the_point_and_the_draws():
    """σ = sqrt(s·x): undefined where x < 0, in the entropies JAX sums over draws."""
    x = np.array([1.0, 2.0, 3.0])
    with pm.Model() as model:
        xd = pm.Data("x", x)
        s = pm.HalfNormal("s")
        pm.Normal("y", mu=xd, sigma=pt.sqrt(s * xd), observed=x)
    idata = azb.from_dict({"posterior": {"s": np.full((1, 4), 0.5)}, "observed_data": {"y": x}})
    points = {"x": np.array([1.0, -2.0, 3.0])}
    message = r"sum over draws of the per-draw entropy is nan at point 1 \(draws 0 to 3"
    with pytest.raises(ValueError, match=message):
        pm_sens.permutation_importance(
            idata, model, points=points, kind="entropy", backend="jax", **QUIET
        )


def test_the_data_are_copied_to_the_device_once_not_once_per_chunk(monkeypatch):
    import jax

    x = pt.matrix("x")
    b = pt.vector("b")
    function = JaxGraphFunction([x, b], [pt.sigmoid(x @ b)])
    copied = []
    real = jax.device_put

    def counting(value, *args, **kwargs):
        copied.append(np.shape(value))
        return real(value, *args, **kwargs)

    monkeypatch.setattr(jax, "device_put", counting)
    data = np.random.default_rng(0).normal(size=(20_000, 3))
    for seed in range(3):  # three chunks of draws: new small arrays each time
        beta = np.random.default_rng(seed).normal(size=3)
        (out,) = function(data, beta)
        assert isinstance(out, np.ndarray) and out.flags.writeable
        np.testing.assert_allclose(out, 1 / (1 + np.exp(-(data @ beta))), rtol=1e-14)
    assert copied == [(20_000, 3)]


def test_an_operation_jax_cannot_run_is_named_with_the_backend_that_runs_it(rng):
    @wrap_py(itypes=[pt.dvector], otypes=[pt.dvector])
    def clipped(v):
        return np.clip(v, -3.0, 3.0)

    n = 30
    x = rng.normal(size=n)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        pm.Normal("y", mu=clipped(b * xd), sigma=1.0, observed=x)
    idata = azb.from_dict(
        {"posterior": {"b": rng.normal(size=(1, 10))}, "observed_data": {"y": x}}
    )
    # the CPU backend runs it (no derivative needed)
    pm_sens.permutation_importance(idata, model, random_seed=1, **QUIET)
    with pytest.raises(ValueError, match=r"JAX backend cannot run.*clipped.*backend='cpu'"):
        pm_sens.permutation_importance(idata, model, random_seed=1, backend="jax", **QUIET)


def test_two_threads_calling_jax_leave_the_warning_filters_as_they_were():
    """Python's warning filters are one list: a thread that enters the JAX calls'
    filters while another is inside, and leaves after it, would set back the other's
    filters at its end (PyTensor's notices then ignored in the whole process). The
    second waits for the first instead."""
    import warnings

    before = list(warnings.filters)
    entered, second_inside, first_left = (threading.Event() for _ in range(3))

    def first():
        with _jax_functions._jax_errors():
            entered.set()
            second_inside.wait(0.5)  # the second cannot enter while this one is inside
        first_left.set()

    def second():
        entered.wait(5)
        with _jax_functions._jax_errors():
            second_inside.set()
            first_left.wait(5)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert warnings.filters == before


@pytest.mark.parametrize("value", ["tpu", 1, "JAX"])
def test_a_backend_that_is_not_one_of_ours_is_refused(value, heteroscedastic):
    model, idata = heteroscedastic
    match = rf"backend={value!r} is not valid; it must be None or one of \('cpu', 'jax', 'gpu'\)"
    with pytest.raises(ValueError, match=match):
        pm_sens.sensitivity(idata, model, backend=value, **QUIET)
    with pytest.raises(ValueError, match=match):
        pm_sens.set_options(backend=value)


def test_the_jax_backend_without_jax_names_the_extra(heteroscedastic, monkeypatch):
    model, idata = heteroscedastic
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "jax" else real(name, *a)
    )
    with pytest.raises(ImportError, match=r"backend='jax'.*pip install pm_sens\[jax\]"):
        pm_sens.sensitivity(idata, model, backend="jax", **QUIET)


def test_a_gpu_asked_for_where_jax_sees_none_says_what_runs_instead(heteroscedastic):
    import jax

    if any(device.platform == "gpu" for device in jax.devices()):
        pytest.skip("JAX sees a GPU here")
    model, idata = heteroscedastic
    with pytest.warns(UserWarning, match=r"JAX sees no GPU.*runs on the CPU"):
        gpu = pm_sens.sensitivity(idata, model, mode="draw", backend="gpu", **QUIET)
    cpu = pm_sens.sensitivity(idata, model, mode="draw", **QUIET)
    np.testing.assert_allclose(
        gpu["sensitivity"]["rsens"].values, cpu["sensitivity"]["rsens"].values, rtol=1e-10
    )


def test_the_rows_each_row_moves_are_found_on_the_jax_backend_as_on_the_cpu(rng, monkeypatch):
    """The dependence probes move inputs in place: each probe's data reach the device.

    JAX's CPU device may share a NumPy array's memory; a GPU holds a copy, as here.
    """
    import jax

    real = jax.device_put
    monkeypatch.setattr(jax, "device_put", lambda value, *a, **k: real(np.array(value), *a, **k))
    # more rows than are probed one by one (the window is verified at every row), and
    # enough values for the data to be kept on the device
    n = DeviceArrays.LARGE + 100
    x = rng.normal(size=n)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        lagged = pt.concatenate([xd[:1], xd[:-1]])  # each row reads the one before
        pm.Normal("y", mu=b * xd + 0.5 * b * lagged, sigma=1.0, observed=x)
    idata = azb.from_dict(
        {"posterior": {"b": rng.normal(size=(1, 10))}, "observed_data": {"y": x}}
    )
    found = {}
    for backend in ("cpu", "jax"):
        ctx = _context.make_context(Request(idata, model, backend=backend, progressbar=False))
        found[backend] = dependence_of(ctx)
    assert (found["jax"].first, found["jax"].last) == (found["cpu"].first, found["cpu"].last)
    assert (found["cpu"].first, found["cpu"].last) == (0, 1)


def test_blocks_of_rows_are_slices_of_one_copy_on_the_device(heteroscedastic, monkeypatch):
    """A PDP whose stacked rows are evaluated a block at a time (a small memory limit):
    the stacked data go to the device once, each block is a slice there, all of one
    size."""
    import jax

    model, idata = heteroscedastic
    kwargs = dict(kind=("mean", "entropy"), grid_resolution=12, memory_limit=4e5, **QUIET)
    cpu = pm_sens.partial_dependence(idata, model, **kwargs)["partial_dependence"]
    copied = []
    real = jax.device_put
    monkeypatch.setattr(
        jax, "device_put", lambda value, *a, **k: copied.append(value.shape) or real(value)
    )
    sliced = []
    real_rows = _jax_functions._rows_of
    monkeypatch.setattr(
        _jax_functions, "_rows_of", lambda v: sliced.append(v.shape) or real_rows(v)
    )
    got = pm_sens.partial_dependence(idata, model, backend="jax", **kwargs)["partial_dependence"]
    stacked = [shape for shape in copied if shape[0] > 300]
    # blocks of more rows than the points', fewer than the stacked copies', of one
    # size: one shape to compile
    blocks = {s for s in sliced if 300 < s[0] < stacked[0][0]}
    assert len(stacked) == 1 and len(blocks) == 1
    for name, var in cpu.to_dataset().data_vars.items():
        np.testing.assert_allclose(got[name].values, var.values, rtol=1e-10, err_msg=name)


def test_jax_chunks_take_as_many_draws_as_the_memory_limit_holds(monkeypatch):
    """The CPU backend's per-draw graphs take chunks about its cache in size; JAX's
    compiled graph takes as many draws as fit (one chunk here)."""
    rng = np.random.default_rng(5)
    n, d = 20_000, 4
    x = rng.normal(size=(n, d))
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", shape=d)
        pm.Bernoulli("y", logit_p=xd @ b, observed=rng.integers(0, 2, n))
    idata = azb.from_dict({"posterior": {"b": 0.3 * rng.normal(size=(2, 50, d))}})
    calls = []
    real = JaxGraphFunction.__call__
    monkeypatch.setattr(
        JaxGraphFunction, "__call__", lambda self, *a: calls.append(a[1].shape) or real(self, *a)
    )
    kwargs = dict(mode="draw", method="rsens", local=False, memory_limit=1e10, **QUIET)
    cpu = pm_sens.sensitivity(idata, model, **kwargs)["sensitivity"]["rsens"]
    got = pm_sens.sensitivity(idata, model, backend="jax", **kwargs)["sensitivity"]["rsens"]
    np.testing.assert_allclose(got.values, cpu.values, rtol=1e-10)
    # 100 draws × 20,000 rows × 4 inputs: 8 million cells, 6 CPU chunks of cache size;
    # on JAX one chunk, one call: the norm's graph computes the family's scales too
    assert [shape[0] for shape in calls if shape[0] > 8] == [100]


def test_jax_chunks_of_stacked_rows_take_several_draws_where_only_the_data_is_wide(
    monkeypatch,
):
    """A PDP of a 12-input logistic regression: 24,000 stacked rows × 12 columns of
    data, whose view with a draw axis (before the product with the coefficients)
    holds no values of its own. The chunks take as many draws as the rows' own
    arrays allow (8 here), not one (as if each draw copied the data)."""
    rng = np.random.default_rng(3)
    n, d = 200, 12
    x = rng.normal(size=(n, d))
    with pm.Model() as model:
        b = pm.Normal("b", shape=d)
        pm.Bernoulli("y", logit_p=pm.math.dot(x, b), observed=rng.integers(0, 2, n))
    idata = azb.from_dict({"posterior": {"b": 0.3 * rng.normal(size=(2, 16, d))}})
    kwargs = dict(grid_resolution=10, memory_limit=4e7, **QUIET)
    cpu = pm_sens.partial_dependence(idata, model, **kwargs)["partial_dependence"]
    calls = []
    real = JaxGraphFunction.__call__

    def call(self, *args):
        calls.append([np.shape(value) for value in args])
        return real(self, *args)

    monkeypatch.setattr(JaxGraphFunction, "__call__", call)
    got = pm_sens.partial_dependence(idata, model, backend="jax", **kwargs)["partial_dependence"]
    # the stacked rows' calls: their coefficients' draws
    stacked = [shapes for shapes in calls if (24_000, d) in shapes]
    draws = {s[0] for shapes in stacked for s in shapes if s[1:] == (d,) and s[0] != 24_000}
    assert draws == {8}
    for name, var in cpu.to_dataset().data_vars.items():
        np.testing.assert_allclose(got[name].values, var.values, rtol=1e-10, err_msg=name)


@pytest.mark.parametrize(
    ("count", "chunk", "expected"),
    [(4000, 321, 250), (1000, 964, 500), (97, 40, 40), (80, 80, 80), (7, 3, 3)],
)
def test_jax_chunks_split_the_draws_equally_where_a_divisor_allows(count, chunk, expected):
    assert equal_chunks(count, chunk) == expected


def test_jax_compiles_one_shape_of_chunk_where_the_draws_divide_equally(
    heteroscedastic, monkeypatch
):
    """80 draws in chunks of at most 30 are 4 chunks of 20 (not 30, 30, 20: two
    shapes, each compiled by PyTensor and XLA), with the CPU backend's results."""
    model, idata = heteroscedastic
    kwargs = dict(mode="moment", interactions=True, **QUIET)
    cpu = pm_sens.sensitivity(idata, model, **kwargs)["sensitivity"]
    monkeypatch.setattr(_chunks, "_bytes_per_draw", lambda *a: 1e9 / 4 / 30)
    compiled = []
    real = JaxGraphFunction._function

    def function(self, shapes):
        if shapes not in self._compiled:
            compiled.append(shapes)
        return real(self, shapes)

    monkeypatch.setattr(JaxGraphFunction, "_function", function)
    got = pm_sens.sensitivity(idata, model, backend="jax", **kwargs)["sensitivity"]
    assert sorted({shapes[1][0] for shapes in compiled if shapes[1][0] > 8}) == [20]
    for name, var in cpu.data_vars.items():
        np.testing.assert_allclose(got[name].values, var.values, rtol=1e-10, err_msg=name)


@pytest.mark.parametrize(
    ("call", "kwargs"),
    [
        ("sensitivity", {"mode": "moment", "interactions": True, "method": ["rsens", "var"]}),
        ("sensitivity", {"mode": "draw", "interactions": True}),
    ],
)
def test_float32_on_jax_gives_the_float64_results_to_single_precision(
    heteroscedastic, call, kwargs
):
    """Single precision on the device, float64 results: equal to float64's to 1e-5
    (measured: 2e-7 here), and not equal to them to float64's rounding. Every other
    function in float32: `tests/zoo/test_zoo_jax.py`."""
    model, idata = heteroscedastic
    function = getattr(pm_sens, call)
    double = function(idata, model, **kwargs, **QUIET)
    single = function(idata, model, backend="jax", dtype="float32", **kwargs, **QUIET)
    group = next(name for name in double.children if name not in idata.children)
    assert single[group].attrs["dtype"] == "float32"
    assert double[group].attrs["dtype"] == "float64"
    worst = 0.0
    for name, var in double[group].to_dataset().data_vars.items():
        if name == "completeness_gap":  # rounding in both
            continue
        got = single[group][name]
        assert got.dtype == np.float64, name
        scale = np.nanmax(np.abs(var.values))
        np.testing.assert_allclose(got.values, var.values, rtol=1e-5, atol=1e-5 * scale)
        worst = max(worst, np.nanmax(np.abs(got.values - var.values)) / scale)
    assert worst > 1e-12  # computed in float32, not float64


def test_the_finite_difference_kl_in_float32_says_what_its_rounding_costs(heteroscedastic):
    model, idata = heteroscedastic
    kwargs = dict(mode="draw", method="kl", **QUIET)
    double = pm_sens.sensitivity(idata, model, **kwargs)["sensitivity"]["kl"].values
    with pytest.warns(UserWarning, match=r"delta=0.0001.*float32.*about 1e-03.*dtype='float64'"):
        single = pm_sens.sensitivity(idata, model, backend="jax", dtype="float32", **kwargs)
    error = np.max(np.abs(single["sensitivity"]["kl"].values - double)) / np.max(double)
    assert 1e-5 < error < 1e-2  # the warning's order of magnitude


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"dtype": "float16"}, r"dtype='float16' is not valid.*\('float64', 'float32'\)"),
        ({"dtype": True}, r"dtype=True is not valid"),
        ({"dtype": "float32"}, r"dtype='float32' runs on the JAX backend only.*backend='jax'"),
        (
            {"dtype": "float32", "backend": "cpu"},
            r"dtype='float32' runs on the JAX backend only",
        ),
    ],
)
def test_a_dtype_that_is_not_one_of_ours_or_not_on_jax_is_refused(heteroscedastic, options, match):
    model, idata = heteroscedastic
    with pytest.raises(ValueError, match=match):
        pm_sens.sensitivity(idata, model, **options, **QUIET)


def test_set_options_sets_the_dtype_and_numpy_dtypes_name_it(heteroscedastic):
    model, idata = heteroscedastic
    with pm_sens.set_options(backend="jax", dtype=np.float32):
        assert pm_sens.get_options("dtype") == "float32"
        result = pm_sens.sensitivity(idata, model, mode="draw", **QUIET)
        assert result["sensitivity"].attrs["dtype"] == "float32"
        # a call's own dtype= wins
        result = pm_sens.sensitivity(idata, model, mode="draw", dtype="float64", **QUIET)
        assert result["sensitivity"].attrs["dtype"] == "float64"
    assert pm_sens.get_options() == {
        "cores": pm_sens.get_options("cores"),
        "backend": "cpu",
        "dtype": "float64",
    }
    with pytest.raises(ValueError, match=r"dtype='float32' runs on the JAX backend only"):
        with pm_sens.set_options(dtype="float32"):
            pm_sens.sensitivity(idata, model, **QUIET)


def _device_holding(monkeypatch, most_draws):
    """JAX's device made to hold chunks of at most ``most_draws`` draws: a larger one
    raises JAX's out-of-memory error, as a full GPU does."""
    import jax

    real = DeviceArrays.put
    n_points = 300  # the data's rows are not draws

    def put(self, args):
        if any(np.ndim(a) and most_draws < len(a) != n_points for a in args):
            raise jax.errors.JaxRuntimeError(
                "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1.00GiB."
            )
        return real(self, args)

    monkeypatch.setattr(DeviceArrays, "put", put)


def test_a_chunk_the_device_cannot_hold_is_made_smaller_with_a_message(
    heteroscedastic, monkeypatch
):
    model, idata = heteroscedastic
    kwargs = dict(mode="draw", interactions=True, **QUIET)
    cpu = pm_sens.sensitivity(idata, model, **kwargs)["sensitivity"]
    _device_holding(monkeypatch, 30)
    with pytest.warns(UserWarning, match=r"80 draws at a time did not fit the device's memory"):
        got = pm_sens.sensitivity(idata, model, backend="jax", **kwargs)["sensitivity"]
    for name, var in cpu.data_vars.items():
        np.testing.assert_allclose(got[name].values, var.values, rtol=1e-10, err_msg=name)


def test_one_draw_the_device_cannot_hold_is_said_in_our_words(heteroscedastic, monkeypatch):
    model, idata = heteroscedastic
    _device_holding(monkeypatch, 0)
    with pytest.raises(MemoryError, match=r"device's memory cannot hold.*memory_limit=.*'cpu'"):
        pm_sens.sensitivity(idata, model, mode="draw", backend="jax", **QUIET)


def test_a_value_float32_cannot_hold_is_said_with_the_dtype_that_holds_it():
    """exp(100) is 2.7e43 in float64 and inf in float32: the derivative's error names
    float32 and the dtype that holds it."""
    x = np.linspace(0, 10, 5)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        pm.Normal("y", mu=pt.exp(b * xd), sigma=1.0, observed=x)
    idata = azb.from_dict({"posterior": {"b": np.full((1, 2), 10.0)}, "observed_data": {"y": x}})
    kwargs = dict(mode="draw", **QUIET)
    assert np.isfinite(pm_sens.sensitivity(idata, model, **kwargs)["sensitivity"]["rsens"]).all()
    with pytest.raises(ValueError, match=r"not finite.*float32.*dtype='float64'"):
        pm_sens.sensitivity(idata, model, backend="jax", dtype="float32", **kwargs)


def test_observations_at_their_censoring_bound_stay_there_in_float32(rng):
    """The censored Normal's bound (closed form: a constant) is rounded to float32 on
    the device; the observed values are rounded alike, so a censored row's value is
    still its bound (else its log likelihood is a density's, or −inf above it)."""
    n = 12
    x = rng.normal(size=n)
    bound = 0.1  # not a float32 number
    y = np.minimum(rng.normal(size=n), bound)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        pm.Censored("y", pm.Normal.dist(b * xd, 1.0), lower=None, upper=bound, observed=y)
    idata = azb.from_dict({"posterior": {"b": rng.normal(size=(1, 4))}, "observed_data": {"y": y}})
    kwargs = dict(inputs=["x"], kind="log_likelihood", grid_resolution=3, **QUIET)
    double = pm_sens.partial_dependence(idata, model, **kwargs)["partial_dependence"]
    single = pm_sens.partial_dependence(idata, model, backend="jax", dtype="float32", **kwargs)[
        "partial_dependence"
    ]
    assert (y == bound).sum() >= 3
    for name in ("log_likelihood_pdp", "log_likelihood_ice"):
        np.testing.assert_allclose(single[name].values, double[name].values, rtol=1e-5)


def test_a_likelihood_without_closed_forms_computes_in_float64_and_says_so(rng, caplog):
    """A Poisson mixture's weights rounded to float32 no longer sum to 1: its support
    search would find no tail. Its graphs run in float64, said once."""
    n = 6
    x = rng.normal(size=n)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        w = pm.Dirichlet("w", np.ones(2))
        pm.Mixture(
            "y",
            w=w,
            comp_dists=[pm.Poisson.dist(pt.exp(b * xd)), pm.Poisson.dist(3 * pt.exp(b * xd))],
            observed=rng.poisson(2, n),
        )
    idata = azb.from_dict(
        {
            "posterior": {
                "b": 0.3 * rng.normal(size=(1, 3)),
                "w": np.full((1, 3, 2), [0.3, 0.7]),
            }
        }
    )
    kwargs = dict(mode="draw", **QUIET)
    with caplog.at_level("INFO", logger="pm_sens"):
        single = pm_sens.sensitivity(idata, model, backend="jax", dtype="float32", **kwargs)
    assert single["sensitivity"].attrs["dtype"] == "float64"
    assert (
        "mixture likelihood has no closed forms, so its graphs compute in float64" in caplog.text
    )
    double = pm_sens.sensitivity(idata, model, **kwargs)["sensitivity"]["rsens"].values
    np.testing.assert_allclose(single["sensitivity"]["rsens"].values, double, rtol=1e-10)

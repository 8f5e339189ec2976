"""Engine behaviour: compiled graphs reused, labels carried over, thinning, the
generic Fisher fallback, user-built predictives."""

import re
from functools import partial

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
import xarray as xr
from pytensor.graph.traversal import applys_between
from scipy import special

import pm_sens
from pm_sens._core import context as _context
from pm_sens._core.arguments import native_array
from pm_sens._core.request import Request
from pm_sens._run import chunks as _chunks
from pm_sens._run import compiling as _compiling
from pm_sens.graph import engine
from pm_sens.graph.compile.compiled import data_for_chunk
from pm_sens.graph.compile.nodes import broadcast_together, finite_where_roots_are
from pm_sens.graph.compile.rewrites import runs_element_by_element
from pm_sens.graph.likelihoods.generic.likelihood import GenericLikelihood
from tests.conftest import posterior


@pytest.fixture
def logistic(rng):
    n = 10
    x = rng.normal(size=(n, 2))
    with pm.Model(coords={"house": [f"h{i}" for i in range(n)], "col": ["age", "income"]}) as m:
        xd = pm.Data("X", x, dims=("house", "col"))
        b = pm.Normal("b", shape=2)
        pm.Bernoulli("y", logit_p=xd @ b, observed=rng.integers(0, 2, n), dims="house")
    idata = posterior({"b": rng.normal(size=(2, 20, 2))})
    return m, idata, x


def _default_context(idata, model):
    """The validated request of a default call, without running it."""
    return _context.make_context(
        Request(idata, model, progressbar=False, extend_inferencedata=False)
    )


def test_new_points_do_not_recompile(logistic, monkeypatch, rng):
    model, idata, _ = logistic
    pm_sens.sensitivity(idata, model, progressbar=False)
    calls = []
    original = engine.compile_predictive
    monkeypatch.setattr(
        _compiling, "compile_predictive", lambda *a, **k: calls.append(1) or original(*a, **k)
    )
    out = pm_sens.sensitivity(
        idata, model, points={"X": rng.normal(size=(7, 2))}, progressbar=False
    )
    assert calls == []
    assert out["sensitivity"]["rsens"].shape == (7, 2)
    assert list(out["sensitivity"]["house"].values) == list(range(7))


def test_graphs_are_built_without_traces_and_the_users_setting_is_kept(logistic, monkeypatch):
    """PyTensor's record of where each node is made is off while pm_sens builds and
    compiles graphs, in builds that overlap in threads too, and the user's
    ``traceback__limit`` is back after each call and after them all."""
    import threading

    import pytensor

    from pm_sens.graph.compile import functions

    model, idata, _ = logistic
    monkeypatch.setattr(pytensor.config, "traceback__limit", 5)
    seen, started, release = [], threading.Barrier(2), threading.Event()

    @functions.without_traces
    def build(wait):
        seen.append(pytensor.config.traceback__limit)
        if wait:
            started.wait()
            release.wait()

    thread = threading.Thread(target=build, args=(True,))
    thread.start()
    started.wait()
    build(False)  # overlaps the thread's build and ends first
    assert pytensor.config.traceback__limit == 0
    release.set()
    thread.join()
    assert seen == [0, 0] and pytensor.config.traceback__limit == 5
    built = []
    compile_function = pytensor.function
    monkeypatch.setattr(
        pytensor,
        "function",
        lambda *a, **k: (
            built.append(pytensor.config.traceback__limit) or compile_function(*a, **k)
        ),
    )
    pm_sens.sensitivity(idata, model, progressbar=False, extend_inferencedata=False)
    assert built and set(built) == {0}
    assert pytensor.config.traceback__limit == 5
    assert (pytensor.tensor.vector() + 1).tag.trace  # the user's own graphs keep theirs


def test_chunks_run_with_blas_on_one_thread_and_restore_it(logistic, monkeypatch):
    """BLAS runs on one thread while draw-mode chunks are evaluated and consumed, as it
    was after."""
    from threadpoolctl import threadpool_info

    def blas_threads():
        return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]

    before = blas_threads()
    assert before  # NumPy's BLAS is found
    seen = []
    original = _chunks.check_outputs

    def check_outputs(*args):
        seen.append(blas_threads())
        return original(*args)

    monkeypatch.setattr(_chunks, "check_outputs", check_outputs)
    model, idata, _ = logistic
    pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)
    assert seen and all(threads == [1] * len(before) for threads in seen)
    assert blas_threads() == before


def test_the_next_chunk_is_evaluated_while_one_is_consumed():
    """Where evaluating and consuming a chunk both take time, `_ahead` starts
    evaluating chunk k + 1 in another thread before the consumer has finished
    with chunk k (once three chunks are timed: from chunk 3 on, every chunk is
    evaluated there), and yields the chunks in order; an evaluation that fails
    raises its own error at its chunk."""
    import threading
    import time

    started = [threading.Event() for _ in range(7)]
    threads = []

    def evaluate(start):
        threads.append(threading.current_thread().name)
        started[start].set()
        time.sleep(0.02)
        return 10 * start

    got = []
    for start, value in _chunks._ahead(evaluate, range(7)):
        if 3 <= start < 6:  # without a thread, nothing would start while it waits
            assert started[start + 1].wait(timeout=10), start
        time.sleep(0.02)
        got.append((start, value))
    assert got == [(k, 10 * k) for k in range(7)]
    main = threading.current_thread().name
    assert threads[:3] == [main] * 3 and main not in threads[3:]

    def fails_at_five(start):
        time.sleep(0.02)
        if start == 5:
            raise FloatingPointError("chunk 5")
        return start

    consumed = []
    with pytest.raises(FloatingPointError, match="chunk 5"):
        for start, _ in _chunks._ahead(fails_at_five, range(7)):
            time.sleep(0.02)
            consumed.append(start)
    assert consumed == [0, 1, 2, 3, 4]


def test_labels_come_from_model_coords(logistic):
    model, idata, _ = logistic
    out = pm_sens.sensitivity(idata, model, progressbar=False)["sensitivity"]
    assert out["rsens"].dims == ("house", "feature")
    assert list(out["house"].values)[:2] == ["h0", "h1"]
    assert list(out["feature"].values) == ["age", "income"]


def test_points_as_dataset_keep_their_coords(logistic, rng):
    model, idata, _ = logistic
    points = xr.Dataset(
        {"X": (("site", "col"), rng.normal(size=(4, 2)))},
        coords={"site": list("abcd"), "col": ["age", "income"]},
    )
    out = pm_sens.sensitivity(idata, model, points=points, progressbar=False)["sensitivity"]
    assert out["rsens"].dims == ("site", "feature")
    assert list(out["site"].values) == list("abcd")


def test_num_draws_thins_reproducibly(logistic):
    model, idata, _ = logistic
    kw = dict(mode="draw", num_draws=10, random_seed=3, progressbar=False)
    a = pm_sens.sensitivity(idata, model, extend_inferencedata=False, **kw)["sensitivity"]
    b = pm_sens.sensitivity(idata, model, extend_inferencedata=False, **kw)["sensitivity"]
    assert a["rsens"].sizes["chain"] == 2 and a["rsens"].sizes["draw"] == 5
    assert np.array_equal(a["draw"].values, b["draw"].values)
    full = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)["sensitivity"]
    np.testing.assert_allclose(a["rsens"].values, full["rsens"].sel(draw=a["draw"]).values)
    assert a.attrs["num_draws"] == 10


def test_draw_mode_averages_consistently_with_moment_mode_for_bernoulli(logistic):
    """A mixture of Bernoullis is Bernoulli: the moment-mode mean probability is
    the average of the per-draw ones."""
    model, idata, x = logistic
    out = pm_sens.sensitivity(idata, model, progressbar=False)["sensitivity"]
    b = idata.posterior["b"].values.reshape(-1, 2)
    p = special.expit(b @ x.T)
    dm = np.einsum("sn,sd->nd", p * (1 - p), b) / len(b)
    m = p.mean(0)[:, None]
    np.testing.assert_allclose(out["rsens"].values, np.abs(dm) / np.sqrt(m * (1 - m)))


def test_user_built_predictive(logistic):
    model, idata, x = logistic
    logit = model["X"] @ model["b"]
    pred = pm_sens.Predictive("bernoulli", {"logit_p": logit}, [model["X"]])
    by_hand = pm_sens.sensitivity(idata, model, predictive=pred, progressbar=False)
    by_hand = by_hand["sensitivity"]["rsens"].values
    default = pm_sens.sensitivity(idata, model, progressbar=False)["sensitivity"]["rsens"].values
    np.testing.assert_allclose(by_hand, default)
    assert "bernoulli" in repr(pred)


def test_a_predictive_may_leave_out_parameters_pymc_defaults():
    """A Wald by ``mu`` and ``phi`` (λ = μφ), its shift left at PyMC's 0: per draw
    R-sens of x is |b| μ √(λ/μ³) = |b| √φ for μ = exp(b x) and φ = 2/μ."""
    x = np.linspace(0, 1, 5)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        pm.Wald("y", mu=pm.math.exp(b * xd), lam=2.0, observed=np.ones(5))
    mu = pm.math.exp(model["b"] * xd)
    pred = pm_sens.Predictive("wald", {"mu": mu, "phi": 2.0 / mu}, [xd])
    idata = posterior({"b": np.array([[0.5, -1.2]])})
    out = pm_sens.sensitivity(idata, model, predictive=pred, mode="draw", progressbar=False)
    got = out["sensitivity"]["rsens"].values[0, :, :, 0]
    expected = np.abs([[0.5], [1.2]]) * np.sqrt(2.0 / np.exp(np.outer([0.5, -1.2], x)))
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_predictive_rejects_unknown_family_and_parameters(logistic):
    model, _, _ = logistic
    with pytest.raises(ValueError, match=r"family='weibul' is not a known likelihood family"):
        pm_sens.Predictive("weibul", {}, [])
    with pytest.raises(ValueError, match=r"do not describe a normal likelihood: expected"):
        pm_sens.Predictive("normal", {"mu": model["b"][0]}, [model["X"]])
    mu = model["b"][0] * model["X"][:, 0]
    with pytest.raises(ValueError, match=r"parameters\['lower'\]=.* is not a constant"):
        pm_sens.Predictive(
            "truncated_normal", {"mu": mu, "sigma": 1.0, "lower": model["b"][1]}, [model["X"]]
        )


@pytest.mark.parametrize(
    ("build", "params", "expected"),
    [
        (
            lambda v: pm.Normal("y", mu=v, sigma=v + 1, observed=np.zeros(3)),
            [0.5, 2.0],
            np.diag([1 / 4, 2 / 4]),
        ),
        (lambda v: pm.Poisson("y", mu=v, observed=np.zeros(3)), [3.0], np.array([[1 / 3]])),
        (
            lambda v: pm.Gamma("y", alpha=v, beta=2 * v, observed=np.ones(3)),  # (alpha, scale)
            [2.5, 0.5],
            np.array([[special.polygamma(1, 2.5), 1 / 0.5], [1 / 0.5, 2.5 / 0.25]]),
        ),
    ],
)
def test_generic_route_fisher_matches_closed_forms(build, params, expected):
    """The summation/quadrature route through pm.logp against the closed forms."""
    with pm.Model() as model:
        rv = build(pm.Data("v", np.ones(3)) * pm.Data("w", np.ones(3)))
    generic = GenericLikelihood(rv, set(model.free_RVs))
    got = generic.fisher_information(np.array([params]))[0]
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-10)


def test_generic_fallback_for_an_unknown_likelihood(rng):
    """Moyal(μ, σ) has I_μμ = 1/(2σ²) (its score (1 − e^{−z})/(2σ), e^{−z} ~ χ²₁ of
    variance 2): per draw R-sens = |b|/(√2 σ) for μ = b x."""
    x = rng.normal(size=6)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        pm.Moyal("y", mu=b * xd, sigma=2.0, observed=x)
    idata = posterior({"b": np.array([[0.5, -1.5]])})
    out = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)["sensitivity"]
    assert out.attrs["fisher"].startswith("Gauss-Legendre quadrature")
    assert out.attrs["likelihood"] == "moyal"
    expected = np.abs([0.5, -1.5])[:, None] / (np.sqrt(2) * 2.0)
    np.testing.assert_allclose(
        out["rsens"].values[0, :, :, 0], np.repeat(expected, 6, 1), rtol=1e-6
    )
    # moment mode: Normal matched to the Moyal's mean μ + σ(γ + log 2) and variance
    # (π σ)²/2, which does not depend on x
    moment = pm_sens.sensitivity(idata, model, progressbar=False)["sensitivity"]
    sd = np.pi * 2.0 / np.sqrt(2)
    # mixture of the two draws: mean b·x + const, variance sd² + Var_s(b)·x²
    mean_b, var_b = np.mean([0.5, -1.5]), np.var([0.5, -1.5])
    v = sd**2 + var_b * x**2
    dm, dv = mean_b, 2 * var_b * x
    np.testing.assert_allclose(
        moment["rsens"].values[:, 0], np.sqrt(dm**2 / v + dv**2 / (2 * v**2)), rtol=1e-7
    )


def test_posterior_opened_lazily_from_netcdf_is_read_chunk_by_chunk(logistic, tmp_path):
    model, idata, _ = logistic
    path = tmp_path / "posterior.nc"
    # netCDF3 (SciPy's writer) takes no list-valued attrs
    idata["posterior"].to_dataset().copy(deep=True).drop_attrs().to_netcdf(path, engine="scipy")
    lazy = xr.open_dataset(path, engine="scipy", chunks={"draw": 7})
    assert lazy["b"].chunks is not None  # dask-backed
    lazy_idata = xr.DataTree.from_dict({"posterior": lazy})
    for mode in ("moment", "draw"):
        kw = dict(mode=mode, interactions=True, progressbar=False, extend_inferencedata=False)
        expected = pm_sens.sensitivity(idata, model, **kw)["sensitivity"]
        got = pm_sens.sensitivity(lazy_idata, model, memory_limit=2e4, **kw)["sensitivity"]
        for name in ("rsens", "rsens2"):
            np.testing.assert_allclose(got[name].values, expected[name].values, rtol=1e-10)
    lazy.close()


def test_no_output_at_all_without_progress_bars(logistic, capfd):
    model, idata, _ = logistic
    capfd.readouterr()
    pm_sens.sensitivity(idata, model, method=["rsens", "kl"], progressbar=False)
    captured = capfd.readouterr()
    assert captured.out == "" and captured.err == ""
    pm_sens.sensitivity(idata, model, progressbar=True)
    finished = capfd.readouterr().out
    assert "R-sens" in finished
    assert re.search(r"elapsed \d+:\d\d:\d\d", finished)  # the time taken stays in the log


def _heteroscedastic(rng, n=30, d=3):
    """sd through softplus, mean through clip and a cube (a composite op, as
    PyTensor writes ``x**3``): ops NumPy has no ufunc for."""
    x = rng.normal(size=(n, d))
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", shape=d)
        g = pm.Normal("g", shape=d)
        pm.Normal(
            "y",
            mu=pm.math.clip(xd @ b, -2.0, 2.0) + xd[:, 0] * xd[:, 1] + 0.1 * xd[:, 2] ** 3,
            sigma=pm.math.log1pexp(0.3 * xd @ g),
            observed=x[:, 0],
        )
    draws = {"b": rng.normal(size=(2, 25, d)), "g": rng.normal(size=(2, 25, d))}
    return model, posterior(draws)


def test_numba_compiles_in_the_background_when_asked_again(rng, monkeypatch):
    """A graph worth compiling runs in NumPy at the first request; the second starts
    Numba's compile in a thread; once it is done, requests run the compiled graph,
    with the same numbers."""
    from pm_sens._run import background as _background

    monkeypatch.setattr(_compiling, "INTERPRETED_WORK", -1)
    model, idata = _heteroscedastic(rng)
    _context._PREDICTIVES.pop(model, None)

    def call():
        out = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)
        compiled = _context.predictive_for(model, None).compiled.values()
        whitened = {c.settings["backend"] for c in compiled if c.settings.get("whitened")}
        return out["sensitivity"]["rsens"].values, whitened

    first, backends = call()
    assert backends == {"python"} and not _background._THREADS
    second, backends = call()
    assert backends == {"python"} and _background._THREADS  # compiling
    _background.wait_for_compiles()
    third, backends = call()
    assert backends == {"python", "numba"}
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(third, first, rtol=1e-12)


def test_a_background_compile_shortens_the_thread_switch_interval_while_it_runs():
    """While compiles run in the background, Python's switch interval is
    `SWITCH_INTERVAL` (a request's NumPy calls get Python's lock back sooner);
    the interval before is set back when the last one ends, built or failed."""
    import sys
    import threading

    from pm_sens._run import background as _background

    class Predictive:  # what the background compile reads and writes
        compiled = {}

    before = sys.getswitchinterval()
    predictive, lock = Predictive(), threading.RLock()
    release = {key: threading.Event() for key in ("built", "failed")}

    def warm(key):  # Numba's compile: outside the lock, as long as the test says
        release[key].wait(10)
        if key == "failed":
            raise RuntimeError("no Numba here")

    for key in release:
        for _ in range(2):  # the second request starts the compile
            _background.compile_when_asked_again(predictive, key, lock, lambda k=key: k, warm)
    assert len(_background._THREADS) == 2
    assert sys.getswitchinterval() == pytest.approx(_background.SWITCH_INTERVAL)
    release["failed"].set()
    _background._THREADS[1].join()
    assert sys.getswitchinterval() == pytest.approx(_background.SWITCH_INTERVAL)  # one still runs
    release["built"].set()
    _background.wait_for_compiles()
    assert sys.getswitchinterval() == before
    assert predictive.compiled == {"built": "built"}


def test_a_switch_interval_set_during_a_background_compile_is_kept():
    """The user's own switch interval, set while a compile runs, stays after it ends."""
    import sys
    import threading

    from pm_sens._run import background as _background

    class Predictive:
        compiled = {}

    before, release = sys.getswitchinterval(), threading.Event()
    predictive, lock = Predictive(), threading.RLock()
    for _ in range(2):  # the second request starts the compile
        _background.compile_when_asked_again(
            predictive, "key", lock, lambda: "built", lambda _: release.wait(10)
        )
    try:
        assert sys.getswitchinterval() == pytest.approx(_background.SWITCH_INTERVAL)
        sys.setswitchinterval(0.002)
        release.set()
        _background.wait_for_compiles()
        assert sys.getswitchinterval() == pytest.approx(0.002)
    finally:
        release.set()
        _background.wait_for_compiles()
        sys.setswitchinterval(before)


def test_interpreted_and_compiled_graphs_agree(rng, monkeypatch):
    """Small moment-mode requests run op by op in NumPy, large ones compiled by
    Numba: the same numbers (to rounding) for R-sens and R-sens2, means and
    variances alike."""
    model, idata = _heteroscedastic(rng)
    results, backends = {}, {}
    for backend, work in (("python", np.inf), ("numba", -1)):
        monkeypatch.setattr(_compiling, "INTERPRETED_WORK", work)
        monkeypatch.setattr(_compiling, "COMPILE_FIRST_WORK", 0)  # Numba compiled before the run
        results[backend] = pm_sens.sensitivity(idata, model, interactions=True, progressbar=False)[
            "sensitivity"
        ]
        compiled = _context.predictive_for(model, None).compiled.values()
        backends[backend] = {c.settings["backend"] for c in compiled}
        interpreted = [c.function for c in compiled if c.settings["backend"] == "python"]
        assert not any(runs_element_by_element(f) for f in interpreted)
    assert backends == {"python": {"python"}, "numba": {"python", "numba"}}
    for name in results["python"].data_vars:
        np.testing.assert_allclose(
            results["numba"][name].values, results["python"][name].values, rtol=1e-10, atol=1e-14
        )


def test_small_requests_are_interpreted_and_large_ones_compiled(logistic, monkeypatch):
    """Moment-mode derivatives' work is draws × rows × features^order: 40 × 10 ×
    2^order here; forward graphs and per-draw derivatives always run in NumPy."""
    model, idata, _ = logistic
    ctx = _default_context(idata, model)
    assert [_compiling.backend_for(ctx, "moment", order) for order in (0, 1, 2)] == ["python"] * 3
    monkeypatch.setattr(_compiling, "INTERPRETED_WORK", 40 * 10 * 2)
    moment = [_compiling.backend_for(ctx, "moment", order) for order in (0, 1, 2)]
    assert moment == ["python", "python", "numba"]
    assert _compiling.backend_for(ctx, "moment", 1, rows=21) == "numba"  # stacked copies
    assert _compiling.backend_for(ctx, "moment", 0, rows=10**6) == "python"  # forward only
    assert _compiling.backend_for(ctx, "draw", 2, rows=10**6) == "python"
    # draw-mode R-sens computed in the graph follows the work, as moment mode does
    assert _compiling.backend_for(ctx, "draw", 1, whitened=True) == "python"
    assert _compiling.backend_for(ctx, "draw", 1, rows=21, whitened=True) == "numba"


def test_an_op_numpy_cannot_run_whole_is_compiled(rng):
    """A scalar op with no NumPy ufunc (rounding half away from zero) would run
    element by element in Python: that graph is compiled instead, and R-sens is
    still |dμ/dx|/σ (the rounding's derivative is 0)."""
    x = rng.normal(size=12)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        mu = pt.sin(xd * b) + pt.round(3 * xd * b, mode="half_away_from_zero")
        pm.Normal("y", mu=mu, sigma=0.5, observed=x)
    b = rng.normal(scale=0.3, size=(1, 8))
    out = pm_sens.sensitivity(posterior({"b": b}), model, mode="draw", progressbar=False)
    compiled = _context.predictive_for(model, None).compiled.values()
    # the forward graph holds the rounding; R-sens's graph only ufuncs
    forward = [c for c in compiled if c.settings["mode"] == "draw" and c.settings["order"] == 0]
    assert [c.settings["backend"] for c in forward] == ["numba"]
    expected = np.abs(np.cos(x * b[0][:, None]) * b[0][:, None]) / 0.5
    np.testing.assert_allclose(out["sensitivity"]["rsens"].values[0, ..., 0], expected, rtol=1e-9)


def _draw_mode_model(kind, rng, n=20, d=2):
    """A model of ``kind`` with two inputs; both of its parameters vary where it has two."""
    x = rng.normal(size=(n, d))
    counts = rng.integers(0, 5, n)
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", shape=d)
        g = pm.Normal("g", shape=d)
        eta, zeta = xd @ b, 0.3 * (xd @ g)
        if kind == "poisson_offset":
            exposure = pm.Data("exposure", rng.uniform(1, 3, n))
            pm.Poisson("y", mu=pm.math.exp(eta + pm.math.log(exposure)), observed=counts)
        elif kind == "negative_binomial":
            pm.NegativeBinomial("y", mu=pm.math.exp(eta), alpha=pm.math.exp(zeta), observed=counts)
        elif kind == "binomial":
            pm.Binomial("y", n=5, logit_p=eta, observed=counts)
        elif kind == "bernoulli":
            pm.Bernoulli("y", p=pm.math.sigmoid(eta), observed=counts % 2)
        elif kind == "gamma":
            pm.Gamma("y", mu=pm.math.exp(eta), sigma=pm.math.exp(zeta), observed=counts + 1.0)
        elif kind == "student_t":
            pm.StudentT("y", nu=4, mu=eta, sigma=pm.math.exp(zeta), observed=x[:, 0])
        elif kind == "lognormal":
            pm.LogNormal("y", mu=eta, sigma=pm.math.exp(zeta), observed=counts + 1.0)
        elif kind == "normal_two_containers":  # a 2-D and a 1-D input, both parameters
            t = pm.Data("t", rng.normal(size=n))
            pm.Normal("y", mu=eta + g[0] * t, sigma=pm.math.exp(zeta * t), observed=x[:, 0])
        elif kind == "categorical":
            weights = pt.stack([eta, zeta, -eta], axis=-1)
            pm.Categorical("y", p=pm.math.softmax(weights, axis=-1), observed=counts % 3)
        else:  # beta: its (mean, variance) information is not diagonal
            mean = pm.math.sigmoid(eta)
            pm.Beta("y", mu=mean, sigma=0.2 * mean * (1 - mean), observed=np.full(n, 0.5))
    draws = {"b": rng.normal(scale=0.5, size=(2, 15, d)), "g": rng.normal(size=(2, 15, d))}
    return model, posterior(draws)


@pytest.mark.parametrize(
    "kind",
    [
        "poisson_offset",
        "negative_binomial",
        "binomial",
        "bernoulli",
        "normal_two_containers",
        "gamma",
        "student_t",
        "lognormal",
        "categorical",
        "beta",
    ],
)
def test_draw_mode_rsens_in_the_graph_equals_the_numpy_forms(kind, rng, monkeypatch):
    """Draw-mode R-sens is computed inside the graph from the family's whitening
    scales (`WhitenedNorm`), the scales themselves too where the family writes
    them for any array namespace; the NumPy quadratic forms on the graph's
    derivatives stay the reference. Where the information is not diagonal (Beta;
    LogNormal in mean and variance) the graph's value is not used."""
    model, idata = _draw_mode_model(kind, rng)
    used = []
    exact = engine.WhitenedNorm.norm_is_exact
    monkeypatch.setattr(
        engine.WhitenedNorm,
        "norm_is_exact",
        lambda self, norm: used.append(exact(self, norm)) or used[-1],
    )
    in_graph = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)["sensitivity"]
    assert used == ([] if kind in ("beta", "lognormal") else [True])
    compiled = _context.predictive_for(model, None).compiled.values()
    whitened = [c for c in compiled if isinstance(c, engine.WhitenedNorm)]
    in_graph_scales = kind in ("poisson_offset", "bernoulli", "normal_two_containers")
    assert [c.scales_in_graph for c in whitened] == [in_graph_scales]
    monkeypatch.setattr(engine.WhitenedNorm, "norm_is_exact", lambda self, norm: False)
    reference = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)["sensitivity"]
    assert (in_graph["rsens"].values > 0).all()
    np.testing.assert_allclose(
        in_graph["rsens"].values, reference["rsens"].values, rtol=1e-12, atol=0
    )


def test_draw_mode_rsens_compiled_in_the_graph_equals_the_numpy_forms(rng, monkeypatch):
    """Large draw-mode requests compute R-sens in a Numba-compiled graph: the same
    numbers as the NumPy quadratic forms (two parameters, softplus and clip)."""
    model, idata = _heteroscedastic(rng)
    monkeypatch.setattr(_compiling, "INTERPRETED_WORK", -1)
    monkeypatch.setattr(_compiling, "COMPILE_FIRST_WORK", 0)  # Numba compiled before the run
    compiled = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)["sensitivity"]
    backends = {
        c.settings["backend"]
        for c in _context.predictive_for(model, None).compiled.values()
        if c.settings.get("whitened")
    }
    assert backends == {"numba"}
    monkeypatch.setattr(engine.WhitenedNorm, "norm_is_exact", lambda self, norm: False)
    reference = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)["sensitivity"]
    np.testing.assert_allclose(
        compiled["rsens"].values, reference["rsens"].values, rtol=1e-12, atol=0
    )


def test_parameters_of_sums_and_products_of_inputs_and_draws_are_finite_where_they_are():
    """Draw-mode R-sens in the graph sums each parameter over the points to find
    where it is undefined (nan), except a parameter made of the inputs and the
    draws (both checked finite) by sums, products and arrangements: μ = X b."""
    x, b, a, offset = pt.matrix("X"), pt.matrix("b"), pt.vector("a"), pt.vector("offset")
    roots = [x, b, a]
    mu = pt.matmul(x[None], b[:, :, None]).squeeze(2) - 2.0 * a[:, None] + x[:, 1] * a[:, None]
    assert finite_where_roots_are(mu, roots)
    assert finite_where_roots_are(pt.concatenate([mu, mu[:, ::-1]], axis=1).sum(0), roots)
    for undefined in (
        pt.log(mu),
        pt.exp(mu),
        mu / a[:, None],
        mu + np.array([np.nan]),
        mu + offset,  # not a root: its values are not checked
    ):
        assert not finite_where_roots_are(undefined, roots)
    # a broadcast takes only its shape from the first input
    for together in (pt.broadcast_arrays, lambda *arrays: broadcast_together(arrays)):
        broadcast_mu, broadcast_log = together(mu, pt.log(x[:, 0]))
        assert finite_where_roots_are(broadcast_mu, roots)
        assert not finite_where_roots_are(broadcast_log, roots)


def test_arrays_broadcast_together_in_linear_size_as_pytensor_broadcasts_them(rng):
    """60 arrays of mixed shapes and dtypes, as a 20-component mixture's parameters:
    the values, dtypes and static shapes of `pt.broadcast_arrays`, from 2n − 1
    broadcasts where PyTensor's take n(n − 1)."""
    shapes = [(1, 1), (None, 1), (1, None), (None, None)]
    arrays = [
        pt.tensor(f"a{i}", dtype=("float64", "int64")[i % 7 == 0], shape=shapes[i % 4])
        for i in range(60)
    ]
    values = [
        rng.integers(0, 9, size=[3 if n is None else 1 for n in a.type.shape]).astype(a.dtype)
        for a in arrays
    ]
    ours, theirs = broadcast_together(arrays), pt.broadcast_arrays(*arrays)
    assert [a.type for a in ours] == [a.type for a in theirs]
    for mine, reference in zip(
        pytensor.function(arrays, ours, mode="FAST_COMPILE")(*values),
        pytensor.function(arrays, theirs, mode="FAST_COMPILE")(*values),
        strict=True,
    ):
        np.testing.assert_array_equal(mine, reference)
        assert mine.shape == (3, 3)
    assert len(list(applys_between(arrays, ours))) == 2 * 60 - 1
    assert len(list(applys_between(arrays, theirs))) == 60 * 59


def _one_container_per_predictor(rng, n=30, d=3):
    """A logistic regression written as bambi writes it: ``pm.Data`` per predictor,
    ``b0 * x0 + b1 * x1 + …``, the probability clipped by the link."""
    x = rng.normal(size=(n, d))
    with pm.Model() as model:
        eta = pm.Normal("Intercept")
        for j in range(d):
            eta = eta + pm.Normal(f"b{j}") * pm.Data(f"x{j}", x[:, j])
        p = pm.math.clip(pm.math.sigmoid(eta), 1e-12, 1 - 1e-12)
        pm.Bernoulli("y", p=p, observed=rng.integers(0, 2, n))
    draws = {f"b{j}": rng.normal(size=(2, 25)) for j in range(d)}
    return model, posterior(draws | {"Intercept": rng.normal(size=(2, 25))})


@pytest.mark.parametrize("backend", ["python", "numba"])
@pytest.mark.parametrize("containers", ["one", "one per predictor", "a 2-D and a 1-D"])
def test_draw_mode_rsens_is_computed_in_the_result_array(backend, containers, rng, monkeypatch):
    """The compiled graph computes draw-mode R-sens in the result array itself
    where one elementwise loop computes it: one input container, or one per
    predictor (no copy of each chunk; NumPy's linker would copy anyway, so the
    graph it runs does not take the array). The columns of a 2-D and a 1-D input
    are joined into a new array, then copied. What the result array held before
    (nan here) never reaches the values."""
    model, idata = {
        "one": _heteroscedastic,
        "one per predictor": _one_container_per_predictor,
        "a 2-D and a 1-D": partial(_draw_mode_model, "normal_two_containers"),
    }[containers](rng)
    if backend == "numba":
        monkeypatch.setattr(_compiling, "INTERPRETED_WORK", -1)
    monkeypatch.setattr(_compiling, "COMPILE_FIRST_WORK", 0)  # Numba compiled before the run
    run, exact = engine.WhitenedNorm.run, engine.WhitenedNorm.norm_is_exact
    # first, as it compiles every graph used (Numba cannot compile with np.empty patched)
    monkeypatch.setattr(engine.WhitenedNorm, "norm_is_exact", lambda self, norm: False)
    reference = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)["sensitivity"]
    in_place, used = [], []

    def tracked_run(self, *arrays):
        outputs = run(self, *arrays)
        in_place.append(self.writes_in_place and outputs[0] is arrays[-2])
        return outputs

    monkeypatch.setattr(engine.WhitenedNorm, "run", tracked_run)
    monkeypatch.setattr(
        engine.WhitenedNorm,
        "norm_is_exact",
        lambda self, norm: used.append(exact(self, norm)) or used[-1],
    )
    empty = np.empty
    monkeypatch.setattr(np, "empty", lambda *a, **k: np.full_like(empty(*a, **k), np.nan))
    result = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)["sensitivity"]
    assert used and all(used)  # the graph's values were kept, chunk by chunk
    assert in_place and set(in_place) == {backend == "numba" and containers != "a 2-D and a 1-D"}
    np.testing.assert_allclose(result["rsens"].values, reference["rsens"].values, rtol=1e-12)


def test_draw_mode_components_and_statistics_are_separate_contiguous_arrays(rng):
    """Per-draw parameters come back (S, N, M) with each component contiguous, and
    the statistics as their own arrays (not joined: no copy of the mean
    parameter); values as NumPy computes them."""
    n = 6
    x = rng.normal(size=(n, 2))
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", shape=2)
        g = pm.Normal("g", shape=2)
        pm.Normal("y", mu=xd @ b, sigma=pm.math.exp(xd @ g), observed=rng.normal(size=n))
    draws = {"b": rng.normal(size=(1, 3, 2)), "g": rng.normal(size=(1, 3, 2))}
    idata = posterior(draws)
    ctx = _default_context(idata, model)
    compiled = _compiling.compiled_for(ctx, "draw", 0, statistics=("mean", "variance"))
    out = compiled(data_for_chunk(compiled, ctx.points.values), ctx.draws.chunk(0, 3))
    mu, sigma = x @ draws["b"][0].T, np.exp(x @ draws["g"][0].T)
    phi, statistics = out.phi, out.statistics
    assert phi.shape == (3, n, 2)
    assert all(phi[..., m].flags.c_contiguous for m in range(2))
    np.testing.assert_allclose(phi, np.stack([mu.T, sigma.T], -1), rtol=1e-13)
    np.testing.assert_allclose(statistics["variance"], sigma.T**2, rtol=1e-13)
    np.testing.assert_array_equal(statistics["mean"], phi[..., 0])
    nodes = compiled.function.maker.fgraph.apply_nodes
    assert sum(type(node.op).__name__ == "Join" for node in nodes) == 1  # phi's alone


def test_draws_are_read_native_and_a_native_array_as_it_is(rng):
    """A big-endian posterior (as a file may hold) gives the results of a native one.
    A native array is passed on as it is, with NumPy's own dtype: an equal copy of
    the dtype made np.require return a view, and PyTensor's NumPy ops copy every
    result computed from such an array (a view, to them)."""
    native = rng.normal(size=(3, 4))
    assert native_array(native) is native
    big = native.astype(">f8")
    read = native_array(big)
    assert read.dtype.isnative and read.flags.c_contiguous
    np.testing.assert_array_equal(read, native)
    x = rng.normal(size=(5, 2))
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", shape=2)
        pm.Normal("y", xd @ b, pm.math.exp(xd[:, 0] * b[1]), observed=x[:, 0])
    draws = rng.normal(size=(1, 6, 2))
    options = dict(mode="draw", progressbar=False, extend_inferencedata=False)
    expected = pm_sens.sensitivity(posterior({"b": draws}), model, **options)
    got = pm_sens.sensitivity(posterior({"b": draws.astype(">f8")}), model, **options)
    xr.testing.assert_identical(
        got["sensitivity"].to_dataset(), expected["sensitivity"].to_dataset()
    )


def testlargest_array_of_counts_an_axis_inside_the_graph():
    """A (draws, rows, K) temporary summed away before the outputs: its size is found
    from the shapes alone; a size known only from values (a nonzero count) is not."""
    from pm_sens.graph.compile.functions import GraphFunction

    x, w = pt.tensor("x", shape=(None, 1)), pt.matrix("w")  # (rows, 1), (draws, K)
    kernel = pt.exp(-((x[None, :, :] - w[:, None, :]) ** 2))  # (draws, rows, K)
    picked = pt.zeros((3, 4, 5))[:, :, : pt.sum(w > 0)]  # its shape needs w's values
    function = GraphFunction([x, w], [kernel.sum(-1), picked.sum()], "python")
    assert function.largest_array(np.zeros((7, 1)), np.ones((2, 11))) == 2 * 7 * 11
    assert GraphFunction([x], [x * 2], "python").largest_array(np.zeros((7, 1))) == 0


def testlargest_array_of_is_the_compiled_graphs():
    """A design matrix times per-draw coefficients is a batched product of a
    (1, rows, columns) array before rewriting, one matrix product once compiled:
    no array of three dims is computed there, so none limits the chunks (it
    held a 30-input logistic's PDP to one draw per chunk)."""
    from pytensor.graph.replace import vectorize_graph

    from pm_sens.graph.compile.functions import GraphFunction, largest_array_of

    x, beta, draws = pt.matrix("x"), pt.vector("beta"), pt.matrix("draws")
    eta = vectorize_graph(pt.dot(x, beta), {beta: draws})  # (draws, rows)
    outputs = [pt.exp(eta)[:, :, None]]
    shapes = ((1000, 30), (1, 30))
    assert largest_array_of([x, draws], outputs, shapes) == 1000 * 30  # as written
    function = GraphFunction([x, draws], outputs, "python")
    assert function.largest_array(*(np.zeros(shape) for shape in shapes)) == 1000


@pytest.mark.parametrize("batched", [True, False])
def test_class_probability_derivatives_equal_the_closed_form(rng, monkeypatch, batched):
    """An ordered logistic's 4 class probabilities p_k = σ(c_k − η) − σ(c_{k−1} − η),
    η = x·b: per draw and point, ∂p_k/∂x = −b Δ_k σ' and ∂²p_k/∂x∂x = b bᵀ Δ_k σ'',
    whether the derivatives of the classes come from one backward pass batched
    over them (`_over_components`) or one pass each."""
    from pm_sens.graph.compile import derivatives

    if not batched:
        monkeypatch.setattr(derivatives, "BATCHED_COMPONENTS", 99)
    n, s = 7, 5
    x = rng.normal(size=(n, 2))
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", shape=2)
        c = pm.Normal("c", shape=3, transform=pm.distributions.transforms.ordered)
        pm.OrderedLogistic("y", eta=xd @ b, cutpoints=c, observed=np.zeros(n, dtype=int))
    draws = {"b": rng.normal(size=(1, s, 2)), "c": np.sort(rng.normal(size=(1, s, 3)), -1)}
    ctx = _default_context(posterior(draws), model)
    compiled = _compiling.compiled_for(ctx, "draw", 2)
    out = compiled(data_for_chunk(compiled, ctx.points.values), ctx.draws.chunk(0, s))
    beta, cutpoints = draws["b"][0], draws["c"][0]
    z = cutpoints[:, None, :] - (beta @ x.T)[..., None]  # (S, N, 3)
    sigma = special.expit(z)
    slope, curvature = sigma * (1 - sigma), sigma * (1 - sigma) * (1 - 2 * sigma)

    def over_classes(t):  # Δ_k t = t(z_k) − t(z_{k−1}), t = 0 past both ends
        padded = np.concatenate([np.zeros((s, n, 1)), t, np.zeros((s, n, 1))], -1)
        return np.moveaxis(np.diff(padded, axis=-1), -1, 0)  # (K, S, N)

    jac = -over_classes(slope)[..., None] * beta[:, None, :]
    outer = beta[:, :, None] * beta[:, None, :]  # (S, D, D)
    hess = over_classes(curvature)[..., None, None] * outer[:, None]
    np.testing.assert_allclose(np.stack(out.jac), jac, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(np.stack(out.hess), hess, rtol=1e-10, atol=1e-14)

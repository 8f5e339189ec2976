"""Engine behaviour: compiled graphs reused, labels carried over, thinning, the
generic Fisher fallback, user-built predictives."""

import re
from functools import partial

import numpy as np
import pymc as pm
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
import pytest
import xarray as xr
from scipy import special

import pm_sens
from pm_sens import _runner
from pm_sens._validate import native_array
from pm_sens.graph import engine
from pm_sens.graph.generic import GenericLikelihood
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
    return _runner.make_context(
        idata,
        model,
        var_name=None,
        inputs=None,
        points=None,
        predictive=None,
        num_draws=None,
        random_seed=None,
        memory_limit=1e9,
        progressbar=False,
        extend_inferencedata=False,
    )


def test_new_points_do_not_recompile(logistic, monkeypatch, rng):
    model, idata, _ = logistic
    pm_sens.sensitivity(idata, model, progressbar=False)
    calls = []
    original = engine.compile_predictive
    monkeypatch.setattr(
        _runner, "compile_predictive", lambda *a, **k: calls.append(1) or original(*a, **k)
    )
    out = pm_sens.sensitivity(
        idata, model, points={"X": rng.normal(size=(7, 2))}, progressbar=False
    )
    assert calls == []
    assert out["sensitivity"]["rsens"].shape == (7, 2)
    assert list(out["sensitivity"]["house"].values) == list(range(7))


def test_chunks_run_with_blas_on_one_thread_and_restore_it(logistic, monkeypatch):
    """BLAS runs on one thread while draw-mode chunks are evaluated and consumed, as it
    was after."""
    from threadpoolctl import threadpool_info

    def blas_threads():
        return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]

    before = blas_threads()
    assert before  # NumPy's BLAS is found
    seen = []
    original = _runner.check_outputs

    def check_outputs(*args):
        seen.append(blas_threads())
        return original(*args)

    monkeypatch.setattr(_runner, "check_outputs", check_outputs)
    model, idata, _ = logistic
    pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)
    assert seen and all(threads == [1] * len(before) for threads in seen)
    assert blas_threads() == before


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


def test_predictive_rejects_unknown_family_and_parameters(logistic):
    model, _, _ = logistic
    with pytest.raises(ValueError, match=r"family='weibul' is not a known likelihood family"):
        pm_sens.Predictive("weibul", {}, [])
    with pytest.raises(ValueError, match=r"do not describe a normal likelihood: expected"):
        pm_sens.Predictive("normal", {"mu": model["b"][0]}, [model["X"]])


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
    """Gumbel(μ, β) has I_μμ = 1/β²: per draw R-sens = |b|/β for μ = b x."""
    x = rng.normal(size=6)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        pm.Gumbel("y", mu=b * xd, beta=2.0, observed=x)
    idata = posterior({"b": np.array([[0.5, -1.5]])})
    out = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)["sensitivity"]
    assert out.attrs["fisher"].startswith("Gauss-Legendre quadrature")
    assert out.attrs["likelihood"] == "gumbel"
    expected = np.abs([0.5, -1.5])[:, None] / 2.0
    np.testing.assert_allclose(
        out["rsens"].values[0, :, :, 0], np.repeat(expected, 6, 1), rtol=1e-6
    )
    # moment mode: Normal matched to the Gumbel's mean mu + beta·γ and variance
    # (π β)²/6, which does not depend on x: R-sens = |b| / sd
    moment = pm_sens.sensitivity(idata, model, progressbar=False)["sensitivity"]
    sd = np.pi * 2.0 / np.sqrt(6)
    # mixture of the two draws: mean b·x + 2γ, variance sd² + Var_s(b)·x²
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


def test_interpreted_and_compiled_graphs_agree(rng, monkeypatch):
    """Small moment-mode requests run op by op in NumPy, large ones compiled by
    Numba: the same numbers (to rounding) for R-sens and R-sens2, means and
    variances alike."""
    model, idata = _heteroscedastic(rng)
    results, backends = {}, {}
    for backend, work in (("python", np.inf), ("numba", -1)):
        monkeypatch.setattr(_runner, "INTERPRETED_WORK", work)
        results[backend] = pm_sens.sensitivity(idata, model, interactions=True, progressbar=False)[
            "sensitivity"
        ]
        compiled = _runner.predictive_for(model, None).compiled.values()
        backends[backend] = {c.settings["backend"] for c in compiled}
        interpreted = [c.function for c in compiled if c.settings["backend"] == "python"]
        assert not any(engine._runs_element_by_element(f) for f in interpreted)
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
    assert [_runner.backend_for(ctx, "moment", order) for order in (0, 1, 2)] == ["python"] * 3
    monkeypatch.setattr(_runner, "INTERPRETED_WORK", 40 * 10 * 2)
    moment = [_runner.backend_for(ctx, "moment", order) for order in (0, 1, 2)]
    assert moment == ["python", "python", "numba"]
    assert _runner.backend_for(ctx, "moment", 1, rows=21) == "numba"  # stacked copies
    assert _runner.backend_for(ctx, "moment", 0, rows=10**6) == "python"  # forward only
    assert _runner.backend_for(ctx, "draw", 2, rows=10**6) == "python"
    # draw-mode R-sens computed in the graph follows the work, as moment mode does
    assert _runner.backend_for(ctx, "draw", 1, whitened=True) == "python"
    assert _runner.backend_for(ctx, "draw", 1, rows=21, whitened=True) == "numba"


def test_an_op_numpy_cannot_run_whole_is_compiled(rng):
    """A scalar op with no NumPy ufunc (trigamma) would run element by element
    in Python: that graph is compiled instead, and R-sens is still |dμ/dx|/σ."""
    x = rng.normal(size=12)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        pm.Normal("y", mu=pt.tri_gamma(pm.math.exp(xd * b)), sigma=0.5, observed=x)
    b = rng.normal(scale=0.3, size=(1, 8))
    out = pm_sens.sensitivity(posterior({"b": b}), model, mode="draw", progressbar=False)
    compiled = _runner.predictive_for(model, None).compiled.values()
    # the forward graph holds tri_gamma; R-sens's graph only its derivative (a ufunc)
    forward = [c for c in compiled if c.settings["mode"] == "draw" and c.settings["order"] == 0]
    assert [c.settings["backend"] for c in forward] == ["numba"]
    rate = np.exp(x * b[0][:, None])
    expected = np.abs(special.polygamma(2, rate) * rate * b[0][:, None]) / 0.5
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
    scales (`WhitenedNorm`); the NumPy quadratic forms on the graph's derivatives
    stay the reference. Where the information is not diagonal (Beta; LogNormal in
    mean and variance) the graph's value is not used."""
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
    monkeypatch.setattr(_runner, "INTERPRETED_WORK", -1)
    compiled = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)["sensitivity"]
    backends = {
        c.settings["backend"]
        for c in _runner.predictive_for(model, None).compiled.values()
        if c.settings.get("whitened")
    }
    assert backends == {"numba"}
    monkeypatch.setattr(engine.WhitenedNorm, "norm_is_exact", lambda self, norm: False)
    reference = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)["sensitivity"]
    np.testing.assert_allclose(
        compiled["rsens"].values, reference["rsens"].values, rtol=1e-12, atol=0
    )


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
        monkeypatch.setattr(_runner, "INTERPRETED_WORK", -1)
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


def test_sums_over_draws_of_outer_products_become_matrix_products(rng):
    """``Σ_s r[s, n] c[s, d]`` (the moment-mode derivatives of a per-draw ``X @ b``)
    is rewritten into a matrix product, term by term in a sum, with the same
    values; a factor varying along both n and d leaves the sum as it is."""
    s, n, d = 7, 5, 3
    r = pt.tensor("r", shape=(None, None, 1))
    c = pt.tensor("c", shape=(None, 1, d))
    w = pt.tensor("w", shape=(1, None, 1))  # constant across draws
    v = pt.tensor("v", shape=(1, 1, d))  # constant across draws
    full = pt.tensor("full", shape=(None, None, d))
    values = {
        r: rng.normal(size=(s, n, 1)),
        c: rng.normal(size=(s, 1, d)),
        w: rng.normal(size=(1, n, 1)),
        v: rng.normal(size=(1, 1, d)),
        full: rng.normal(size=(s, n, d)),
    }
    # terms: per-draw rows and columns, rows or columns or neither constant
    # across draws, rows alone; the number of draws an integer
    terms = (2 * r * c) / r.shape[0] + (w * c) / r.shape[0] + pt.exp(r) * v + w * v + r
    cases = {
        "product": ((r * c).sum(0), True),
        "sum of products": ((terms + pt.exp(r) * c).sum(0), True),
        "full factor": ((r * c * full).sum(0), False),
    }
    for name, (expr, rewritten) in cases.items():
        inputs = [v for v in values if v in pytensor.graph.traversal.graph_inputs([expr])]
        for backend in engine.BACKENDS:
            function = pytensor.function(inputs, expr, mode=engine._compile_mode(backend))
            ops = {type(node.op).__name__ for node in function.maker.fgraph.apply_nodes}
            assert ("Dot" in ops) == rewritten, (name, backend, ops)
            assert backend == "numba" or not engine._runs_element_by_element(function)
            reference = pytensor.function(inputs, expr, mode="FAST_COMPILE")
            np.testing.assert_allclose(
                function(*(values[v] for v in inputs)),
                reference(*(values[v] for v in inputs)),
                rtol=1e-12,
            )


def _features_column(points, b, d):
    """The second backward pass's ``onehot_d @ Bᵀ``, (N, S): ``B[:, d]`` on every row."""
    onehot = pt.set_subtensor(pt.zeros((points.shape[0], b.shape[1]))[:, d], 1.0)
    return pt.dot(onehot, b.T)  # a Dot, as in rewritten graphs (``@`` is batched)


def test_values_constant_along_an_axis_are_found_and_computed_once(rng):
    """`_constant_along` finds values the same all along an axis through
    elementwise ops, views, reductions, matrix products and writes into zeros,
    and gives them at length 1 there; values that vary are refused."""
    x, b = pt.matrix("x", shape=(None, 3)), pt.matrix("b", shape=(None, 3))
    values = {x: rng.normal(size=(5, 3)), b: rng.normal(size=(7, 3))}
    column = _features_column(x, b, 1)  # (N, S)
    per_draw = column.T[:, :, None]  # (S, N, 1)
    cases = {
        "column": (column, 0, True),
        "view, elementwise": (pt.exp(per_draw) * 2 - per_draw, 1, True),
        "centred over draws": (column - column.mean(1)[:, None], 0, True),
        "reduced over draws": (column.sum(1), 0, True),
        "points' products": (pt.dot(x, b.T), 0, False),
        "a row written": (
            pt.dot(pt.set_subtensor(pt.zeros((x.shape[0], 3))[2], 1.0), b.T),
            0,
            False,
        ),
        "times the points": (column * x[:, :1], 0, False),
    }
    for name, (expr, axis, constant) in cases.items():
        found = engine._constant_along(expr, axis)
        assert (found is not None) == constant, name
        if constant:
            assert found.type.shape[axis] == 1, name
            full, once = pytensor.function([x, b], [expr, found], mode="FAST_COMPILE")(
                values[x], values[b]
            )
            np.testing.assert_allclose(np.broadcast_to(once, full.shape), full, err_msg=name)


def test_a_features_column_is_factored_out_of_sums_over_draws(rng):
    """The second backward pass of ``X @ Bᵀ`` multiplies ``B[:, d]``, repeated for
    every point, into each term (through sums and a stable sigmoid's switch):
    it moves to the (S, D) side of the matrix product and is never built at
    N × S; products sharing their left side become one. Values as PyTensor's."""
    x, b = pt.matrix("x", shape=(None, 3)), pt.matrix("b", shape=(None, 3))
    values = [rng.normal(size=(5, 3)), rng.normal(size=(7, 3))]
    eta = (x @ b.T).T[:, :, None]  # (S, N, 1)
    weight = pt.sigmoid(eta) * (1 - pt.sigmoid(eta))
    per_feature = []
    for d in range(3):
        column = _features_column(x, b, d).T[:, :, None]
        term = pt.switch(eta > 0, column * weight - column * eta, -(column * weight) / 2)
        per_feature.append((term * b[:, None, :]).sum(0))
    for backend in engine.BACKENDS:
        function = pytensor.function([x, b], per_feature, mode=engine._compile_mode(backend))
        nodes = function.maker.fgraph.apply_nodes
        writes = [n for n in nodes if type(n.op).__name__ == "IncSubtensor"]
        assert writes and all(n.outputs[0].type.shape[0] == 1 for n in writes), backend
        # one (N, S) @ (S, 3·D) product for the three features
        assert sum(n.outputs[0].type.shape[1] == 9 for n in nodes if type(n.op).__name__ == "Dot")
        reference = pytensor.function([x, b], per_feature, mode="FAST_COMPILE")
        for got, expected in zip(function(*values), reference(*values), strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-12, err_msg=backend)


def test_products_share_their_left_side_only_when_independent(rng):
    """``A @ C_k`` for several ``C_k`` become one product, unless a ``C_k`` depends
    on another product (which would make a cycle)."""
    a, c1, c2 = pt.matrix("a"), pt.matrix("c1"), pt.matrix("c2")
    values = [rng.normal(size=(4, 6)), rng.normal(size=(6, 2)), rng.normal(size=(6, 3))]
    cases = {
        "independent": ([a @ c1, a @ c2], 1),
        "dependent": ([a @ c1, a @ (a.T @ (a @ c1))], 2),
    }
    for name, (outputs, products) in cases.items():
        function = pytensor.function(
            [a, c1, c2], outputs, mode=engine._compile_mode("python"), on_unused_input="ignore"
        )
        dots = [
            n
            for n in function.maker.fgraph.apply_nodes
            if type(n.op).__name__ in ("Dot", "Dot22") and n.inputs[0].name == "a"
        ]
        assert len(dots) == products, name
        reference = pytensor.function(
            [a, c1, c2], outputs, mode="FAST_COMPILE", on_unused_input="ignore"
        )
        for got, expected in zip(function(*values), reference(*values), strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-12, err_msg=name)


def test_a_sum_of_outer_products_becomes_one_matrix_product(rng):
    """``a + b0 x0 + b1 x1 + …`` over draws (columns) and points (rows), as bambi
    writes a linear predictor: one matrix product for the outer products, the
    other terms added; fewer than two outer products, or integers, are left."""
    s, n = 6, 5
    cols = [pt.matrix(f"b{j}", shape=(None, 1)) for j in range(3)]
    rows = [pt.matrix(f"x{j}", shape=(1, None)) for j in range(3)]
    a, k = pt.matrix("a", shape=(None, 1)), pt.matrix("k", shape=(1, None), dtype="int64")
    values = {v: rng.normal(size=(s, 1)) for v in cols} | {
        v: rng.normal(size=(1, n)) for v in rows
    }
    values |= {a: rng.normal(size=(s, 1)), k: rng.integers(0, 5, size=(1, n))}
    cases = {
        "three and an intercept": (
            a + cols[0] * rows[0] + rows[1] * cols[1] + cols[2] * rows[2],
            True,
        ),
        "one": (a + cols[0] * rows[0], False),
        "integer rows": (cols[0] * k + cols[1] * k, False),
    }
    for name, (expr, rewritten) in cases.items():
        inputs = [v for v in values if v in pytensor.graph.traversal.graph_inputs([expr])]
        for backend in engine.BACKENDS:
            function = pytensor.function(inputs, expr, mode=engine._compile_mode(backend))
            ops = {type(node.op).__name__ for node in function.maker.fgraph.apply_nodes}
            assert bool(ops & {"Dot", "Dot22", "Gemm"}) == rewritten, (name, backend, ops)
            reference = pytensor.function(inputs, expr, mode="FAST_COMPILE")
            arrays = [values[v] for v in inputs]
            np.testing.assert_allclose(function(*arrays), reference(*arrays), rtol=1e-13)


def test_like_columns_are_joined_below_their_elementwise_op(rng):
    """Columns side by side that are the same elementwise expression of shared
    (S, N) arrays and of their own (S, 1) coefficient (draw-mode R-sens of
    bambi's one-container-per-predictor models) are computed as one expression
    of the joined coefficients; columns used elsewhere, of different ops, or
    whose own inputs cannot be joined stay as they are. The same values."""
    w, v = pt.matrix("w"), pt.matrix("v")
    coefs = [pt.matrix(f"b{j}", shape=(None, 1)) for j in range(3)]
    row = pt.matrix("row", shape=(1, None))
    values = {w: rng.normal(size=(6, 5)), v: rng.normal(size=(6, 5)), row: rng.normal(size=(1, 5))}
    values |= {b: rng.normal(size=(6, 1)) for b in coefs}

    def column(b, op=pt.abs):
        return op(pt.switch(v > 0, w * b, 0.0) * pt.exp(v))[..., None]

    columns = [column(b) for b in coefs]
    cases = {
        "like columns": ([pt.concatenate(columns, axis=2)], True),
        "one also an output": ([pt.concatenate(columns, axis=2), columns[0]], False),
        "different ops": (
            [pt.concatenate([column(coefs[0], pt.sin), column(coefs[1], pt.cos)], axis=2)],
            False,
        ),
        "a row and a column": ([pt.concatenate([columns[0], column(row)], axis=2)], False),
        "sums of different lengths": (
            [
                pt.concatenate(
                    [(w * coefs[0] + v + pt.exp(w))[..., None], (w * coefs[1] + v)[..., None]],
                    axis=2,
                )
            ],
            False,
        ),
    }
    for name, (outputs, lifted) in cases.items():
        inputs = [x for x in values if x in pytensor.graph.traversal.graph_inputs(outputs)]
        reference = pytensor.function(inputs, outputs, mode="FAST_COMPILE")
        arrays = [values[x] for x in inputs]
        for backend in engine.BACKENDS:
            with pytensor.config.change_flags(on_opt_error="raise"):  # no rewrite fails
                function = pytensor.function(inputs, outputs, mode=engine._compile_mode(backend))
            joins = [
                node.outputs[0].type.broadcastable
                for node in function.maker.fgraph.apply_nodes
                if type(node.op).__name__ == "Join"
            ]
            # lifted: only the (S, 1, 3) coefficients are joined, not (S, N, 1) columns
            assert all(b[1] for b in joins) == lifted and joins, (name, backend, joins)
            for got, expected in zip(function(*arrays), reference(*arrays), strict=True):
                np.testing.assert_allclose(got, expected, rtol=1e-14)


def test_a_set_into_zeros_along_a_length_one_axis_becomes_a_view(rng):
    """``zeros((S, N, 1))[:, :, 0] = y`` (how the gradient of a per-draw column is
    written) runs as ``y[:, :, None]``, with the same values; a longer axis, or a
    ``y`` broadcast by the assignment, keeps the assignment."""
    y = pt.matrix("y")
    row = pt.matrix("row", shape=(1, None))
    n_draws, n = y.shape
    cases = {
        "set": (pt.set_subtensor(pt.zeros((n_draws, n, 1))[:, :, 0], y), y, True),
        "increment": (pt.inc_subtensor(pt.zeros((n_draws, n, 1))[:, :, 0], y), y, True),
        "axis of two": (pt.set_subtensor(pt.zeros((n_draws, n, 2))[:, :, 0], y), y, False),
        "broadcast": (pt.set_subtensor(pt.zeros((4, n, 1))[:, :, 0], row), row, False),
    }
    values = {y: rng.normal(size=(4, 5)), row: rng.normal(size=(1, 5))}
    for name, (expr, given, rewritten) in cases.items():
        inputs = [given] if given is y else [given, y]
        for backend in engine.BACKENDS:
            function = pytensor.function(
                inputs, expr, mode=engine._compile_mode(backend), on_unused_input="ignore"
            )
            ops = {type(node.op).__name__ for node in function.maker.fgraph.apply_nodes}
            assert ("IncSubtensor" not in ops) == rewritten, (name, backend, ops)
            reference = pytensor.function(
                inputs, expr, mode="FAST_COMPILE", on_unused_input="ignore"
            )
            arrays = [values[v] for v in inputs]
            np.testing.assert_array_equal(function(*arrays), reference(*arrays))


def test_numpy_linker_ufuncs_write_into_their_output(rng):
    """An inplace elementwise op run by NumPy's linker writes into the input it
    destroys, and a sum of several terms folds into one array, the pair with the
    smallest broadcast shape first, else in the order of its terms (the same
    values to the bit), broadcasting where a partial result is smaller than
    the output."""
    a, c, t = pt.matrix("a", shape=(None, 1)), pt.matrix("c", shape=(1, None)), pt.matrix("t")
    r = pt.matrix("r", shape=(1, None))
    values = {
        a: rng.normal(size=(4, 1)),
        c: rng.normal(size=(1, 5)),
        t: rng.normal(size=(4, 5)),
        r: rng.normal(size=(1, 5)),
    }
    cases = {
        # the destroyed term last: read only at the last step
        "sum into its last term": ((ps.add, {0: 2}), [a, c, t], lambda x, y, z: (x + y) + z),
        "sum, partial result smaller": ((ps.mul, {}), [a, c, t], lambda x, y, z: (x * y) * z),
        # a column times two rows: the rows first (one (4, 5) pass, not two)
        "product, rows first": ((ps.mul, {}), [a, c, r], lambda x, y, z: x * (y * z)),
        "sum into its first term, rows first": (
            (ps.add, {0: 0}),
            [t, a, c, r],
            lambda w, x, y, z: (w + x) + (y + z),
        ),
        "exponential in place": ((ps.exp, {0: 0}), [t], np.exp),
    }
    for name, ((scalar_op, inplace), inputs, reference) in cases.items():
        op = engine._UfuncWithOut(scalar_op, inplace)
        arrays = [values[v].copy() for v in inputs]
        expected = reference(*arrays)
        storage = [[None]]
        op.perform(op.make_node(*inputs), arrays, storage)
        np.testing.assert_array_equal(storage[0][0], expected, err_msg=name)
        if inplace:
            assert storage[0][0] is arrays[inplace[0]], name

    # in compiled graphs: float ops are rewritten and agree with PyTensor's own
    # implementation; integer ones are left to it
    z, k = pt.matrix("z"), pt.matrix("k", dtype="int64")
    for expr, inputs, rewritten in [
        (pt.exp(z) + a + c, [z, a, c], True),
        (k + 2 * k + k, [k], False),
    ]:
        function = pytensor.function(inputs, expr, mode=engine._compile_mode("python"))
        ops = {type(node.op).__name__ for node in function.maker.fgraph.apply_nodes}
        assert ("_UfuncWithOut" in ops) == rewritten, ops
        arrays = (
            [values[t], values[a], values[c]] if rewritten else [rng.integers(0, 9, size=(4, 5))]
        )
        reference = pytensor.function(inputs, expr, mode="FAST_COMPILE")
        np.testing.assert_allclose(function(*arrays), reference(*arrays), rtol=1e-15)


def test_numpy_linker_gemm_adds_the_product_into_z_with_one_blas_call(rng):
    """``z ← a x y + b z`` run by NumPy's linker writes into z itself, C- or
    Fortran-ordered, in float64 and float32, with PyTensor's Gemm's values; a
    z broadcast up to the product's shape takes PyTensor's own path."""
    op, reference = engine._GemmByBlas(), pytensor.tensor.blas.Gemm(inplace=False)
    for dtype, order, z_shape in [
        ("float64", "C", (4, 6)),
        ("float64", "F", (4, 6)),
        ("float32", "C", (4, 6)),
        ("float64", "C", (1, 6)),  # broadcast
    ]:
        z = np.asarray(rng.normal(size=z_shape), dtype=dtype, order=order)
        x = rng.normal(size=(4, 3)).astype(dtype)
        y = np.asarray(rng.normal(size=(6, 3)).astype(dtype).T)  # a transposed view
        a, b = np.asarray(0.5, dtype=dtype), np.asarray(1.5, dtype=dtype)
        expected = b * z + a * (x.astype("float64") @ y.astype("float64"))
        case = (dtype, order, z_shape)
        node = op.make_node(pt.as_tensor(z), a, x, y, b)
        storage = [[None]]
        op.perform(node, [z.copy(order="K"), a, x, y, b], storage)
        tolerance = 1e-13 if dtype == "float64" else 1e-5
        np.testing.assert_allclose(storage[0][0], expected, rtol=tolerance, err_msg=str(case))
        if z_shape == (4, 6):
            given = z.copy(order="K")
            op.perform(node, [given, a, x, y, b], storage)
            assert storage[0][0] is given, case  # written in place
        check = [[None]]
        reference.perform(node, [z.copy(order="K"), a, x, y, b], check)
        np.testing.assert_allclose(storage[0][0], check[0][0], rtol=tolerance, err_msg=str(case))

    # in graphs run in NumPy: a product plus a term is this Gemm, with the values of
    # PyTensor's own implementation
    beta, xm, c = pt.matrix("beta"), pt.matrix("xm"), pt.matrix("c", shape=(1, None))
    expr = pt.dot(beta, xm.T) + pt.col("s") * c
    inputs = [beta, xm, *[v for v in pytensor.graph.graph_inputs([expr]) if v.name == "s"], c]
    function = pytensor.function(inputs, expr, mode=engine._compile_mode("python"))
    ops = {type(node.op).__name__ for node in function.maker.fgraph.apply_nodes}
    assert "_GemmByBlas" in ops, ops
    arrays = [rng.normal(size=(5, 3)), rng.normal(size=(7, 3)), rng.normal(size=(5, 1))]
    arrays.append(rng.normal(size=(1, 7)))
    fast = pytensor.function(inputs, expr, mode="FAST_COMPILE")
    np.testing.assert_allclose(function(*arrays), fast(*arrays), rtol=1e-13)


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
    compiled = _runner.compiled_for(ctx, "draw", 0, statistics=("mean", "variance"))
    out = compiled(_runner.data_for_chunk(compiled, ctx.points.values), ctx.draws.chunk(0, 3))
    mu, sigma = x @ draws["b"][0].T, np.exp(x @ draws["g"][0].T)
    phi, statistics = out["phi"], out["statistics"]
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

"""Every core: chunks evaluated in threads at once, with the same results for any
number of cores; the ``cores`` option; compiled graphs that release the GIL."""

import threading
import time

import arviz_base as azb
import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.graph.replace import vectorize_graph

import pm_sens
from pm_sens._run import chunks as _chunks
from pm_sens._run import compiling as _compiling
from pm_sens._run.background import wait_for_compiles
from pm_sens.graph.compile.functions import GraphFunction
from pm_sens.options import available_cores


@pytest.fixture(scope="module")
def large():
    """A heteroscedastic Normal regression whose calls take tens of chunks of draws."""
    rng = np.random.default_rng(3)
    n, d = 6_000, 4
    x = rng.normal(size=(n, d))
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", shape=d)
        g = pm.Normal("g")
        y = rng.normal(size=n)
        pm.Normal("y", mu=xd @ b, sigma=pt.exp(0.2 + g * xd[:, 0]), observed=y)
    idata = azb.from_dict(
        {
            "posterior": {"b": rng.normal(size=(2, 150, d)), "g": 0.3 * rng.normal(size=(2, 150))},
            "observed_data": {"y": y},
        }
    )
    return model, idata, x[:1500]


@pytest.fixture(scope="module")
def counts():
    """A Poisson regression: its entropies are sums over each row's counts."""
    rng = np.random.default_rng(4)
    n = 500
    x = rng.normal(size=(n, 2))
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", shape=2)
        y = rng.poisson(5.0, size=n)
        pm.Poisson("y", mu=pt.exp(1.5 + xd @ b), observed=y)
    idata = azb.from_dict(
        {"posterior": {"b": 0.2 * rng.normal(size=(2, 150, 2))}, "observed_data": {"y": y}}
    )
    return model, idata


def _calls(model, idata, points):
    """Calls whose passes take many chunks: draw and moment mode, importance, PDP, IG."""
    kw = {"progressbar": False, "extend_inferencedata": False}
    few = {"points": {"X": points}}
    return {
        "draw": lambda: pm_sens.sensitivity(idata, model, mode="draw", **kw)["sensitivity"],
        # its graph holds arrays of the rows alone: chunks of 125 draws, fewer with this limit
        "draw, mean over points": lambda: pm_sens.sensitivity(
            idata, model, mode="draw", local=False, memory_limit=4e7, **kw
        )["sensitivity"],
        "moment": lambda: pm_sens.sensitivity(idata, model, method=["rsens", "kl"], **kw)[
            "sensitivity"
        ],
        "permutation": lambda: pm_sens.permutation_importance(
            idata, model, n_repeats=2, random_seed=1, **kw
        )["permutation_importance"],
        "partial dependence": lambda: pm_sens.partial_dependence(
            idata, model, grid_resolution=4, **few, **kw
        )["partial_dependence"],
        "integrated gradients": lambda: pm_sens.integrated_gradients(
            idata, model, n_steps=4, **few, **kw
        )["attribution"],
    }


def test_results_are_the_same_for_any_number_of_cores(large, counts, monkeypatch):
    """Every call gives the same values, bit for bit, on one core and on three, and
    on three its chunks were evaluated in threads at once (two or more running)."""
    model, idata, points = large
    # the same graphs in both runs: no Numba compile finishing between them
    monkeypatch.setattr(_compiling, "compile_when_asked_again", lambda *args: None)
    running, most = [0], [0]
    lock = threading.Lock()
    original = _chunks.check_outputs

    def concurrent(evaluate):
        def counted(start):
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            try:
                return evaluate(start)
            finally:
                with lock:
                    running[0] -= 1

        return counted

    ahead = _chunks._ahead
    monkeypatch.setattr(_chunks, "_ahead", lambda evaluate, *a: ahead(concurrent(evaluate), *a))
    monkeypatch.setattr(_chunks, "check_outputs", original)
    calls = _calls(model, idata, points)
    count_model, count_draws = counts
    kw = {"progressbar": False, "extend_inferencedata": False}
    calls["count permutation"] = lambda: pm_sens.permutation_importance(
        count_draws, count_model, n_repeats=3, random_seed=1, **kw
    )["permutation_importance"]
    calls["count partial dependence"] = lambda: pm_sens.partial_dependence(
        count_draws, count_model, **kw
    )["partial_dependence"]
    for name, call in calls.items():
        most[0] = 0
        one = call()
        assert most[0] == 1, name  # one core: one chunk at a time
        most[0] = 0
        with pm_sens.set_options(cores=3):
            three = call()
        assert most[0] >= 2, name
        assert sorted(one.data_vars) == sorted(three.data_vars), name
        for var in one.data_vars:
            np.testing.assert_array_equal(one[var].values, three[var].values, err_msg=name)


def test_a_small_tables_draws_are_chunks_the_cores_share(monkeypatch):
    """A negative binomial on 30 rows, 2 × 500 draws: its draws would fit one chunk
    of the cache's size, yet its α information is a sum over each row's counts, so the
    draw-mode pass has chunks of 64 draws (`SHARED_DRAWS`; a `DRAW_CHUNKS`-th of the
    draws where that is more), and two cores give the one core's values, bit for bit."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=30)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        alpha = pm.Gamma("alpha", 2, 1)
        y = rng.negative_binomial(2, 0.1, size=30)
        pm.NegativeBinomial("y", mu=pt.exp(2.5 + b * xd), alpha=alpha, observed=y)
    idata = azb.from_dict(
        {
            "posterior": {
                "b": 0.3 * rng.normal(size=(2, 500)),
                "alpha": rng.gamma(4, 0.5, size=(2, 500)),
            },
            "observed_data": {"y": y},
        }
    )
    chunks = []
    ahead = _chunks._ahead
    monkeypatch.setattr(
        _chunks,
        "_ahead",
        lambda evaluate, starts, *a: chunks.append(list(starts)) or ahead(evaluate, starts, *a),
    )
    kw = {"mode": "draw", "progressbar": False, "extend_inferencedata": False}
    one = pm_sens.sensitivity(idata, model, **kw)["sensitivity"]["rsens"].values
    with pm_sens.set_options(cores=2):
        two = pm_sens.sensitivity(idata, model, **kw)["sensitivity"]["rsens"].values
    assert chunks and all(starts == list(range(0, 1000, 64)) for starts in chunks)
    np.testing.assert_array_equal(one, two)


@pytest.fixture(autouse=True)
def _one_core_unless_set():
    """The tests' calls run on one core unless a test sets more (the module's default)."""
    with pm_sens.set_options(cores=1):
        yield
    wait_for_compiles()  # the Numba compiles the repeated calls started


def test_set_options_sets_for_later_calls_or_inside_a_block():
    with pm_sens.set_options(cores=2):
        assert pm_sens.get_options("cores") == 2
        with pm_sens.set_options(cores=5):
            assert pm_sens.get_options("cores") == 5
        assert pm_sens.get_options("cores") == 2
    assert pm_sens.get_options() == {"cores": 1, "backend": "cpu", "dtype": "float64"}
    with pm_sens.set_options(cores=None):
        expected = {"cores": available_cores(), "backend": "cpu", "dtype": "float64"}
        assert pm_sens.get_options() == expected
        assert pm_sens.get_options("cores") == available_cores()
    with pytest.raises(
        ValueError,
        match=r"name='device' is not valid; the options are \['backend', 'cores', 'dtype'\]",
    ):
        pm_sens.get_options("device")


@pytest.mark.parametrize("value", [0, -2, 1.5, True, "all"])
def test_a_number_of_cores_that_is_not_one_or_more_is_refused(value, large):
    with pytest.raises(ValueError, match=rf"cores={value!r} is not valid; it must be None"):
        pm_sens.set_options(cores=value)
    assert pm_sens.get_options("cores") == 1  # unchanged
    model, idata, _ = large
    with pytest.raises(ValueError, match=rf"cores={value!r} is not valid"):
        pm_sens.sensitivity(idata, model, cores=value, progressbar=False)


def test_a_calls_cores_override_the_setting(large, monkeypatch):
    model, idata, _ = large
    seen = []
    ahead = _chunks._ahead
    monkeypatch.setattr(
        _chunks,
        "_ahead",
        lambda evaluate, starts, cores, *a: (
            seen.append(cores) or ahead(evaluate, starts, cores, *a)
        ),
    )
    pm_sens.sensitivity(idata, model, mode="draw", cores=4, progressbar=False)
    assert seen and set(seen) == {4}


def test_chunks_are_evaluated_in_as_many_threads_as_cores_and_consumed_in_order():
    """With a consumer that takes no time, ``cores`` threads evaluate chunks at once
    (after the three timed ones); with a consumer that takes time, one fewer, beside
    it; never more than ``fits``; one core evaluates every chunk in the calling thread."""
    main = threading.current_thread().name

    def run(cores, consume, fits=None):
        running, most, threads = [0], [0], set()
        lock = threading.Lock()

        def evaluate(start):
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
                threads.add(threading.current_thread().name)
            time.sleep(0.02)
            with lock:
                running[0] -= 1
            return 10 * start

        got = []
        for start, value in _chunks._ahead(evaluate, range(12), cores, fits):
            time.sleep(consume)
            got.append((start, value))
        assert got == [(k, 10 * k) for k in range(12)]
        return most[0], threads

    most, threads = run(3, 0.0)
    assert most == 3 and main in threads and len(threads) == 4
    most, _ = run(3, 0.02)
    assert most == 2
    most, _ = run(3, 0.0, fits=1)
    assert most == 1
    most, threads = run(1, 0.0)
    assert most == 1 and threads == {main}


def test_a_failed_chunk_raises_at_its_turn_and_the_rest_are_not_started():
    started = []

    def evaluate(start):
        started.append(start)
        time.sleep(0.01)
        if start == 5:
            raise FloatingPointError("chunk 5")
        return start

    consumed = []
    with pytest.raises(FloatingPointError, match="chunk 5"):
        for start, _ in _chunks._ahead(evaluate, range(40), 2):
            consumed.append(start)
    assert consumed == [0, 1, 2, 3, 4]
    assert max(started) < 10  # the pool's queue was dropped, not run


def _sigmoid_regression():
    x = pt.matrix("x")
    b = pt.vector("b")
    rng = np.random.default_rng(0)
    cases = [(rng.normal(size=(500, 3)), rng.normal(size=3)) for _ in range(16)]
    return [x, b], [pt.sigmoid(x @ b), pt.exp(x).sum(0)], cases


def _batched_einsum():
    """An einsum (an `OpFromGraph`) vectorized over draws, as a model's graph is."""
    x = pt.matrix("x")
    b = pt.vector("b")
    draws = pt.matrix("draws")
    y = vectorize_graph(pt.exp(0.01 * pt.einsum("ab,b->a", x, pt.sin(b))), replace={b: draws})
    rng = np.random.default_rng(1)
    cases = [(rng.normal(size=(20_000, 30)), rng.normal(size=(8, 30))) for _ in range(16)]
    return [x, draws], [y], cases


def _scan_over_time():
    """A recursion over time (a `Scan`), each draw a column."""
    x = pt.matrix("x")
    y = pytensor.scan(
        lambda xt, previous: 0.9 * previous + pt.sin(xt),
        sequences=[x],
        outputs_info=[pt.zeros(x.shape[1])],
        return_updates=False,
    )
    rng = np.random.default_rng(2)
    cases = [(rng.normal(size=(300, 2_000)),) for _ in range(16)]
    return [x], [y], cases


@pytest.mark.parametrize(
    ("graph", "backend"),
    [
        (_sigmoid_regression, "numba"),
        (_sigmoid_regression, "python"),
        (_batched_einsum, "python"),
        (_scan_over_time, "python"),
    ],
)
def test_a_compiled_function_runs_in_several_threads_at_once_with_the_serial_values(
    graph, backend, monkeypatch
):
    """Calls from several threads at once each run on a copy of the compiled function
    (its storage is its own), or one after another where copies would share an op's
    inner function (NumPy's linker runs a Scan's, or an einsum's vectorized over
    draws, from the op), or, compiled by Numba, on its one jitted function, never on
    a copy (which would link the graph again, and compile it again where Numba's key
    of it changed): each gets the values a serial call gives."""
    arguments, outputs, cases = graph()
    function = GraphFunction(arguments, outputs, backend)
    shares = backend == "python" and graph in (_batched_einsum, _scan_over_time)
    assert function._one_at_a_time == shares
    if backend == "numba":

        def no_copy(*args, **kwargs):
            raise AssertionError("a Numba-compiled graph was copied")

        monkeypatch.setattr(type(function._compile()), "copy", no_copy)
    serial = [function(*case) for case in cases]
    barrier = threading.Barrier(4)
    got = [None] * len(cases)

    def work(offset):
        barrier.wait()
        for k in range(offset, len(cases), 4):
            got[k] = function(*cases[k])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for one, other in zip(serial, got, strict=True):
        for a, b_ in zip(one, other, strict=True):
            np.testing.assert_array_equal(a, b_)


def test_a_numba_compiled_graph_releases_the_gil_while_it_runs():
    """While one thread runs a long Numba-compiled graph, this thread keeps running
    Python: the graph does not hold the GIL (PyTensor's own Numba linker does)."""
    x = pt.vector("x")
    y = x
    for _ in range(20):
        y = pt.sin(y) + pt.cos(y)
    function = GraphFunction([x], [y.sum()], "numba")
    values = np.linspace(0, 1, 2_000_000)
    function(values[:10])  # compiled
    began = time.perf_counter()
    function(values)
    alone = time.perf_counter() - began
    ticks = 0
    thread = threading.Thread(target=function, args=(values,))
    thread.start()
    while thread.is_alive():
        ticks += 1
    thread.join()
    # holding the GIL, the graph would let this loop run once per 5 ms switch
    # interval at most; released, the loop runs millions of times
    assert ticks > 100 * alone / 5e-3


def test_small_calls_of_a_numba_graph_run_in_numpy_and_large_ones_compiled():
    """With ``small=``, a call whose arguments have at most that many elements runs
    the graph op by op in NumPy and never compiles it with Numba; the first larger
    call compiles it. Both give the graph's values (here against NumPy's own)."""
    x = pt.vector("x")
    y = pt.log1p(pt.exp(-(x**2))) * pt.sin(x)
    function = GraphFunction([x], [y], "numba", lazy=True, small=10)
    for size, compiled in [(10, False), (11, True), (5, True)]:
        values = np.linspace(-3, 3, size)
        (got,) = function(values)
        np.testing.assert_allclose(got, np.log1p(np.exp(-(values**2))) * np.sin(values), 1e-14)
        assert (function._function is not None) is compiled


@pytest.mark.parametrize("where", ["compiled loop", "numpy"])
def test_count_entropies_run_on_the_cores_asked_for(counts, monkeypatch, where):
    """A count family's entropy sums run on ``cores`` threads at most: the compiled
    loop's parallel rows on that many of Numba's threads, NumPy's rows on a second
    thread only with two cores or more; the values the same."""
    import numba

    from pm_sens.measures import _halves, _recurrence, entropy

    model, idata = counts
    calls, kernel, walk = [], _recurrence.recursion_kernel, entropy.walk_sums
    if where == "compiled loop":
        monkeypatch.setattr(entropy, "NUMPY_SECONDS", 0.0)
        monkeypatch.setattr(_recurrence, "loop_is_ready", lambda: True)
        monkeypatch.setattr(
            _recurrence,
            "recursion_kernel",
            lambda *args: calls.append(numba.get_num_threads()) or kernel(*args),
        )
    else:
        monkeypatch.setattr(entropy, "NUMPY_SECONDS", 1e9)
        monkeypatch.setattr(_halves, "TWO_THREADS_VALUES", 1)
        monkeypatch.setattr(_halves, "TWO_THREADS_CHUNK", 1)
        monkeypatch.setattr(
            entropy,
            "walk_sums",
            lambda *args: calls.append(threading.current_thread().name) or walk(*args),
        )
    values = {}
    for cores in (1, 2):
        calls.clear()
        values[cores] = pm_sens.partial_dependence(
            idata,
            model,
            grid_resolution=3,
            kind="entropy",
            cores=cores,
            progressbar=False,
            extend_inferencedata=False,
        )["partial_dependence"]["entropy_ice"].values
        assert calls
        if where == "compiled loop":
            assert set(calls) == {min(cores, numba.config.NUMBA_NUM_THREADS)}
        else:
            assert any(name.startswith("pm_sens rows") for name in calls) == (cores == 2)
    np.testing.assert_array_equal(values[1], values[2])

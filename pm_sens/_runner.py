"""Running compiled predictives over chunks of draws, shared by the public functions.

A `Context` holds what every measure needs once validated: the predictive, the
inputs to differentiate, the points and the posterior draws. `moment_pass`
and `draw_pass` evaluate one compiled graph over all draws, chunk by chunk.
"""

import contextlib
import functools
import threading
import weakref
from collections import deque
from dataclasses import dataclass, field

import numpy as np
from threadpoolctl import ThreadpoolController

from pm_sens._checks import check_locality, check_outputs
from pm_sens._distributed import RemoteChunks, active_client
from pm_sens._inputs import resolve_inputs
from pm_sens._levels import check_levels, one_hot_levels, resolve_levels
from pm_sens._points import PointSet, resolve_points
from pm_sens._posterior import Draws, posterior_draws
from pm_sens._progress import progress_bar
from pm_sens._results import per_draw_shape
from pm_sens._validate import (
    check_bool,
    check_optional_positive_int,
    check_positive,
    check_seed,
)
from pm_sens.graph.bambi_model import is_bambi_model, rebuild
from pm_sens.graph.compiled import data_for_chunk
from pm_sens.graph.engine import compile_predictive, required_free_rvs
from pm_sens.graph.predictive import Predictive
from pm_sens.graph.rewrites import excluded as excluded_rewrites
from pm_sens.measures.mixture import MixtureMoments

_PREDICTIVES = weakref.WeakKeyDictionary()
_COMPILING = threading.RLock()  # dask threads may ask for the same graph at once

#: Working memory per chunk of draws, in bytes, unless ``memory_limit`` says otherwise.
DEFAULT_MEMORY_LIMIT = 1e9


_BAMBI_MODELS = weakref.WeakKeyDictionary()


def pymc_model_for(model):
    """The PyMC model to analyse: ``model`` itself, or a bambi model rebuilt on
    ``pm.Data`` inputs (`pm_sens.graph.bambi_model`), once per bambi model."""
    if not is_bambi_model(model):
        return model, None
    if model not in _BAMBI_MODELS:
        _BAMBI_MODELS[model] = rebuild(model)
    rebuilt = _BAMBI_MODELS[model]
    return rebuilt.model, rebuilt


def predictive_for(model, var_name):
    """`Predictive.from_observed`, reused across calls so compiled graphs are too."""
    per_model = _PREDICTIVES.setdefault(model, {})
    if var_name not in per_model:
        per_model[var_name] = Predictive.from_observed(model, var_name)
    return per_model[var_name]


@dataclass
class Context:
    """A validated request: predictive, inputs, points and draws."""

    model: object
    predictive: Predictive
    inputs: list
    points: PointSet
    draws: Draws
    memory_limit: float
    progressbar: bool
    locality_checked: bool = False
    #: categorical inputs, compared level by level (`pm_sens._levels.Levels`)
    levels: list = field(default_factory=list)


def make_context(
    idata,
    model,
    *,
    var_name,
    inputs,
    points,
    predictive,
    num_draws,
    random_seed,
    memory_limit,
    progressbar,
    extend_inferencedata,
    differentiable=True,
    lazy_points=True,
    levels=False,
    categorical=None,
):
    """Check the request (no compiling) and gather what the measures need.

    Validates the arguments every public function shares (``progressbar``,
    ``extend_inferencedata``, ``num_draws``, ``memory_limit``, the predictive,
    inputs, points and posterior draws). Dask-backed points stay lazy if
    ``lazy_points``, else they are read into memory. With ``levels``, integer
    per-point inputs are categorical inputs (``ctx.levels``), and so is each
    group of feature columns in ``categorical``.
    """
    progressbar = check_bool("progressbar", progressbar)
    check_bool("extend_inferencedata", extend_inferencedata)
    model, bambi = pymc_model_for(model)
    if bambi is not None:
        points = bambi.points(points)
    num_draws = check_optional_positive_int("num_draws", num_draws)
    random_seed = check_seed("random_seed", random_seed)
    memory_limit = check_positive("memory_limit", memory_limit)
    if predictive is None:
        predictive = predictive_for(model, var_name)
    elif not isinstance(predictive, Predictive):
        raise TypeError(
            f"predictive={type(predictive).__name__} is not valid; "
            "give a pm_sens.Predictive or None"
        )
    else:
        foreign = [
            v.name
            for v in predictive.inputs
            if hasattr(v, "get_value") and v not in set(model.data_vars)
        ]
        if foreign:
            raise ValueError(
                f"predictive= reads the data container(s) {foreign}, which are not in this "
                "model; build the Predictive from this model's variables (its containers: "
                f"{sorted(v.name for v in model.data_vars)})"
            )
    diff_inputs, level_inputs, variables, n_default = resolve_inputs(
        predictive, model, inputs, differentiable, levels
    )
    pts = resolve_points(model, predictive, diff_inputs, variables, n_default, points)
    if pts.lazy and not lazy_points:
        pts = pts.computed()
    check_levels(predictive, pts)
    level_info = resolve_levels(predictive, level_inputs, pts)
    level_info += one_hot_levels(pts, predictive, diff_inputs, categorical)
    draws = posterior_draws(
        idata,
        model,
        required_free_rvs(predictive, model),
        num_draws,
        random_seed,
        names=bambi.posterior_names if bambi is not None else None,
    )
    return Context(
        model, predictive, diff_inputs, pts, draws, memory_limit, progressbar, levels=level_info
    )


#: moment-mode derivatives of up to this many values (draws × rows ×
#: features^order) run op by op in NumPy rather than compiled: the compile would
#: take longer than the run (`pm_sens.graph.rewrites.BACKENDS`)
INTERPRETED_WORK = 2e7
#: values (draws × rows × features^order) per chunk of a graph run in NumPy or of
#: a per-draw graph, so that its temporaries stay in the CPU's cache and below
#: the allocator's 32 MB threshold, above which every chunk's arrays are fresh
#: pages (chunks as large as memory allows made a default partial dependence
#: 30 % slower, and draw-mode R-sens 2x slower)
CACHED_CELLS = 1_500_000
#: the same for a graph of the parameters alone (order 0), whose consumers hold
#: several arrays of the chunk's size at once (statistics, deviations from the
#: chunk's mean): the quickstart's default partial dependence took 0.82 s in
#: chunks of this size against 0.98 s in chunks of `CACHED_CELLS`, where
#: derivatives (draw-mode R-sens, integrated gradients) ran 4-8 % slower in
#: these smaller chunks
FORWARD_CACHED_CELLS = 750_000


def backend_for(ctx, mode, order, rows=None, whitened=False):
    """How to run a graph: ``"python"`` (op by op in NumPy) or ``"numba"`` (compiled).

    Per-draw graphs (draw mode) and forward graphs run in NumPy: their cost is
    in large array operations that NumPy runs about as fast as the compiled
    graph, with no compile. Moment-mode derivatives are averaged over draws
    inside the graph, and draw-mode R-sens (``whitened``) turns the derivatives
    into one value per draw, point and feature there, which the compiled graph
    does several times faster (one loop instead of an array per operation):
    compiled unless the request is small. ``rows``: the number of rows the call
    evaluates (stacked copies of the points), if not the points.
    """
    if (mode == "draw" and not whitened) or order == 0:
        return "python"
    rows = max(ctx.points.n_points if rows is None else rows, 1)
    work = ctx.draws.count * rows * max(len(ctx.points.features), 1) ** order
    return "python" if work <= INTERPRETED_WORK else "numba"


def compiled_for(
    ctx,
    mode,
    order,
    second_moment=None,
    statistic=None,
    rows=None,
    whitened=False,
    statistics=(),
    parameters=True,
):
    """The compiled chunk function for these settings, built once per predictive.

    ``rows``: as in `backend_for`; ``whitened``, ``statistics``, ``parameters``:
    as in `compile_predictive`.
    The first call checks locality (`check_locality`) on the forward graph,
    which every measure relies on (derivatives, and stacked copies of the points).
    """
    if not ctx.locality_checked:
        _check_locality_first(ctx)
    values = ctx.points.values
    backend = backend_for(ctx, mode, order, rows, whitened)
    key = (
        mode,
        order,
        second_moment,
        statistic,
        tuple(statistics),
        parameters,
        backend,
        whitened,
        tuple(v.name for v in ctx.inputs),
        tuple((v.name, np.shape(values[v])[1:]) for v in values),
        tuple(np.shape(v)[1:] for v in ctx.draws.values),
        excluded_rewrites(),
    )
    cache = ctx.predictive.compiled
    with _COMPILING:
        if key not in cache:
            # a whitened graph shares its forward evaluation with the other measures
            forward = compiled_for(ctx, "draw", 0) if whitened else None
            cache[key] = compile_predictive(
                ctx.predictive,
                ctx.model,
                ctx.inputs,
                values,
                ctx.draws.chunk(0, 1),  # fixes the per-draw shapes
                mode=mode,
                order=order,
                second_moment=second_moment,
                statistic=statistic,
                statistics=statistics,
                parameters=parameters,
                backend=backend,
                whitened=whitened,
                forward=forward,
            )
    return cache[key]


def _check_locality_first(ctx):
    """`check_locality` on the forward graph (parameters alone, cheap to build), before
    a graph with derivatives is compiled: a model that is not local fails at once."""
    ctx.locality_checked = True  # the forward graph is not checked twice
    try:
        check_locality(compiled_for(ctx, "draw", 0), ctx.points, ctx.draws)
    except Exception:
        ctx.locality_checked = False
        raise


def _chunk_size(ctx, n_rows, n_components, mode, order):
    """Draws per chunk so that parameters, derivatives and temporaries fit the limit."""
    n_features = len(ctx.points.features)
    per_parameter = 4 + (n_features if order else 0)  # temporaries, and gradients
    per_row = (n_components + 1) * per_parameter * (1 + max(order - 1, 0) * n_features)
    per_draw = 8 * n_rows * per_row * (4 if mode == "draw" else 2)
    return int(max(1, min(ctx.draws.count, ctx.memory_limit // per_draw)))


@functools.cache
def _blas_controller():
    """The process's BLAS thread pools (found once: finding them reads the loaded libraries)."""
    return ThreadpoolController()


@contextlib.contextmanager
def _serial_blas():
    """BLAS on one thread, for draw-mode chunks' small products (over the features).

    BLAS threads waiting for work took a core from the loops that run between
    the products: on 2 cores, draw-mode R-sens of the heteroscedastic Normal
    took 0.35 s against 0.24 s, a default PDP 2.17 against 1.91 s. Moment-mode
    graphs keep BLAS's threads (3-15 % faster with them).
    """
    with _blas_controller().limit(limits=1, user_api="blas"):
        yield


def _chunks(ctx, compiled, values, n_components, description, steps=1, min_draws=1, out=None):
    """Yield (start, size, outputs) over chunks of draws, in order, with a progress bar.

    A graph run in NumPy, or a per-draw graph, gets chunks of about
    `CACHED_CELLS` values (`FORWARD_CACHED_CELLS` for order 0), or
    ``min_draws`` if the consumer needs more (within the memory limit).
    ``out`` (S, ...): passed on to ``compiled`` sliced to the chunk's draws,
    for a function that computes its result in it
    (`pm_sens.graph.compiled.WhitenedNorm`).
    In process by default; on the workers of an active dask.distributed client
    when the posterior is dask-backed (chunks are submitted ahead, read in order).
    """
    n_rows = len(next(iter(v for v in values.values() if np.ndim(v))))
    chunk = _chunk_size(ctx, n_rows, n_components, compiled.mode, compiled.order)
    if compiled.settings["backend"] == "python" or compiled.mode == "draw":
        cells = n_rows * len(ctx.points.features) ** compiled.order
        cached = CACHED_CELLS if compiled.order else FORWARD_CACHED_CELLS
        chunk = min(chunk, max(cached // cells, min_draws, 1))
    chunk = min(chunk, -(-ctx.draws.count // steps))
    starts = range(0, ctx.draws.count, chunk)
    client = active_client() if ctx.draws.lazy else None
    with progress_bar(description, ctx.draws.count, ctx.progressbar) as advance:
        if client is None:
            serial = compiled.mode == "draw"
            with _serial_blas() if serial else contextlib.nullcontext():
                for start in starts:
                    # only this chunk of a lazily loaded posterior is read into memory
                    draws = ctx.draws.chunk(start, start + chunk)
                    size = len(draws[0])
                    given = {} if out is None else {"out": out[start : start + size]}
                    outputs = compiled(data_for_chunk(compiled, values), draws, **given)
                    check_outputs(ctx, compiled, slice(start, start + size), outputs)
                    yield start, size, outputs
                    advance(size)
            return
        sample = (
            [ctx.points.values[v] for v in compiled.data_variables],
            ctx.draws.chunk(0, 1),
        )
        remote = RemoteChunks(client, ctx, compiled, sample)
        window = 2 * max(1, len(client.scheduler_info().get("workers", {})))
        pending = deque()
        for start in [*starts, None]:
            if start is not None:
                draws = ctx.draws.chunk(start, start + chunk)
                size = len(draws[0])
                data = data_for_chunk(compiled, values)
                pending.append((start, size, remote.submit(data, draws)))
            # keep a bounded number of chunks in flight; hand results back in order
            while pending and (start is None or len(pending) >= window):
                done_start, done_size, future = pending.popleft()
                out = future.result()
                check_outputs(ctx, compiled, slice(done_start, done_start + done_size), out)
                yield done_start, done_size, out
                advance(done_size)


def moment_pass(ctx, compiled, values, second_moment, description):
    """Mixture moments (and derivatives) over all draws, merged chunk by chunk."""
    moments = MixtureMoments(second_moment)
    fixed = {}
    for _, size, out in _chunks(ctx, compiled, values, 2, description):
        moments.add(size, out.phi, out.jac, out.hess)
        fixed = {k: v[0] if np.ndim(v) > 1 else v for k, v in out.fixed.items()}
    return moments, fixed


def draw_pass(ctx, compiled, values, description, consume, steps=1, min_draws=1, out=None):
    """Call ``consume(draw_slice, outputs)`` for each chunk of draws (draw mode).

    ``steps``: at least this many chunks, so that the progress bar moves when
    ``consume`` is the long part; ``min_draws``: draws per chunk ``consume``
    works best with; ``out``: see `_chunks`.
    """
    chunks = _chunks(ctx, compiled, values, 2, description, steps, min_draws, out)
    for start, size, chunk in chunks:
        consume(slice(start, start + size), chunk)


def collect_draws(ctx, compiled, values, description, per_chunk, shapes):
    """Per-draw arrays filled chunk by chunk: ``per_chunk(chunk, size)`` → ``{name: (size, …)}``.

    ``shapes``: each name's shape after the draw axis. Returns
    ``{name: (chain, draw, …)}``.
    """
    out = {name: np.empty((ctx.draws.count, *shape)) for name, shape in shapes.items()}

    def store(draws, chunk):
        for name, value in per_chunk(chunk, draws.stop - draws.start).items():
            out[name][draws] = value

    draw_pass(ctx, compiled, values, description, store)
    return {name: per_draw_shape(ctx, array) for name, array in out.items()}

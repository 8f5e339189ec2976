"""Passes of one compiled predictive over all posterior draws, chunk by chunk.

`moment_pass` merges the mixture's moments across chunks, `draw_pass` and
`collect_draws` hand each chunk's per-draw outputs to the measure. Chunks are
sized to the memory limit and the CPU's cache, run in process or on a
dask.distributed cluster, and screened for nan and inf (`check_outputs`).
"""

import contextlib
import functools
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from threadpoolctl import ThreadpoolController

from pm_sens._core.results import per_draw_shape
from pm_sens._run.cluster import RemoteChunks, active_client
from pm_sens._run.compiling import dependence_of
from pm_sens._run.output_checks import check_outputs
from pm_sens._run.progress import progress_bar
from pm_sens.graph.compile.compiled import data_for_chunk, evaluate_by_rows
from pm_sens.measures.mixture import MixtureMoments

#: values (draws × rows × features^order, or × the graph's largest array for one
#: draw where it holds several values per row) per chunk of a graph run in NumPy
#: or of a per-draw graph, so that its temporaries stay in the CPU's cache and
#: below the allocator's 32 MB threshold, above which every chunk's arrays are
#: fresh pages (measurements: benchmarks/README.md, "Tuned constants")
CACHED_CELLS = 1_500_000
#: the largest array counts where it holds this many values per row or more: a
#: Bernoulli's p and 1 − p (2 per row) are cheap enough to leave out
SEVERAL_PER_ROW = 4
#: the same for a graph of the parameters alone (order 0), whose consumers hold
#: several arrays of the chunk's size at once (statistics, deviations from the
#: chunk's mean)
FORWARD_CACHED_CELLS = 750_000
#: draws per chunk of a forward graph whose rows for one draw already exceed
#: `FORWARD_CACHED_CELLS` (no chunk stays in the cache): its inputs are read once
#: for this many draws, not once per draw
DRAWS_PER_READ = 16
#: a chunk is evaluated while the one before is consumed where each part takes
#: at least this share of a chunk's time: below it, the consumer's many short
#: NumPy calls wait for the GIL longer than the overlap saves
OVERLAP_SHARE = 0.1
#: chunks timed before deciding (the first call's first chunks warm up)
_TIMED = 3
#: arrays of a forward graph's rows (one draw) its consumers hold at once: the
#: parameters, log densities, entropies, a recurrence's coefficients
FORWARD_ARRAYS = 6


def _bytes_per_draw(ctx, n_rows, mode, order, largest):
    """Working memory per draw for parameters, derivatives and temporaries.

    ``largest``: the elements of the graph's largest array for one draw, four
    of which may be alive at once (an operation's inputs and output); it may be
    far larger than the outputs, over an axis inside the graph (a GP's kernel
    row over its training inputs: before it was counted, a GP's Integrated
    Gradients ran in chunks with 2.6 GB temporaries against a 1 GB limit).
    """
    n_features = len(ctx.points.features)
    if order:
        per_parameter = 4 + n_features  # temporaries, and gradients
        per_row = 3 * per_parameter * (1 + (order - 1) * n_features)
        per_row *= 4 if mode == "draw" else 2  # a derivative's consumers hold more
    else:
        per_row = FORWARD_ARRAYS
    return 8 * max(n_rows * per_row, 4 * largest)


def _chunking(ctx, compiled, values, steps, min_draws, whole_rows, rows=None, in_flight=1):
    """Draws per chunk of ``compiled`` on ``values``, and how to split the rows.

    The second is `evaluate_by_rows`'s rows per block and flags where the rows
    are evaluated a block at a time (stacked copies of a series; rows of which
    one draw would exceed the memory limit), else None (see `_chunks`).
    ``whole_rows``: the outputs must cover every row in one evaluation.
    ``rows``: how many rows the outputs are spread over, if more than
    ``values``' (its distinct rows, evaluated once). ``in_flight``: chunks
    in memory at once, which share the memory limit.
    """
    budget = ctx.memory_limit / in_flight
    n_rows = rows or len(next(iter(v for v in values.values() if np.ndim(v))))
    # colored derivatives: a row per colour and point
    n_rows *= compiled.settings.get("colors", 1)

    def bytes_per_draw(data, rows):
        """The working memory per draw, and the graph's largest array for one draw."""
        largest = compiled.largest_array(data, ctx.draws.chunk(0, 1))
        return _bytes_per_draw(ctx, rows, compiled.mode, compiled.order, largest), largest

    per_draw, largest = bytes_per_draw(data_for_chunk(compiled, values), n_rows)
    chunk = int(max(1, min(ctx.draws.count, budget // per_draw)))
    if compiled.settings["backend"] == "python" or compiled.mode == "draw":
        cells = n_rows * len(ctx.points.features) ** compiled.order
        cached = CACHED_CELLS if compiled.order else FORWARD_CACHED_CELLS
        fewest = DRAWS_PER_READ if not compiled.order and cells > cached else 1
        if largest >= SEVERAL_PER_ROW * cells:  # K classes per row, a kernel row per point
            cells = largest
        chunk = min(chunk, max(cached // cells, min_draws, fewest))
    chunk = min(chunk, -(-ctx.draws.count // steps))
    flags = [var in ctx.points.per_point for var in compiled.data_variables]
    if not dependence_of(ctx).local:
        # a series is evaluated one stacked copy at a time
        return chunk, (ctx.points.n_points, flags)
    if per_draw <= budget or whole_rows:
        return chunk, None
    # fewer rows, if the memory is theirs (not a draw's covariance over the training inputs)
    block_rows = max(1, int(n_rows * budget // per_draw))
    block = [
        v[:block_rows] if flag else v
        for v, flag in zip(data_for_chunk(compiled, values), flags, strict=True)
    ]
    fits = bytes_per_draw(block, block_rows)[0] <= budget
    return chunk, ((block_rows, flags) if fits else None)


def _ahead(evaluate, starts):
    """Yield ``(start, evaluate(start))`` in order, the next one computed meanwhile.

    After the first `_TIMED` chunks, chunks are evaluated in a thread, the
    next one while the consumer works on this one: both are mostly NumPy and BLAS,
    which release the GIL, so on two cores they overlap. Only where, in the
    first `_TIMED` chunks (each part's shortest, without a first call's
    warm-up), evaluation and consumption both take `OVERLAP_SHARE` of a
    chunk's time or more: else one thread waits for the GIL between the
    other's short calls and gains nothing.
    """
    starts = list(starts)
    evaluated, consumed = [], []
    for start in starts[:_TIMED]:
        began = time.perf_counter()
        result = evaluate(start)
        evaluated.append(time.perf_counter() - began)
        began = time.perf_counter()
        yield start, result
        consumed.append(time.perf_counter() - began)
    rest = starts[_TIMED:]
    shortest = (min(evaluated, default=0.0), min(consumed, default=0.0))
    if not rest or min(shortest) < OVERLAP_SHARE * sum(shortest):
        yield from ((start, evaluate(start)) for start in rest)
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="pm_sens chunk") as pool:
        pending = pool.submit(evaluate, rest[0])
        for start, following in zip(rest, [*rest[1:], None], strict=True):
            result = pending.result()
            if following is not None:
                pending = pool.submit(evaluate, following)
            yield start, result


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


def _chunks(ctx, compiled, values, description, steps=1, min_draws=1, out=None, spread=None):
    """Yield (start, size, outputs) over chunks of draws, in order, with a progress bar.

    A graph run in NumPy, or a per-draw graph, gets chunks of about
    `CACHED_CELLS` values (`FORWARD_CACHED_CELLS` for order 0), or
    ``min_draws`` if the consumer needs more (within the memory limit).
    ``out`` (S, ...): passed on to ``compiled`` sliced to the chunk's draws,
    for a function that computes its result in it
    (`pm_sens.graph.compile.compiled.WhitenedNorm`). ``spread`` (R,): where each row
    of the consumer is among ``values``' rows, if those are its distinct rows:
    the outputs are spread over the R rows before they are screened.
    In process by default; on the workers of an active dask.distributed client
    when the posterior is dask-backed (chunks are submitted ahead, read in order).
    """
    whole_rows = out is not None or compiled.settings.get("whitened", False)
    rows = None if spread is None else len(spread)
    client = active_client() if ctx.draws.lazy else None
    # in process: a chunk is consumed while the next is evaluated (`_ahead`)
    in_flight = 2 if client is None else 1
    chunk, blocks = _chunking(ctx, compiled, values, steps, min_draws, whole_rows, rows, in_flight)

    def checked(start, size, outputs):
        if spread is not None:
            outputs.spread(spread)
        check_outputs(ctx, compiled, slice(start, start + size), outputs)
        return outputs

    starts = range(0, ctx.draws.count, chunk)
    with progress_bar(description, ctx.draws.count, ctx.progressbar) as advance:
        if client is None:

            def evaluate(start):
                # only this chunk of a lazily loaded posterior is read into memory
                draws = ctx.draws.chunk(start, start + chunk)
                size = len(draws[0])
                given = {} if out is None else {"out": out[start : start + size]}
                data = data_for_chunk(compiled, values)
                if blocks is None:
                    return size, compiled(data, draws, **given)
                return size, evaluate_by_rows(compiled, data, draws, *blocks)

            serial = compiled.mode == "draw"
            with _serial_blas() if serial else contextlib.nullcontext():
                for start, (size, outputs) in _ahead(evaluate, starts):
                    yield start, size, checked(start, size, outputs)
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
                pending.append((start, size, remote.submit(data, draws, blocks)))
            # keep a bounded number of chunks in flight; hand results back in order
            while pending and (start is None or len(pending) >= window):
                done_start, done_size, future = pending.popleft()
                yield done_start, done_size, checked(done_start, done_size, future.result())
                advance(done_size)


def moment_pass(ctx, compiled, values, second_moment, description):
    """Mixture moments (and derivatives) over all draws, merged chunk by chunk."""
    moments = MixtureMoments(second_moment)
    fixed = {}
    for _, size, out in _chunks(ctx, compiled, values, description):
        moments.add(size, out.phi, out.jac, out.hess)
        fixed = {k: v[0] if np.ndim(v) > 1 else v for k, v in out.fixed.items()}
    return moments, fixed


def draw_pass(
    ctx, compiled, values, description, consume, steps=1, min_draws=1, out=None, spread=None
):
    """Call ``consume(draw_slice, outputs)`` for each chunk of draws (draw mode).

    ``steps``: at least this many chunks, so that the progress bar moves when
    ``consume`` is the long part; ``min_draws``: draws per chunk ``consume``
    works best with; ``out``, ``spread``: see `_chunks`.
    """
    chunks = _chunks(ctx, compiled, values, description, steps, min_draws, out, spread)
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

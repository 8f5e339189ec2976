"""Passes of one compiled predictive over all posterior draws, chunk by chunk.

`moment_pass` merges the mixture's moments across chunks, `draw_pass` and
`collect_draws` hand each chunk's per-draw outputs to the measure. Chunks are
sized to the memory limit and the CPU's cache, run in process or on a
dask.distributed cluster, and screened for nan and inf (`check_outputs`).
"""

import contextlib
import functools
import time
import warnings
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from threadpoolctl import ThreadpoolController

from pm_sens._core.results import per_draw_shape
from pm_sens._run.cluster import RemoteChunks, active_client
from pm_sens._run.compiling import dependence_of
from pm_sens._run.output_checks import check_outputs
from pm_sens._run.progress import progress_bar
from pm_sens.graph.compile.compiled import OBSERVED_Y, data_for_chunk, evaluate_by_rows
from pm_sens.graph.compile.jax_functions import DeviceMemoryError
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
#: chunks in memory at once, in process, for which the memory limit sizes the
#: chunks: three evaluated while one is consumed, where the chunks are as large
#: as the limit allows (most are smaller: `CACHED_CELLS`); a larger limit lets
#: more cores work on such chunks at once
CHUNKS_IN_MEMORY = 4
#: a draw-mode pass has at least this many chunks where its draws allow
#: (`SHARED_DRAWS` each at least), whatever the cores, for the cores to share:
#: a small table's draws fit one chunk of `CACHED_CELLS`, yet a family whose
#: information is a sum over the support or a rule per law (the negative
#: binomial's α, a mixture) spends milliseconds per row and draw there
DRAW_CHUNKS = 64
#: the fewest draws of a chunk split off for the cores to share
SHARED_DRAWS = 64
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
    """Draws per chunk of ``compiled`` on ``values``, how to split the rows, bytes per chunk.

    The second is `evaluate_by_rows`'s rows per block and flags where the rows
    are evaluated a block at a time (stacked copies of a series; rows of which
    one draw would exceed the memory limit), else None (see `_chunks`); the
    third the working memory one chunk takes.
    ``whole_rows``: the outputs must cover every row in one evaluation.
    ``rows``: how many rows the outputs are spread over, if more than
    ``values``' (its distinct rows, evaluated once). ``in_flight``: chunks
    in memory at once, which share the memory limit.
    """
    budget = ctx.memory_limit / in_flight
    n_rows = rows or len(next(iter(v for v in values.values() if np.ndim(v))))
    # colored derivatives: a row per colour and point
    n_rows *= compiled.settings.get("colors", 1)

    # a graph that averages its derivatives over the points inside holds arrays
    # of the rows, as a forward graph does (and its largest array, counted)
    order = 0 if getattr(compiled, "rows_alone", False) else compiled.order

    def bytes_per_draw(data, rows):
        """The working memory per draw, and the graph's largest array for one draw."""
        largest = compiled.largest_array(data, ctx.draws.chunk(0, 1))
        return _bytes_per_draw(ctx, rows, compiled.mode, order, largest), largest

    per_draw, largest = bytes_per_draw(data_for_chunk(compiled, values), n_rows)
    chunk = int(max(1, min(ctx.draws.count, budget // per_draw)))
    # chunks about the CPU's cache in size, where NumPy runs op by op (or per-draw
    # arrays pass from op to op); JAX's compiled graph takes as many draws as fit
    backend = compiled.settings["backend"]
    if backend != "jax" and (backend == "python" or compiled.mode == "draw"):
        cells = n_rows * len(ctx.points.features) ** order
        cached = CACHED_CELLS if order else FORWARD_CACHED_CELLS
        # a forward graph reads its inputs once for several draws; a norm's graph
        # computes more per value read, its values per draw best kept in cache
        fewest = DRAWS_PER_READ if not compiled.order and cells > cached else 1
        if largest >= SEVERAL_PER_ROW * cells:  # K classes per row, a kernel row per point
            cells = largest
        chunk = min(chunk, max(cached // cells, min_draws, fewest))
        if compiled.mode == "draw":
            shared = max(SHARED_DRAWS, -(-ctx.draws.count // DRAW_CHUNKS), min_draws)
            chunk = min(chunk, shared)
    chunk = min(chunk, -(-ctx.draws.count // steps))
    if backend == "jax":
        chunk = equal_chunks(ctx.draws.count, chunk)
    chunk_bytes = min(chunk * per_draw, budget)  # more rows than fit: blocks of them
    # a row per row: the points' per-point data, and the observed y a graph may take
    flags = [var is OBSERVED_Y or var in ctx.points.per_point for var in compiled.data_variables]
    if not dependence_of(ctx).local:
        # a series is evaluated one stacked copy at a time
        return chunk, (ctx.points.n_points, flags), chunk_bytes
    if whole_rows:
        return chunk, None, chunk_bytes

    def blocks_of_rows(draws):
        """Rows per block for chunks of ``draws`` draws under the budget, None if none fit.

        Whole copies of the points where the graph averages over each copy.
        """
        copy = compiled.settings.get("points_per_copy") or 1
        block_rows = max(1, int(n_rows * budget // (per_draw * draws)) // copy)
        if backend == "jax":
            block_rows = equal_chunks(n_rows // copy, block_rows)
        block_rows *= copy
        block = [
            v[:block_rows] if flag else v
            for v, flag in zip(data_for_chunk(compiled, values), flags, strict=True)
        ]
        return block_rows if bytes_per_draw(block, block_rows)[0] * draws <= budget else None

    # a graph whose outputs are sums over the chunk's draws brings back arrays of
    # the rows' size per chunk: every draw in one chunk, the rows in blocks
    settings = compiled.settings
    per_draw_outputs = settings.get("statistics") or settings.get("parameters", True)
    if backend == "jax" and settings.get("draw_sums") and not per_draw_outputs:
        every_draw = equal_chunks(ctx.draws.count, -(-ctx.draws.count // steps))
        block_rows = blocks_of_rows(every_draw)
        if block_rows is not None:
            return every_draw, (block_rows, flags), min(every_draw * per_draw, budget)
    if per_draw <= budget:
        return chunk, None, chunk_bytes
    # fewer rows, if the memory is theirs (not a draw's covariance over the training
    # inputs)
    block_rows = blocks_of_rows(1)
    return chunk, (None if block_rows is None else (block_rows, flags)), chunk_bytes


def equal_chunks(count, chunk):
    """Draws (or rows) per chunk, at most ``chunk``, that split ``count`` into equal chunks.

    JAX compiles a graph once per shape of its arguments (a second of
    PyTensor's rewrites and XLA's compile for a moment-mode graph with
    interactions): chunks of one size compile once, where a last chunk of
    fewer draws compiles again. The largest divisor of ``count`` from half
    of ``chunk`` up (posteriors of 1000 or 4000 draws have many); ``chunk``
    where there is none.
    """
    for size in range(chunk, chunk // 2, -1):
        if count % size == 0:
            return size
    return chunk


def _ahead(evaluate, starts, cores=2, fits=None, done=None):
    """Yield ``(start, evaluate(start))`` in order, later chunks computed meanwhile.

    The first `_TIMED` chunks are evaluated here, timed with their consumer
    (each part's shortest, without a first call's warm-up). The rest are
    evaluated in threads, ahead of the consumer, where evaluating takes
    `OVERLAP_SHARE` of a chunk's time or more and ``cores`` > 1: NumPy, BLAS
    and pm_sens's compiled graphs (`pm_sens.graph.compile.linkers`) release the
    GIL, so the threads run at once. ``cores`` threads evaluate where the
    consumer takes less than that share, ``cores − 1`` beside it where it takes
    more (its many short NumPy calls need a core of their own), at most ``fits``
    (the chunks the memory holds beside the one consumed). The chunks and the
    order they are consumed in are the same for any ``cores``. ``done``:
    ``{start: (result, seconds)}`` of chunks already evaluated.
    """
    starts = list(starts)
    done = done or {}
    evaluated, consumed = [], []
    for start in starts[:_TIMED]:
        began = time.perf_counter()
        result, seconds = done.pop(start) if start in done else (evaluate(start), None)
        evaluated.append(seconds or time.perf_counter() - began)
        began = time.perf_counter()
        yield start, result
        consumed.append(time.perf_counter() - began)
    rest = starts[_TIMED:]
    evaluating, consuming = min(evaluated, default=0.0), min(consumed, default=0.0)
    threshold = OVERLAP_SHARE * (evaluating + consuming)
    threads = min(cores - 1 if consuming >= threshold else cores, fits or cores)
    if not rest or evaluating < threshold or threads < 1 or cores < 2:
        yield from ((start, evaluate(start)) for start in rest)
        return
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="pm_sens chunk")
    try:
        with _blas_threads(1):  # the cores are the chunks' threads'
            pending = deque((start, pool.submit(evaluate, start)) for start in rest[:threads])
            following = iter(rest[threads:])
            while pending:
                start, future = pending.popleft()
                result = future.result()
                upcoming = next(following, None)
                if upcoming is not None:
                    pending.append((upcoming, pool.submit(evaluate, upcoming)))
                yield start, result
    finally:
        # a failed chunk or a consumer that stops: the chunks not started are not
        pool.shutdown(wait=True, cancel_futures=True)


@functools.cache
def _blas_controller():
    """The process's BLAS thread pools (found once: finding them reads the loaded libraries)."""
    return ThreadpoolController()


@contextlib.contextmanager
def _blas_threads(threads):
    """BLAS on at most ``threads`` threads while chunks are evaluated and consumed.

    One thread for draw-mode chunks' small products (over the features): BLAS
    threads waiting for work took a core from the loops that run between the
    products (on 2 cores, draw-mode R-sens of the heteroscedastic Normal took
    0.35 s against 0.24 s, a default PDP 2.17 against 1.91 s). One thread, too,
    where several chunks are evaluated at once: the cores are theirs.
    Moment-mode graphs evaluated one at a time keep ``ctx.cores`` BLAS threads
    (3-15 % faster with them).
    """
    with _blas_controller().limit(limits=threads, user_api="blas"):
        yield


def _chunks(
    ctx, compiled, values, description, steps=1, min_draws=1, out=None, spread=None, prepare=None
):
    """Yield (start, size, outputs) over chunks of draws, in order, with a progress bar.

    A graph run in NumPy, or a per-draw graph, gets chunks of about
    `CACHED_CELLS` values (`FORWARD_CACHED_CELLS` for order 0), or
    ``min_draws`` if the consumer needs more (within the memory limit).
    ``out`` (S, ...): passed on to ``compiled`` sliced to the chunk's draws,
    for a function that computes its result in it
    (`pm_sens.graph.compile.compiled.WhitenedNorm`). ``spread`` (R,): where each row
    of the consumer is among ``values``' rows, if those are its distinct rows:
    the outputs are spread over the R rows before they are screened.
    ``prepare(draw_slice, outputs)``: run on each chunk's screened outputs where
    the chunk was evaluated (in a thread, beside others: `_ahead`); what it
    returns is yielded instead of the outputs.
    In process by default, up to ``ctx.cores`` chunks at once; on the workers of
    an active dask.distributed client when the posterior is dask-backed (chunks
    are submitted ahead, read in order).
    """
    whole_rows = out is not None or compiled.settings.get("whitened", False)
    rows = None if spread is None else len(spread)
    client = active_client() if ctx.draws.lazy else None
    # in process: chunks are evaluated while one is consumed (`_ahead`), as many as
    # fit the memory limit; the chunks' size must not depend on how many cores
    # evaluate them (nor must the results), so it is fixed: `CHUNKS_IN_MEMORY`
    in_flight = CHUNKS_IN_MEMORY if client is None else 1
    chunk, blocks, chunk_bytes = _chunking(
        ctx, compiled, values, steps, min_draws, whole_rows, rows, in_flight
    )

    def checked(start, size, outputs):
        if spread is not None:
            outputs.spread(spread)
        draws = slice(start, start + size)
        check_outputs(ctx, compiled, draws, outputs)
        return outputs if prepare is None else prepare(draws, outputs)

    with progress_bar(description, ctx.draws.count, ctx.progressbar) as advance:
        if client is None:

            def evaluate(start, draws_per_chunk=None):
                # only this chunk of a lazily loaded posterior is read into memory
                draws = ctx.draws.chunk(start, start + (draws_per_chunk or chunk))
                size = len(draws[0])
                given = {} if out is None else {"out": out[start : start + size]}
                data = data_for_chunk(compiled, values)
                if blocks is None:
                    outputs = compiled(data, draws, **given)
                else:
                    outputs = evaluate_by_rows(compiled, data, draws, *blocks)
                return size, checked(start, size, outputs)

            with _blas_threads(1 if compiled.mode == "draw" else ctx.cores):
                done = {}  # the first chunk, evaluated where the device may not hold it
                if compiled.settings["backend"] == "jax":
                    chunk, done[0] = _fitting_the_device(evaluate, chunk)
                starts = range(0, ctx.draws.count, chunk)
                # chunks evaluated at once: as many as the memory limit holds, beside one consumed
                fits = int(ctx.memory_limit // chunk_bytes) - 1
                for start, (size, outputs) in _ahead(evaluate, starts, ctx.cores, fits, done):
                    yield start, size, outputs
                    advance(size)
            return
        sample = (
            [ctx.points.values[v] for v in compiled.data_variables],
            ctx.draws.chunk(0, 1),
        )
        starts = range(0, ctx.draws.count, chunk)
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


def _fitting_the_device(evaluate, chunk):
    """Draws per chunk and the first chunk's (result, seconds), fewer where the device is full.

    On the JAX backend, where the device's memory cannot hold ``chunk`` draws.
    Chunks are sized to ``memory_limit``, which a device may not have free (a
    GPU's memory shared, or held by another array library): the first chunk is
    evaluated with half as many draws until it fits, said in a warning; the
    later chunks take as many. One draw that does not fit is our error.
    """
    tried = chunk
    while True:
        began = time.perf_counter()
        try:
            result = evaluate(0, chunk)
        except DeviceMemoryError:
            if chunk == 1:
                raise
            chunk = -(-chunk // 2)
            continue
        if chunk < tried:
            warnings.warn(
                f"{tried} draws at a time did not fit the device's memory: pm_sens "
                f"evaluates {chunk} at a time. A smaller memory_limit= chooses such "
                "chunks from the start",
                UserWarning,
                stacklevel=5,
            )
        return chunk, (result, time.perf_counter() - began)


def moment_pass(ctx, compiled, values, second_moment, description):
    """Mixture moments (and derivatives) over all draws, merged chunk by chunk."""
    moments = MixtureMoments(second_moment)
    fixed = {}
    for _, size, out in _chunks(ctx, compiled, values, description):
        moments.add(size, out.phi, out.jac, out.hess)
        fixed = {k: v[0] if np.ndim(v) > 1 else v for k, v in out.fixed.items()}
    return moments, fixed


def draw_pass(
    ctx,
    compiled,
    values,
    description,
    consume=None,
    *,
    prepare=None,
    steps=1,
    min_draws=1,
    out=None,
    spread=None,
):
    """Run each chunk of draws through ``prepare``, then ``consume``, in order (draw mode).

    ``prepare(draw_slice, outputs)`` runs where the chunk was evaluated, up to
    ``ctx.cores`` chunks at once: the work on one chunk alone (a measure written
    into the chunk's own draws, a chunk's sums). ``consume(draw_slice,
    prepared)`` then runs here, one chunk after another in the order of the
    draws: what merges chunks (sums over draws, in the same order for any
    number of cores). Either may be None. ``steps``: at least this many chunks,
    so that the progress bar moves when the work on a chunk is the long part;
    ``min_draws``: draws per chunk the work is best with; ``out``,
    ``spread``: see `_chunks`.
    """
    chunks = _chunks(ctx, compiled, values, description, steps, min_draws, out, spread, prepare)
    for start, size, prepared in chunks:
        if consume is not None:
            consume(slice(start, start + size), prepared)


def collect_draws(ctx, compiled, values, description, per_chunk, shapes):
    """Per-draw arrays filled chunk by chunk: ``per_chunk(chunk, size)`` → ``{name: (size, …)}``.

    ``shapes``: each name's shape after the draw axis; each chunk is stored
    where it was evaluated (`draw_pass`'s ``prepare``). Returns
    ``{name: (chain, draw, …)}``.
    """
    out = {name: np.empty((ctx.draws.count, *shape)) for name, shape in shapes.items()}

    def store(draws, chunk):
        for name, value in per_chunk(chunk, draws.stop - draws.start).items():
            out[name][draws] = value

    draw_pass(ctx, compiled, values, description, prepare=store)
    return {name: per_draw_shape(ctx, array) for name, array in out.items()}

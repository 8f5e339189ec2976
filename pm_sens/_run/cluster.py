"""Evaluating chunks of draws on a dask.distributed cluster.

Used when the posterior is dask-backed and a distributed ``Client`` is active.
Compiled PyTensor functions are not shipped: the model, the predictive and the
compile settings are pickled together once (so the graph keeps its identity
with the model), broadcast to the workers, and each worker compiles the
function once and keeps it for every chunk it evaluates.
"""

import hashlib

import cloudpickle

from pm_sens._core.arguments import native_array
from pm_sens.graph.compile.compiled import evaluate_by_rows
from pm_sens.graph.engine import compile_predictive
from pm_sens.graph.predictive import data_variables_of

_WORKER_CACHE = {}  # key -> object built once per process (on each worker)
_WORKER_CACHE_SIZE = 16


def worker_cached(key, build):
    """``build()``, built once per process for ``key``; the last few are kept."""
    if key not in _WORKER_CACHE:
        while len(_WORKER_CACHE) >= _WORKER_CACHE_SIZE:
            _WORKER_CACHE.pop(next(iter(_WORKER_CACHE)))
        _WORKER_CACHE[key] = build()
    return _WORKER_CACHE[key]


def active_client():
    """The current dask.distributed Client, or None (also without the package)."""
    try:
        from distributed import get_client
    except ImportError:
        return None
    try:
        return get_client()
    except ValueError:
        return None


class RemoteChunks:
    """Submit the chunks of one compiled function to a cluster, in order."""

    def __init__(self, client, ctx, compiled, sample):
        job = cloudpickle.dumps((ctx.model, ctx.predictive, ctx.inputs, compiled.settings, sample))
        self.client = client
        self.digest = hashlib.sha1(job).hexdigest()
        [self.job] = client.scatter([job], broadcast=True)

    def submit(self, data, draws, row_blocks=None):
        """A future for the outputs of the compiled function on one chunk.

        ``row_blocks``: `pm_sens.graph.compile.compiled.evaluate_by_rows`'s rows per
        block and flags, to evaluate the rows a block at a time.
        """
        return self.client.submit(
            _evaluate, self.job, self.digest, data, draws, row_blocks, pure=False
        )


def _compile_job(job):
    model, predictive, inputs, settings, (data_values, draw_values) = cloudpickle.loads(job)
    values = dict(zip(data_variables_of(predictive, model, inputs), data_values, strict=True))
    return compile_predictive(predictive, model, inputs, values, draw_values, **settings)


def _evaluate(job, digest, data, draws, row_blocks):
    function = worker_cached(digest, lambda: _compile_job(job))
    # arrays arriving from the network may be unaligned, which PyTensor refuses
    aligned = [native_array(a) for a in (*data, *draws)]
    data, draws = aligned[: len(data)], aligned[len(data) :]
    if row_blocks is None:
        return function(data, draws)
    return evaluate_by_rows(function, data, draws, *row_blocks)

"""Local results larger than memory: one measure, block by block, through dask.

When the points, or in draw mode the posterior, are dask-backed, the local
values a measure returns (one per point, and per draw in draw mode) are built
as dask arrays: one task per block of points (and of draws) runs the same
in-process measure on its block. Blocks follow the dask chunks of the points
and of the posterior's ``draw`` axis. Reductions over points (global means,
AED) are then dask reductions of these arrays, combining partial sums.

On a dask.distributed cluster the job (model, predictive, measure) travels
once to each worker, which compiles the graph once and reuses it for all its
blocks; without a cluster dask's threads share this process's compiled graph.
"""

import uuid
from dataclasses import dataclass, replace
from math import prod

import numpy as np

from pm_sens._core.arguments import is_lazy
from pm_sens._core.draws import SAMPLE_DIMS, Draws
from pm_sens._run.cluster import worker_cached
from pm_sens._run.compiling import dependence_of

#: rows evaluated eagerly to validate a lazy request before building its graph
PROBE_ROWS = 64


@dataclass
class BlockJob:
    """What every block needs besides its own rows and draws."""

    ctx: object  # the request's Context, per-point values and draws left out
    measure: object  # measure(ctx, **per_point) -> {name: array}
    key: str

    def run(self, rows, point_values, draw_values, chain, draw, per_point):
        """The measure on one block, every output as float64."""
        ctx = block_context(self.ctx, *rows, point_values, Draws(draw_values, chain, draw))
        return {k: np.asarray(v, dtype=float) for k, v in self.measure(ctx, **per_point).items()}


def block_context(ctx, start, stop, point_values, draws=None):
    """The request on points ``start:stop`` (their per-point values given), quietly.

    ``draws``: the block's draws (default all). Each categorical input's own
    levels are those of the block's rows.
    """
    points = ctx.points.block(start, stop, point_values)
    levels = [replace(level, own=level.own[start:stop]) for level in ctx.levels]
    draws = ctx.draws if draws is None else draws
    return replace(ctx, points=points, draws=draws, levels=levels, progressbar=False)


def _run_block(job, *args):
    # one copy per worker process, so its compiled graphs serve every block there
    return worker_cached(job.key, lambda: job).run(*args)


def run_local(ctx, measure, outputs, split_draws, per_point=None):
    """``measure(ctx, **per_point)``, evaluated now or block by block as dask arrays.

    Parameters
    ----------
    ctx : Context
        The validated request.
    measure : callable
        ``measure(ctx, **per_point)`` returns a dict of local values; must be
        picklable (a module-level function, or a ``functools.partial`` of one).
    outputs : dict
        Dims of each returned array, naming the point dim ``"point"``.
    split_draws : bool
        Whether outputs have ``("chain", "draw")`` first (draw mode).
    per_point : dict, optional
        Further per-point arrays (rows = points), passed to ``measure`` sliced
        like the points.

    Returns
    -------
    dict
        NumPy arrays when nothing is lazy; otherwise dask arrays, one task per
        block, after ``measure`` has run eagerly on the first few points and one
        draw, so that bad requests fail now.
    """
    per_point = per_point or {}
    if ctx.points.lazy and not dependence_of(ctx).local:
        # a series is evaluated whole: its rows move each other's predictions
        ctx = replace(ctx, points=ctx.points.computed())
        per_point = {k: np.asarray(v) for k, v in per_point.items()}
    if not (ctx.points.lazy or (split_draws and ctx.draws.lazy)):
        return measure(ctx, **per_point)
    _probe(ctx, measure, per_point)
    import dask

    key = uuid.uuid4().hex
    job = dask.delayed(BlockJob(_without_blocks(ctx), measure, key), name=f"pm-sens-job-{key}")
    sizes = {"feature": len(ctx.points.features), "feature_bis": len(ctx.points.features)}
    # the levels each categorical input is compared at (`level_measures`)
    sizes.update({f"{lv.label}_level": np.count_nonzero(lv.weights) for lv in ctx.levels})
    sizes["outcome"] = len(ctx.predictive.outcome_labels)
    point_ranges = _ranges(_point_chunks(ctx.points))
    sample_blocks = _sample_blocks(ctx, outputs, sizes, point_ranges) if split_draws else [None]
    # NumPy values enter the graph once, as one-chunk dask arrays, not once per block
    rows = [_as_dask(ctx.points.values[v]) for v in ctx.points.per_point]
    per_point = {k: _as_dask(v) for k, v in per_point.items()}
    all_draws = replace(ctx.draws, values=[_as_dask(v) for v in ctx.draws.values])
    blocks = []  # per block of draws, {name: array} joined over the blocks of points
    for sample in sample_blocks:
        draws = all_draws if sample is None else all_draws.within_chain(*sample)
        sizes.update(chain=len(draws.chain), draw=len(draws.draw))
        row_blocks = [
            _block_arrays(job, rows, draws, per_point, start, stop, outputs, sizes)
            for start, stop in point_ranges
        ]
        blocks.append(_join(row_blocks, outputs, "point"))
    if not split_draws:
        return blocks[0]
    chains = [
        _join(
            [b for b, (c, _, _) in zip(blocks, sample_blocks, strict=True) if c == chain],
            outputs,
            "draw",
        )
        for chain in range(len(ctx.draws.chain))
    ]
    return _join(chains, outputs, "chain")


def _block_arrays(job, rows, draws, per_point, start, stop, outputs, sizes):
    """One task on points ``start:stop`` and ``draws``: its outputs as dask arrays."""
    import dask
    import dask.array as da

    task = dask.delayed(_run_block, pure=True)(
        job,
        (start, stop),
        [value[start:stop] for value in rows],
        draws.values,
        draws.chain,
        draws.draw,
        {k: v[start:stop] for k, v in per_point.items()},
    )
    sizes = {**sizes, "point": stop - start}
    return {
        name: da.from_delayed(task[name], tuple(sizes[d] for d in dims), dtype=float)
        for name, dims in outputs.items()
    }


def _join(blocks, outputs, dim):
    """Concatenate dicts of dask arrays along ``dim``."""
    import dask.array as da

    return {
        name: da.concatenate([b[name] for b in blocks], axis=dims.index(dim))
        for name, dims in outputs.items()
    }


def _as_dask(value):
    import dask.array as da

    if is_lazy(value):
        return value
    value = np.asarray(value)
    return da.from_array(value, chunks=value.shape)


def _probe(ctx, measure, per_point):
    """Run the measure on the first rows and draw: compiles, fails early."""
    rows = min(ctx.points.n_points, PROBE_ROWS)
    values = [np.asarray(ctx.points.values[v][:rows]) for v in ctx.points.per_point]
    first = Draws(ctx.draws.chunk(0, 1), ctx.draws.chain[:1], ctx.draws.draw[:1])
    probe = block_context(ctx, 0, rows, values, first)
    measure(probe, **{k: np.asarray(v[:rows]) for k, v in per_point.items()})


def _without_blocks(ctx):
    """The context without its per-point values and draws (each block brings its own)."""
    values = {k: v for k, v in ctx.points.values.items() if k not in ctx.points.per_point}
    points = replace(ctx.points, values=values)
    draws = Draws([], ctx.draws.chain, ctx.draws.draw)
    return replace(ctx, points=points, draws=draws, progressbar=False)


def _point_chunks(points):
    """Row blocks: the dask chunks of the first lazy per-point value, else one block."""
    for var in points.per_point:
        value = points.values[var]
        if is_lazy(value):
            return value.chunks[0]
    return (points.n_points,)


def _ranges(sizes):
    ends = np.cumsum(sizes)
    return list(zip((ends - np.asarray(sizes)).tolist(), ends.tolist(), strict=True))


def _sample_blocks(ctx, outputs, sizes, point_ranges):
    """(chain index, start, stop) blocks of draws.

    The posterior's dask chunks along ``draw``, or as many draws as keep one
    block's outputs within the memory limit.
    """
    draw_chunks = ctx.draws.draw_chunks
    if draw_chunks is None:
        rows = max(stop - start for start, stop in point_ranges)
        per_draw = 8 * sum(
            prod(rows if d == "point" else sizes[d] for d in dims if d not in SAMPLE_DIMS)
            for dims in outputs.values()
        )
        step = int(max(1, min(len(ctx.draws.draw), ctx.memory_limit // per_draw)))
        draw_chunks = [step] * (len(ctx.draws.draw) // step)
        if len(ctx.draws.draw) % step:
            draw_chunks.append(len(ctx.draws.draw) % step)
    return [
        (chain, start, stop)
        for chain in range(len(ctx.draws.chain))
        for start, stop in _ranges(draw_chunks)
    ]

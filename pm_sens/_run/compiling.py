"""Which compiled graph a request runs, built once per predictive.

`compiled_for` picks how to run a graph (NumPy op by op, compiled by Numba,
or by JAX on the JAX backends: `backend_for`), builds it once per predictive
and settings, and first finds which rows' inputs the parameters at a row
depend on (`dependence_of`) and the colours of the rows that a joint
derivative needs (`colors_for`).
"""

import hashlib
import threading

import numpy as np

from pm_sens._core.arguments import inform_once
from pm_sens._run.background import compile_when_asked_again
from pm_sens._run.output_checks import PROBED_DRAWS, PROBED_ROWS, find_dependence
from pm_sens.graph.compile import jax_functions
from pm_sens.graph.compile.compiled import data_for_chunk
from pm_sens.graph.compile.rewrites import excluded as excluded_rewrites
from pm_sens.graph.engine import compile_predictive
from pm_sens.graph.model.dependence import Dependence

_COMPILING = threading.RLock()  # dask threads may ask for the same graph at once


#: moment-mode derivatives of up to this many values (draws × rows ×
#: features^order) run op by op in NumPy rather than compiled: the compile would
#: take longer than the run (`pm_sens.graph.compile.rewrites.BACKENDS`)
INTERPRETED_WORK = 2e7


#: above this many values NumPy would run longer than Numba's compile on an empty
#: cache: compile first; below, NumPy runs while Numba compiles in the background
#: (`pm_sens._run.background`)
COMPILE_FIRST_WORK = 1e9


def _work(ctx, order, rows):
    rows = max(ctx.points.n_points if rows is None else rows, 1)
    return ctx.draws.count * rows * max(len(ctx.points.features), 1) ** order


def backend_for(ctx, mode, order, rows=None, whitened=False):
    """How to run a graph: ``"python"`` (op by op in NumPy), ``"numba"`` or ``"jax"``.

    Per-draw graphs (draw mode) and forward graphs run in NumPy: their cost is
    in large array operations that NumPy runs about as fast as the compiled
    graph, with no compile. Moment-mode derivatives are averaged over draws
    inside the graph, and draw-mode R-sens (``whitened``) turns the derivatives
    into one value per draw, point and feature there, which the compiled graph
    does several times faster (one loop instead of an array per operation):
    compiled unless the request is small. ``rows``: the number of rows the call
    evaluates (stacked copies of the points), if not the points. On the JAX
    backends (``ctx.backend``) every graph runs with JAX.
    """
    if ctx.backend != "cpu":
        return "jax"
    if (mode == "draw" and not whitened) or order == 0:
        return "python"
    return "python" if _work(ctx, order, rows) <= INTERPRETED_WORK else "numba"


def compiled_for(
    ctx,
    mode,
    order,
    second_moment=None,
    statistic=None,
    rows=None,
    whitened=False,
    statistics=(),
    draw_sums=(),
    points_per_copy=None,
    parameters=True,
    colored=False,
):
    """The compiled chunk function for these settings, built once per predictive.

    ``rows``: as in `backend_for`; ``second_moment``, ``statistic``,
    ``whitened``, ``statistics``, ``draw_sums``, ``points_per_copy``,
    ``parameters``: as in `compile_predictive`.
    ``colored``: the derivatives of each row of a model
    whose rows depend on other rows' inputs (`colors_for`); the same as without
    in a local model. The first call finds the model's dependence
    (`dependence_of`). A graph worth compiling with Numba whose compile is not
    ready runs in NumPy while Numba compiles (`pm_sens._run.background`), unless
    the request is large enough to wait for it.
    """
    settings = dict(
        second_moment=second_moment,
        statistic=statistic,
        whitened=whitened,
        statistics=tuple(statistics),
        draw_sums=tuple(draw_sums),
        points_per_copy=points_per_copy,
        parameters=parameters,
    )
    dependence = dependence_of(ctx)
    colors = colors_for(ctx) if colored else 1
    backend = backend_for(ctx, mode, order, rows, whitened)
    key = _graph_key(ctx, mode, order, backend, (dependence, colors), settings)
    cache = ctx.predictive.compiled

    def build(backend):
        # a whitened graph shares its forward evaluation with the other measures
        forward = compiled_for(ctx, "draw", 0) if whitened else None
        return compile_predictive(
            ctx.predictive,
            ctx.model,
            ctx.inputs,
            ctx.points.values,
            ctx.draws.chunk(0, 1),  # fixes the per-draw shapes
            mode=mode,
            order=order,
            backend=backend,
            dtype=ctx.dtype,
            forward=forward,
            dependence=dependence,
            colors=colors,
            **settings,
        )

    if backend == "numba" and key not in cache and _work(ctx, order, rows) < COMPILE_FIRST_WORK:
        if not ctx.points.lazy:
            compile_when_asked_again(
                ctx.predictive, key, _COMPILING, lambda: build("numba"), _warm(ctx)
            )
            key = _graph_key(ctx, mode, order, "python", (dependence, colors), settings)
            backend = "python"
    compiled = cache.get(key)  # built: no waiting for a compile under way (a background one)
    if compiled is not None:
        return compiled
    with _COMPILING:
        if key not in cache:
            cache[key] = build(backend)
    return cache[key]


def _graph_key(ctx, mode, order, backend, dependence_and_colors, settings):
    """What makes two compiled chunk functions of one predictive different."""
    values = ctx.points.values
    return (
        mode,
        order,
        backend,
        ctx.dtype,
        dependence_and_colors if dependence_and_colors[1] > 1 else None,
        tuple(settings.items()),
        tuple(v.name for v in ctx.inputs),
        tuple((v.name, np.shape(values[v])[1:]) for v in values),
        tuple(np.shape(v)[1:] for v in ctx.draws.values),
        excluded_rewrites(),
    )


def _warm(ctx):
    """Run a compiled predictive once on the points and one draw (Numba compiles then)."""
    draws = ctx.draws.chunk(0, 1)

    def warm(compiled):
        given = {}
        if getattr(compiled, "writes_in_place", False):  # the array its norm is computed in
            given["out"] = np.empty((1, ctx.points.n_points, compiled.n_features))
        compiled(data_for_chunk(compiled, ctx.points.values), draws, **given)

    return warm


def on_an_accelerator(ctx):
    """Whether the request's graphs run on an accelerator (the JAX backend on a GPU).

    See `pm_sens.graph.compile.jax_functions.on_an_accelerator`.
    """
    return ctx.backend != "cpu" and jax_functions.on_an_accelerator()


def dependence_of(ctx):
    """Which rows' inputs the parameters at a row depend on (`find_dependence`), once.

    Found on the forward graph (parameters alone, cheap to build) before any
    graph with derivatives is compiled; on lazily given points, on their
    first rows. What is found depends on the graph, the points and the draws
    probed alone: a later call on the same values (their bytes hashed) takes
    it from the predictive, as the probes evaluate the graph about 20 times
    over every row. A model that is not local is said so.
    """
    if ctx.dependence is not None:
        return ctx.dependence
    ctx.dependence = Dependence()  # the forward graph below is built without looking
    try:
        points = ctx.points
        if points.lazy:
            rows = min(points.n_points, PROBED_ROWS)
            values = [np.asarray(points.values[v][:rows]) for v in points.per_point]
            points = points.block(0, rows, values)
        key = _probed_values_key(ctx, points)
        found = ctx.predictive.dependences.get(key)
        if found is None:
            found = find_dependence(compiled_for(ctx, "draw", 0), points, ctx.draws)
            ctx.predictive.dependences[key] = found
    except Exception:
        ctx.dependence = None
        raise
    ctx.dependence = found
    if not found.local:
        inform_once(
            ctx.predictive,
            f"pm_sens found the model's dependence between rows: {found.describe()}",
        )
    return found


def _probed_values_key(ctx, points):
    """What `find_dependence` reads, as a key.

    The graph's backend and dtype, the bytes of the points' values and of the
    draws it probes (`PROBED_DRAWS`).
    """
    digest = hashlib.blake2b(digest_size=16)
    arrays = [*points.values.items(), *enumerate(ctx.draws.spread(PROBED_DRAWS))]
    for name, value in arrays:
        value = np.ascontiguousarray(value)
        digest.update(f"{name}{value.dtype}{value.shape}".encode())
        if value.dtype.hasobject:
            digest.update(repr(value.tolist()).encode())
        else:
            digest.update(value.reshape(-1).view(np.uint8))
    return ctx.backend, ctx.dtype, points.n_points, digest.hexdigest()


#: backward passes per chunk (colours of the rows) a joint R-sens may take;
#: beyond, the series is too long for a dense Jacobian
MAX_COLORS = 64


def colors_for(ctx):
    """The colours of the rows for ``ctx``'s model and points; an error beyond `MAX_COLORS`.

    A local model has one. A model whose rows depend on a window of other
    rows has the window's width; where the window spans the whole series
    (a dense Jacobian), one per point, which only a short series affords.
    """
    dependence = dependence_of(ctx)
    n = ctx.points.n_points
    colors = dependence.colors(n)
    if colors <= MAX_COLORS:
        return colors
    draws = ctx.draws.count
    needed = 8 * draws * n * n * max(len(ctx.points.features), 1)
    raise ValueError(
        f"the parameters at each point depend on the inputs of up to {dependence.width} "
        f"rows ({dependence.describe()}), which leaves no structure to use at {n} points: "
        f"the joint R-sens and KL need the dense Jacobian of every point in every input "
        f"row, {colors} backward passes per chunk of draws ({needed / 1e9:.1f} GB over "
        f"{draws} draws). Pass points= with a series of at most {MAX_COLORS} rows (the "
        "rows to explain, with the rows they depend on), and num_draws= to cut the time "
        "of each pass. If no "
        "dependence between rows is intended, common causes are an expression centred by its "
        "mean over the points that involves parameters (mu - mu.mean()), inputs standardized "
        "inside the model with hold_statistics=False (do it outside, on the data), or a GP "
        "prior over the inputs (use a GP predictive, pm_sens.Predictive)"
    )

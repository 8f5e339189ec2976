"""A validated request and its compiled graphs, shared by the public functions.

A `Context` holds what every measure needs once validated: the predictive, the
inputs to differentiate, the points and the posterior draws. `compiled_for`
builds each graph once per predictive, after `dependence_of` has found which
rows' inputs the parameters at a row depend on. `pm_sens._chunk_passes` runs
the graphs over the draws.
"""

import threading
import weakref
from dataclasses import dataclass, field

import numpy as np
import pymc as pm

from pm_sens._background import compile_when_asked_again
from pm_sens._checks import PROBED_ROWS, find_dependence
from pm_sens._inputs import resolve_inputs
from pm_sens._levels import check_levels, one_hot_levels, resolve_levels
from pm_sens._points import PointSet, resolve_points
from pm_sens._posterior import Draws, posterior_draws
from pm_sens._validate import (
    check_bool,
    check_optional_positive_int,
    check_positive,
    check_seed,
    inform_once,
)
from pm_sens.graph.bambi_model import is_bambi_model, rebuild
from pm_sens.graph.compiled import data_for_chunk
from pm_sens.graph.dependence import Dependence
from pm_sens.graph.dims_model import tensor_model
from pm_sens.graph.engine import compile_predictive, required_free_rvs
from pm_sens.graph.marketing_model import is_marketing_model, marketing_model
from pm_sens.graph.predictive import Predictive
from pm_sens.graph.rewrites import excluded as excluded_rewrites
from pm_sens.graph.trees import tree_draw_symbols

_PREDICTIVES = weakref.WeakKeyDictionary()
_COMPILING = threading.RLock()  # dask threads may ask for the same graph at once

#: Working memory per chunk of draws, in bytes, unless ``memory_limit`` says otherwise.
DEFAULT_MEMORY_LIMIT = 1e9


_BAMBI_MODELS = weakref.WeakKeyDictionary()


def pymc_model_for(model):
    """The PyMC model to analyse, and the front end it came from (or None).

    ``model`` itself, or lowered to tensors if written with ``pymc.dims``
    (`pm_sens.graph.dims_model`); a bambi model rebuilt on ``pm.Data`` inputs
    (`pm_sens.graph.bambi_model`); a pymc-marketing MMM's model
    (`pm_sens.graph.marketing_model`). Each is built once per model.
    """
    if is_marketing_model(model):  # its PyMC model is lowered once (`tensor_model`)
        frontend = marketing_model(model)
        return frontend.model, frontend
    if is_bambi_model(model):
        if model not in _BAMBI_MODELS:
            _BAMBI_MODELS[model] = rebuild(model)
        frontend = _BAMBI_MODELS[model]
        return frontend.model, frontend
    if not isinstance(model, pm.Model):
        raise TypeError(
            f"model={type(model).__name__} is not valid: give the fitted pymc.Model (or "
            "bambi.Model, or pymc-marketing MMM); the posterior comes first, as in "
            "pm_sens.sensitivity(idata, model)"
        )
    return tensor_model(model), None


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
    #: which rows' inputs the parameters at a row depend on, once found (`dependence_of`)
    dependence: Dependence | None = None
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
    ``lazy_points`` (and the model has no BART variable), else they are read
    into memory. With ``levels``, integer
    per-point inputs are categorical inputs (``ctx.levels``), and so is each
    group of feature columns in ``categorical``.
    """
    progressbar = check_bool("progressbar", progressbar)
    check_bool("extend_inferencedata", extend_inferencedata)
    model, frontend = pymc_model_for(model)
    if frontend is not None:
        points = frontend.points(points)
        if inputs is None:
            inputs = frontend.default_inputs
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
    # a BART variable's trees are evaluated in this process only (`graph/trees.py`)
    if pts.lazy and (not lazy_points or tree_draw_symbols(predictive.parameter_list)):
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
        names=frontend.posterior_names if frontend is not None else None,
    )
    return Context(
        model, predictive, diff_inputs, pts, draws, memory_limit, progressbar, levels=level_info
    )


#: moment-mode derivatives of up to this many values (draws × rows ×
#: features^order) run op by op in NumPy rather than compiled: the compile would
#: take longer than the run (`pm_sens.graph.rewrites.BACKENDS`)
INTERPRETED_WORK = 2e7
#: above this many values NumPy would run longer than Numba's compile on an empty
#: cache (20 s at most, measured): compile first; below, NumPy runs while Numba
#: compiles in the background (`pm_sens._background`)
COMPILE_FIRST_WORK = 1e9


def _work(ctx, order, rows):
    rows = max(ctx.points.n_points if rows is None else rows, 1)
    return ctx.draws.count * rows * max(len(ctx.points.features), 1) ** order


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
    parameters=True,
    colored=False,
):
    """The compiled chunk function for these settings, built once per predictive.

    ``rows``: as in `backend_for`; ``second_moment``, ``statistic``,
    ``whitened``, ``statistics``, ``parameters``: as in `compile_predictive`.
    ``colored``: the derivatives of each row of a model
    whose rows depend on other rows' inputs (`colors_for`); the same as without
    in a local model. The first call finds the model's dependence
    (`dependence_of`). A graph worth compiling with Numba whose compile is not
    ready runs in NumPy while Numba compiles (`pm_sens._background`), unless
    the request is large enough to wait for it.
    """
    settings = dict(
        second_moment=second_moment,
        statistic=statistic,
        whitened=whitened,
        statistics=tuple(statistics),
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
        compiled(data_for_chunk(compiled, ctx.points.values), draws)

    return warm


def dependence_of(ctx):
    """Which rows' inputs the parameters at a row depend on (`find_dependence`), once.

    Found on the forward graph (parameters alone, cheap to build) before any
    graph with derivatives is compiled; on lazily given points, on their
    first rows. A model that is not local is said so.
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
        found = find_dependence(compiled_for(ctx, "draw", 0), points, ctx.draws)
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

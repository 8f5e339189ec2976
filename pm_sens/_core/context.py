"""A validated request, shared by the public functions.

A `Context` holds what every measure needs once validated: the predictive, the
inputs to differentiate, the points, the categorical inputs' levels and the
posterior draws. `pm_sens._run.compiling` builds its graphs and
`pm_sens._run.chunks` runs them over the draws.
"""

import weakref
from dataclasses import dataclass, field

from pytensor.graph.traversal import graph_inputs
from pytensor.tensor.sharedvar import TensorSharedVariable

from pm_sens._core.arguments import inform_once
from pm_sens._core.categorical_inputs import check_levels, one_hot_levels, resolve_levels
from pm_sens._core.draws import Draws, posterior_draws
from pm_sens._core.inputs import resolve_inputs
from pm_sens._core.points import PointSet, resolve_points
from pm_sens.graph.frontends.choice import pymc_model_for
from pm_sens.graph.frontends.trees import tree_draw_symbols
from pm_sens.graph.model.dependence import Dependence
from pm_sens.graph.predictive import Predictive, required_free_rvs
from pm_sens.options import get_options

_PREDICTIVES = weakref.WeakKeyDictionary()


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
    #: the CPU cores the call may use (its ``cores=``, else `pm_sens.set_options`'s)
    cores: int = 1
    #: where the compiled graphs run (its ``backend=``, else `pm_sens.set_options`'s)
    backend: str = "cpu"
    #: what the compiled graphs compute in (its ``dtype=``, else `pm_sens.set_options`'s)
    dtype: str = "float64"
    #: which rows' inputs the parameters at a row depend on, once found (`dependence_of`)
    dependence: Dependence | None = None
    #: categorical inputs, compared level by level (`pm_sens._core.categorical_inputs.Levels`)
    levels: list = field(default_factory=list)


def make_context(
    request, *, differentiable=True, lazy_points=True, levels=False, categorical=None
):
    """Read the model for a `Request` (no compiling): what the measures need.

    Checks what the request names in the model: the predictive, inputs, points
    and posterior draws. Dask-backed points stay lazy if ``lazy_points`` (and
    the model has no BART variable), else they are read into memory. With
    ``levels``, integer per-point inputs are categorical inputs
    (``ctx.levels``), and so is each group of feature columns in
    ``categorical``.
    """
    model, frontend = pymc_model_for(request.model)
    inputs, points, predictive = request.inputs, request.points, request.predictive
    if frontend is not None:
        points = frontend.points(points)
        if inputs is None:
            inputs = frontend.default_inputs
    if predictive is None:
        predictive = predictive_for(model, request.var_name)
    elif not isinstance(predictive, Predictive):
        raise TypeError(
            f"predictive={type(predictive).__name__} is not valid; "
            "give a pm_sens.Predictive or None"
        )
    else:
        # the containers it differentiates or reads (integer ones: group indices);
        # the model's dim lengths are shared scalars, not data
        read = [*predictive.inputs, *graph_inputs(predictive.parameter_list)]
        foreign = [
            v.name
            for v in dict.fromkeys(read)
            if isinstance(v, TensorSharedVariable)
            and v.type.ndim
            and v not in set(model.data_vars)
        ]
        if foreign:
            raise ValueError(
                f"predictive= reads the data container(s) {foreign}, which are not in this "
                "model; build the Predictive from this model's variables (its containers: "
                f"{sorted(v.name for v in model.data_vars)})"
            )
        observed = sorted(rv.name for rv in model.observed_RVs)
        if predictive.var_name is not None and predictive.var_name not in observed:
            raise ValueError(
                f"predictive= explains {predictive.var_name!r}, which is not an observed "
                f"variable of this model (its observed variables: {observed}); build the "
                "Predictive from this model"
            )
    diff_inputs, level_inputs, variables, n_default = resolve_inputs(
        predictive, model, inputs, differentiable, levels
    )
    pts = resolve_points(model, predictive, diff_inputs, variables, n_default, points)
    # a BART variable's trees are evaluated in this process only (`graph/frontends/trees.py`)
    if pts.lazy and (not lazy_points or tree_draw_symbols(predictive.parameter_list)):
        pts = pts.computed()
    check_levels(predictive, pts)
    level_info = resolve_levels(predictive, level_inputs, pts)
    level_info += one_hot_levels(pts, predictive, diff_inputs, categorical)
    draws = posterior_draws(
        request.idata,
        model,
        required_free_rvs(predictive, model),
        request.num_draws,
        request.random_seed,
        names=frontend.posterior_names if frontend is not None else None,
    )
    return Context(
        model,
        predictive,
        diff_inputs,
        pts,
        draws,
        request.memory_limit,
        request.progressbar,
        cores=request.cores or get_options()["cores"],
        backend=request.backend or get_options()["backend"],
        dtype=_dtype_for(predictive, request.dtype or get_options()["dtype"]),
        levels=level_info,
    )


def _dtype_for(predictive, dtype):
    """What ``predictive``'s graphs compute in: ``dtype``, or float64 without closed forms.

    A likelihood without closed forms has its cost in the sums over the support
    or the quadrature nodes, which run on the CPU in float64 whatever the
    graph's dtype; and its leaf parameters in float32 would break what those
    sums rely on (a mixture's weights that sum to 1: the search for a count
    above which the mass left is below the tail would find none).
    """
    if dtype == "float32" and predictive.likelihood.generic is not None:
        inform_once(
            predictive,
            f"dtype='float32': the {predictive.likelihood.name} likelihood has no closed "
            "forms, so its graphs compute in float64 (its sums over the support or "
            "quadrature nodes run on the CPU in float64, and need parameters that do "
            "not lose float32's rounding, such as mixture weights that sum to 1)",
        )
        return "float64"
    return dtype

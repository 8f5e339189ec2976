"""Which data variables are inputs: the default choice, ``inputs=``, and the refusals."""

import numpy as np
from pytensor.graph.basic import Constant

from pm_sens._core.arguments import as_name_list, inform_once, warn
from pm_sens._core.points import current_value
from pm_sens.graph.compile.nodes import is_float
from pm_sens.graph.model.per_row import arrays_of_other_length
from pm_sens.graph.model.queries import (
    bart_variables,
    count_containers,
    data_containers,
    data_value,
)


def _default_point_count(predictive, model, variables):
    if predictive.observation_count is not None:  # a wide table's cells
        return predictive.observation_count
    if predictive.var_name is not None:
        return int(np.shape(data_value(model.rvs_to_values[model[predictive.var_name]]))[0])
    for var in variables:
        value = current_value(var, predictive)
        if value is not None and np.ndim(value):
            return int(np.shape(value)[0])
    return None


def _group_indices(predictive):
    """Integer containers through which per-point copies of group-level values are read."""
    return [
        index for _, index in predictive.group_inputs.values() if not isinstance(index, np.ndarray)
    ]


def resolve_inputs(predictive, model, inputs, differentiable=True, levels=False):
    """The input variables, the categorical ones, and all data variables of the predictive.

    Default: the predictive's float inputs with one row per point, and with
    ``levels`` its integer per-point containers (group indices, flags: compared
    level by level). With ``differentiable=False`` (permutation and grids, no
    derivatives), integer per-point containers are plain inputs. Count
    parameters of the likelihood (trials) and NumPy constants with a row per
    observation are held at each point's value. Returns
    ``(inputs, level_inputs, variables, n_default)``.
    """
    params = predictive.parameter_list
    # an integer container read through a float copy (``beta * t``) is that copy;
    # elsewhere only its length may be read (an AR's ``steps=t.shape[0] - 1``)
    copied = {
        base for base, rows in predictive.group_inputs.values() if isinstance(rows, np.ndarray)
    }
    containers = data_containers(model, params)
    variables = list(
        dict.fromkeys(
            [
                *predictive.inputs,
                *containers,
                *_group_indices(predictive),
                *predictive.row_constants,
            ]
        )
    )
    n_default = _default_point_count(predictive, model, variables)
    _screen_model(predictive, model, params)
    # held at each point's value, like an exposure: never an input
    held = count_containers(model, predictive.var_name) if predictive.var_name else []
    held = [*held, *predictive.row_constants, *copied]

    def per_point(var):
        value = current_value(var, predictive)
        return value is None or (np.ndim(value) in (1, 2) and np.shape(value)[0] == n_default)

    def categorical(var):
        value = current_value(var, predictive)
        return levels and predictive.data_per_point and not is_float(var) and np.ndim(value) == 1

    def eligible(var):
        return var not in held and (is_float(var) or not differentiable or categorical(var))

    candidates = [v for v in variables if eligible(v)]
    if inputs is None:
        # permutations and grids may also move integer per-point containers, but a
        # predictive over new inputs (a GP's) has only its own inputs: the data it
        # holds are its training set
        pool = variables if not differentiable and predictive.data_per_point else predictive.inputs
        chosen = [
            v
            for v in pool
            if v not in held and (is_float(v) or not differentiable) and per_point(v)
        ]
        grouped = [
            v
            for v in variables
            if eligible(v) and differentiable and categorical(v) and per_point(v)
        ]
        given_draws = data_containers(model, params, given_draws=True)
        _warn_held_floats(predictive, [c for c in given_draws if not per_point(c)])
        if not chosen and not grouped:
            other_lengths = [v for v in variables if is_float(v) and not per_point(v)]
            categorical_inputs = [v for v in variables if v not in held and per_point(v)]
            _raise_no_inputs(predictive, model, other_lengths, n_default, categorical_inputs)
        _tell_numpy_inputs(predictive, [*chosen, *grouped])
        return chosen, grouped, variables, n_default
    by_name = {v.name: v for v in variables}
    chosen, grouped = [], []
    for name in as_name_list("inputs", inputs):
        var = by_name.get(name)
        if var is None or not eligible(var):
            reason = (
                "is held at each point's value (the likelihood's trials n, or a NumPy array "
                "with one value per observation)"
                if var in held
                else f"is an integer container (dtype {var.dtype}); integer inputs such as group "
                "indices have no derivative (sensitivity() compares their levels, "
                "permutation_importance and partial_dependence take them as they are)"
                if var is not None
                else "is not a data container the predictions depend on"
            )
            raise ValueError(
                f"inputs={name!r} {reason}; valid: {sorted(v.name for v in candidates)}"
            )
        if not per_point(var):
            raise ValueError(
                f"inputs={name!r} has shape {np.shape(current_value(var, predictive))}, not "
                f"one row per point ({n_default} points); only per-point inputs "
                "(1-D or 2-D, rows = points) are supported"
            )
        (grouped if differentiable and not is_float(var) else chosen).append(var)
    _tell_numpy_inputs(predictive, [*chosen, *grouped])
    return chosen, grouped, variables, n_default


def _screen_model(predictive, model, params):
    """Refuse model forms with no per-point inputs; say what is held at the data."""
    _refuse_bart(model, params)
    _refuse_bambi_backend(predictive, model)
    _tell_held_statistics(predictive)


def _refuse_bart(model, params):
    """A BART variable left in a hand-built predictive: only its values at the model's rows."""
    for rv, containers in bart_variables(model, params).items():
        raise ValueError(
            f"the predictive's parameters hold the BART variable {rv.name!r} over "
            f"{[c.name for c in containers]}, whose posterior draws are its values at the "
            "model's rows only; let pm_sens read the predictive "
            "(Predictive.from_observed(model) or predictive=None), which evaluates its "
            "trees at the points"
        )


def _refuse_bambi_backend(predictive, model):
    """A model bambi built holds its predictors as constants: ask for the bambi model."""
    # the rebuilt model holds its predictors in containers (integer ones for
    # categorical terms)
    containers = [v for v in model.data_vars if hasattr(v, "get_value")]
    if "__obs__" in model.coords and not containers:
        raise ValueError(
            "this PyMC model was built by bambi (its observations run along '__obs__') "
            "and holds its predictors as constants; pass the bmb.Model itself, which "
            "pm_sens rebuilds on pm.Data inputs, not model.backend.model"
        )


def _raise_no_inputs(predictive, model, other_lengths, n_points, categorical=()):
    """The error for predictions that depend on no input, with its likely cause.

    ``other_lengths``: float containers the predictions use without one row
    per observation (e.g. lagged slices ``x[1:]``, ``x[:-1]`` of a series);
    float NumPy arrays of that kind are found here. ``categorical``: per-point
    inputs without a derivative (group indices, flags), for a measure that
    needs one.
    """
    name = predictive.var_name or predictive.family
    if categorical:
        raise ValueError(
            f"the predictions of {name!r} depend only on categorical inputs "
            f"{[v.name for v in categorical]} (integer or bool: group indices, flags), "
            "which have no derivative; integrated gradients needs a continuous input. "
            "sensitivity() compares their levels, and permutation_importance and "
            "partial_dependence take them as they are"
        )
    shapes = {v.name: np.shape(current_value(v, predictive)) for v in other_lengths}
    arrays = arrays_of_other_length(model, predictive.parameter_list, n_points)
    shapes.update({f"NumPy array {k}": np.shape(c.data) for k, c in enumerate(arrays)})
    if shapes:
        raise ValueError(
            f"the predictions of {name!r} ({n_points} observations) depend on the float "
            f"data {shapes}, which do not have one row per observation: a "
            "model that takes shifted slices of an input (lags such as x[1:] and x[:-1], "
            "an AR term on x) has more input rows than observations, which pm_sens does "
            "not support yet. Give each observation its own row: write the lag as a "
            "shifted copy of the whole series, pt.concatenate([pt.zeros(1), x[:-1]]) "
            "beside x (pm_sens then measures the joint predictive of the series; user "
            "guide, 'Series: lags and adstock'), or give each lag its own container "
            "(pm.Data columns x and x_lag1, both of length N)"
        )
    raise ValueError(
        f"the predictions of {name!r} depend on no float input with one row per "
        "observation (a pm.Data container or a NumPy array of floats that differ between "
        "rows); give the inputs in pm.Data or as such arrays (or pass inputs= / a Predictive)"
    )


def _tell_held_statistics(predictive):
    """Say which statistics of the data the model computes are held at their values."""
    if predictive.held_statistics:
        inform_once(
            predictive,
            f"pm_sens holds the {', '.join(predictive.held_statistics)} computed inside the "
            "model at their values on the model's data, so new points are transformed as "
            "the data were (a model of new x with the training mean and sd). To refuse such "
            "a model instead, pass predictive=pm_sens.Predictive.from_observed(model, "
            "hold_statistics=False)",
        )


def _tell_numpy_inputs(predictive, chosen):
    """Say which NumPy arrays of the model are inputs, which are held, and how to change it.

    Also which raw inputs build the design columns (`pm_sens.graph.model.design`).
    """
    raw = [v.name for v in chosen if v in predictive.raw_inputs]
    if raw:
        inform_once(
            predictive,
            f"pm_sens takes the raw inputs {raw} as inputs, through design(), in place of "
            f"the design columns of {predictive.design_replaced} (in a copy of the model's "
            "graph): every measure is per raw input, and points= gives raw values",
        )
    taken = [v for v in chosen if v in predictive.numpy_inputs]
    # group-level NumPy arrays (county uranium), read per point through a group index
    group = [
        (v, base, index)
        for v, (base, index) in predictive.group_inputs.items()
        if v in chosen and isinstance(base, Constant)
    ]
    if not taken and not group:
        return
    arrays = [f"{v.name!r} {np.shape(predictive.defaults[v])}" for v in taken]
    arrays += [
        f"{v.name!r} {base.data.shape}, a group-level array read per point through {index.name!r}"
        for v, base, index in group
    ]
    message = (
        f"pm_sens takes the NumPy array(s) {', '.join(arrays)} in the model as inputs (one "
        "row per observation: floats, bool flags, or integers that index a variable; or one "
        "value per group), in a copy of the model's graph. Give their values at new points "
        "by these names in points=, or choose among them with inputs="
    )
    held = [v for v in predictive.row_constants if v.dtype.startswith(("int", "uint", "bool"))]
    if held:
        shapes = ", ".join(f"{v.name!r} {np.shape(predictive.defaults[v])}" for v in held)
        message += (
            f". It holds at each point's value the integer array(s) {shapes} (counts or "
            "indices): to rank one as an input, give it to the model as a float array or "
            "in a float pm.Data container"
        )
    inform_once(predictive, message)


def _warn_held_floats(predictive, held):
    """Name the float containers the predictions depend on that are not inputs."""
    held = [c for c in held if is_float(c)]
    if not held or not predictive.data_per_point:
        return
    shapes = ", ".join(f"{c.name!r} {np.shape(c.get_value())}" for c in held)
    warn(
        f"the predictions depend on the float data {shapes}, which pm_sens holds at "
        "its value: it has no row per point and is not read per point through a group "
        "index (u[idx], or an element-wise expression of it indexed per point). To "
        "rank it, compute its per-point value in the model (e.g. u[idx]) or pass a "
        "pm_sens.Predictive",
    )

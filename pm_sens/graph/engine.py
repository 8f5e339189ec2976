"""Compile a predictive into one function over a chunk of posterior draws.

The free random variables are replaced by placeholders with a leading draw axis
(``vectorize_graph``), the data containers by symbolic inputs, so one compiled
function serves every chunk of draws and every set of points. Per-point
derivatives use locality: the parameters at point i depend only on row i of
the inputs, so ``grad(λ.sum(), X)[i] = ∂λ_i/∂x_i`` for all points at once.
"""

import threading
from dataclasses import dataclass, field

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.compile.mode import get_default_mode
from pytensor.graph.replace import graph_replace, vectorize_graph

from pm_sens.graph.likelihoods import statistic_expression
from pm_sens.graph.model_queries import (
    data_containers,
    depends_on,
    free_variables,
    observed_ancestors,
)


@dataclass
class CompiledPredictive:
    """A compiled predictive and the order of the arrays it takes and returns.

    Calling it with ``(data values, draw values)`` returns a dict with

    - mode ``"moment"``: ``phi`` (N, M) chunk moments (class probabilities or
      mean, then the chunk's mixture variance when ``uses_variance``),
      with ``order >= 1`` ``jac`` (M, N, D), with ``order=2`` ``hess`` (M, N, D, D);
    - mode ``"draw"``: ``phi`` (S, N, M) per-draw parameters, ``jac``
      (V, S, N, D) and ``hess`` (V, S, N, D, D) for the V components listed
      in ``varying``;

    (derivatives put the parameter axis first, so each parameter's slice is
    contiguous for the quadratic forms of `pm_sens.measures.rsens`);
    - ``fixed``: parameters held fixed by the family (Binomial ``n``).
    """

    function: object
    data_variables: list
    free_rvs: list
    inputs: list
    mode: str
    order: int
    varying: list
    fixed_names: list
    #: the keyword arguments of `compile_predictive` that built it
    settings: dict
    #: a compiled function keeps its inputs and outputs in shared storage:
    #: one call at a time (dask may run blocks in threads)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __call__(self, data_values, draw_values):
        """Evaluate on data arrays (in ``data_variables`` order) and draw arrays."""
        with self.lock:
            outputs = self.function(*data_values, *draw_values)
        names = ["phi", "jac", "hess"][: self.order + 1] + self.fixed_names
        result = dict(zip(names, outputs, strict=True))
        result["fixed"] = {n: result.pop(n) for n in self.fixed_names}
        return result


def _compile_mode():
    """PyTensor's default mode (Numba), minus a rewrite that fails noisily.

    PyTensor 3.3's ``orthogonal_solve_to_transpose_matmul`` raises (and logs a
    traceback) on draw-batched triangular solves, e.g. a GP's Cholesky solve;
    the rewrite would not apply to them anyway.
    """
    return get_default_mode().excluding("orthogonal_solve_to_transpose_matmul")


def _symbolic_like(var, value):
    """A symbolic tensor standing for ``var``, with the trailing shape of ``value``."""
    value = np.asarray(value)
    shape = (None, *value.shape[1:]) if value.ndim else ()
    return pt.tensor(dtype=var.dtype, shape=shape, name=var.name)


def _batched(var):
    """``var``'s type with a leading draw axis."""
    return pt.tensor(dtype=var.dtype, shape=(None, *var.type.shape), name=var.name)


def _point_gradient(expr, wrts, one_dimensional):
    """``∂expr_i/∂x_i`` for every point, one column per feature: shape (..., N, D)."""
    grads = pytensor.grad(expr.sum(), wrts, disconnected_inputs="ignore")
    columns = [g[..., None] if flat else g for g, flat in zip(grads, one_dimensional, strict=True)]
    return pt.concatenate(columns, axis=-1) if len(columns) > 1 else columns[0]


def _split_components(expr, n_classes):
    """List of per-point scalar components: the class axis, if any, split up."""
    if n_classes is None:
        return [expr]
    return [expr[..., k] for k in range(n_classes)]


def _derivatives(components, wrts, one_dimensional, n_features, order):
    if order == 0:
        return []
    jac = [_point_gradient(c, wrts, one_dimensional) for c in components]
    out = [pt.stack(jac)]
    if order == 2:
        hess = [
            pt.stack(
                [_point_gradient(j[..., d], wrts, one_dimensional) for d in range(n_features)],
                axis=-2,
            )
            for j in jac
        ]
        out.append(pt.stack(hess))
    return out


def _moment_components(likelihood, params, uses_variance, n_classes):
    mean, variance = likelihood.moments(*params)
    chunk_mean = mean.mean(0)
    components = _split_components(chunk_mean, n_classes)
    if uses_variance:
        # law of total variance within the chunk (chunks merge in measures.mixture)
        total = variance.mean(0) + ((mean - chunk_mean) ** 2).mean(0)
        components.append(total)
    return components


def _parameters_given_observed(predictive, model):
    """The predictive's parameters with any upstream observed RV set to its data."""
    params = list(predictive.parameter_list)
    observed = observed_ancestors(model, params)
    return graph_replace(params, observed, strict=False) if observed else params


def data_variables_of(predictive, model, inputs):
    """The compiled function's data arguments, in order.

    The inputs, then those held at their values: containers and symbolic inputs
    (a GP's X, per-point group copies) that are not differentiated.
    """
    params = _parameters_given_observed(predictive, model)
    candidates = dict.fromkeys([*predictive.inputs, *data_containers(model, params)])
    return list(inputs) + [v for v in candidates if v not in inputs]


def required_free_rvs(predictive, model):
    """The model's free RVs whose posterior draws the predictive needs."""
    return free_variables(model, _parameters_given_observed(predictive, model))


def _class_count(params, inputs, first_values):
    """Number of categories of a categorical likelihood's probabilities."""
    p = params[0]
    if p.type.shape[-1] is not None:
        return p.type.shape[-1]
    return int(pytensor.function(inputs, p.shape[-1], on_unused_input="ignore")(*first_values))


def _draw_components(predictive, params, n_classes, statistic):
    """Per-draw components: the family's parameters, or one named statistic."""
    likelihood = predictive.likelihood
    if statistic is not None:
        return [statistic_expression(likelihood, list(predictive.parameters), params, statistic)]
    return [
        c for p in likelihood.draw_parameters(*params) for c in _split_components(p, n_classes)
    ]


def compile_predictive(
    predictive,
    model,
    inputs,
    data_values,
    draw_values,
    *,
    mode,
    order,
    uses_variance,
    statistic=None,
):
    """Build and compile the chunk function of ``predictive`` (see `CompiledPredictive`).

    ``inputs`` are the variables to differentiate; ``data_values`` (a dict over
    inputs and held containers) and ``draw_values`` (arrays (S, ...) per free
    RV) fix the trailing shapes the graph is compiled for. With ``statistic``
    (a name from `statistic_names`), the one component is that statistic: per
    draw, or averaged over draws in moment mode.
    """
    params = _parameters_given_observed(predictive, model)
    free_rvs = free_variables(model, params)
    data_variables = data_variables_of(predictive, model, inputs)
    symbols = {v: _symbolic_like(v, data_values[v]) for v in data_variables}
    placeholders = {
        rv: pt.tensor(dtype=rv.dtype, shape=np.shape(values)[1:], name=rv.name)
        for rv, values in zip(free_rvs, draw_values, strict=True)
    }
    params = graph_replace(params, {**symbols, **placeholders}, strict=False)
    likelihood = predictive.likelihood
    n_classes = None
    if likelihood.support == "categorical":
        n_classes = _class_count(
            params,
            [symbols[v] for v in data_variables] + list(placeholders.values()),
            [data_values[v] for v in data_variables]
            + [np.asarray(values[0]) for values in draw_values],
        )
    unbatched_inputs = [symbols[x] for x in inputs]
    if mode == "draw":
        # decided before broadcasting, whose shape graphs would link every parameter to X
        varying = [
            i
            for i, c in enumerate(_draw_components(predictive, params, n_classes, statistic))
            if depends_on(c, unbatched_inputs)
        ]
    params = pt.broadcast_arrays(*params)

    batch = {placeholders[rv]: _batched(rv) for rv in free_rvs}
    if mode == "draw":
        batch.update({s: _batched(s) for s in unbatched_inputs})
    wrts = [batch.get(s, s) for s in unbatched_inputs]
    params = pt.broadcast_arrays(*vectorize_graph(params, batch))
    one_dimensional = [np.ndim(data_values[x]) == 1 for x in inputs]
    n_features = sum(
        1 if flat else np.shape(data_values[x])[1]
        for x, flat in zip(inputs, one_dimensional, strict=True)
    )

    if mode == "moment" and statistic is not None:
        components = [c.mean(0) for c in _draw_components(predictive, params, None, statistic)]
        varying = [0]
    elif mode == "moment":
        components = _moment_components(likelihood, params, uses_variance, n_classes)
        varying = list(range(len(components)))
    else:
        components = _draw_components(predictive, params, n_classes, statistic)
    phi = pt.stack(components, axis=-1)
    components = [components[i] for i in varying]

    fixed = likelihood.fixed(*params)
    outputs = [phi, *_derivatives(components, wrts, one_dimensional, n_features, order)]
    outputs += list(fixed.values())
    function = pytensor.function(
        [batch.get(symbols[v], symbols[v]) for v in data_variables]
        + [batch[placeholders[rv]] for rv in free_rvs],
        outputs,
        on_unused_input="ignore",
        mode=_compile_mode(),
    )
    return CompiledPredictive(
        function=function,
        data_variables=data_variables,
        free_rvs=free_rvs,
        inputs=list(inputs),
        mode=mode,
        order=order,
        varying=varying,
        fixed_names=list(fixed),
        settings=dict(mode=mode, order=order, uses_variance=uses_variance, statistic=statistic),
    )

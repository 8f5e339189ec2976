"""Compile a predictive into one function over a chunk of posterior draws.

The free random variables are replaced by placeholders with a leading draw axis
(``vectorize_graph``), the data containers by symbolic inputs, so one compiled
function serves every chunk of draws and every set of points. Per-point
derivatives use locality: the parameters at point i depend only on row i of
the inputs, so ``grad(λ.sum(), X)[i] = ∂λ_i/∂x_i`` for all points at once.
"""

from dataclasses import dataclass, replace
from functools import partial

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.graph.basic import Constant
from pytensor.graph.replace import graph_replace, vectorize_graph
from pytensor.graph.traversal import graph_inputs

from pm_sens.graph.compile.backends import compiled_function
from pm_sens.graph.compile.compiled import OBSERVED_Y, CompiledPredictive, WhitenedNorm
from pm_sens.graph.compile.derivatives import over_components, point_derivatives, whitened_norm
from pm_sens.graph.compile.functions import evaluate, without_traces
from pm_sens.graph.compile.nodes import broadcast_together, depends_on, finite_where_roots_are
from pm_sens.graph.likelihoods.closed_forms import VECTOR_SUPPORTS, statistic_expression
from pm_sens.graph.likelihoods.generic.statistics import GenericStatistics, by_rule
from pm_sens.graph.model.queries import symbolic_tensor
from pm_sens.graph.predictive import (
    data_variables_of,
    parameters_given_observed,
    required_free_rvs,
)


def _symbolic_like(var, value):
    """A symbolic tensor standing for ``var``, with the trailing shape of ``value``."""
    value = np.asarray(value)
    shape = (None, *value.shape[1:]) if value.ndim else ()
    return symbolic_tensor(var.name, var.dtype, shape)


def _batched(var):
    """``var``'s type with a leading draw axis."""
    return symbolic_tensor(var.name, var.dtype, (None, *var.type.shape))


def _split_components(expr, n_classes):
    """List of per-point scalar components: the class axis, if any, split up."""
    if n_classes is None:
        return [expr]
    return [expr[..., k] for k in range(n_classes)]


def _moment_components(likelihood, params, second_moment, n_classes):
    """The chunk's mixture moments, and which of them to differentiate.

    ``second_moment`` (`Family.second_moment`): ``"variance"`` adds the law of
    total variance, ``"scale2"`` the same with each draw's squared scale in its
    place, then the mean tail weight ``1/ν``, not differentiated.
    """
    mean, variance = likelihood.moments(*params)
    if second_moment == "scale2":
        variance, inverse_nu = likelihood.heavy_tails(*params)
    chunk_mean = mean.mean(0)
    if likelihood.support == "multivariate":  # raw moments: as many as the mean says
        n_classes = chunk_mean.type.shape[-1]
    components = _split_components(chunk_mean, n_classes)
    varying = list(range(len(components)))
    if likelihood.complement is not None and not second_moment:
        components.append(likelihood.complement(*params).mean(0))
    if second_moment:
        # law of total variance within the chunk (chunks merge in measures.mixture)
        total = variance.mean(0) + ((mean - chunk_mean) ** 2).mean(0)
        components.append(total)
        varying.append(len(components) - 1)
    if second_moment == "scale2":
        components.append(pt.broadcast_to(inverse_nu, mean.shape).mean(0))
    return components, varying


def _class_count(params, inputs, first_values):
    """Number of categories of a categorical likelihood's probabilities."""
    p = params[0]
    if p.type.shape[-1] is not None:
        return p.type.shape[-1]
    return int(evaluate(p.shape[-1], inputs, first_values))


def _draw_components(predictive, params, n_classes, statistic):
    """Per-draw components: the family's parameters, or one named statistic."""
    likelihood = predictive.likelihood
    if statistic is not None:
        value = statistic_expression(likelihood, list(predictive.parameters), params, statistic)
        # a vector outcome's statistic: one component per outcome
        return _split_components(value, (predictive.outcome_shape or [None])[0])
    return [
        c for p in likelihood.draw_parameters(*params) for c in _split_components(p, n_classes)
    ]


@without_traces
def compile_predictive(
    predictive,
    model,
    inputs,
    data_values,
    draw_values,
    *,
    mode,
    order,
    second_moment,
    statistic=None,
    statistics=(),
    draw_sums=(),
    points_per_copy=None,
    parameters=True,
    backend="numba",
    dtype="float64",
    whitened=False,
    forward=None,
    dependence=None,
    colors=1,
):
    """Build and compile the chunk function of ``predictive`` (see `CompiledPredictive`).

    ``inputs`` are the variables to differentiate; ``data_values`` (a dict over
    inputs and held containers) and ``draw_values`` (arrays (S, ...) per free
    RV) fix the trailing shapes the graph is compiled for. With ``statistic``
    (a name from `statistic_names`), the one component is that statistic: per
    draw, or averaged over draws in moment mode. ``statistics`` (names, draw
    mode, order 0, closed-form likelihoods): per-draw statistics returned
    alongside ``phi``, from the same evaluation; ``parameters=False`` leaves
    ``phi`` out (no stacked copy of the parameters when the caller needs only
    the statistics). ``draw_sums`` (same settings): sums over the chunk's draws
    computed in the graph, returned after the statistics (`_draw_sums`), so that
    a device returns arrays of the points' size only (``points_per_copy``: the
    points of each copy of them the rows hold, for per-copy means).
    ``backend``: one of `pm_sens.graph.compile.rewrites.BACKENDS`, or
    ``"jax"``; ``dtype``: what a JAX graph computes in (`JaxGraphFunction`).
    ``whitened`` (draw mode, order 1): a `WhitenedNorm`, R-sens in the graph,
    with ``forward`` the same predictive compiled with order 0 (built if
    None); ``"means"``: each draw's mean of it over the points. ``colors`` > 1
    (a model whose rows depend on other rows' inputs as ``dependence``, a
    `pm_sens.graph.model.dependence.Dependence`, says; derivatives, not
    whitened): the derivatives of the rows of each colour
    (`pm_sens.graph.compile.derivatives.point_derivatives`), with the
    parameters of the rows they belong to.
    """
    if colors > 1 and (order == 0 or whitened):
        raise NotImplementedError("colored derivatives are derivatives, not whitened")
    # the per-draw graph of the same predictive, which some settings are built on
    per_draw_graph = partial(
        compile_predictive,
        predictive,
        model,
        inputs,
        data_values,
        draw_values,
        mode="draw",
        second_moment=None,
        dtype=dtype,
    )
    if by_rule(predictive.likelihood, mode, statistic):
        draws = per_draw_graph(order=order, backend=backend, dependence=dependence, colors=colors)
        return GenericStatistics(
            draws,
            predictive.likelihood.generic,
            mode=mode,
            order=order,
            second_moment=second_moment,
            statistic=statistic,
        )
    graph = _chunk_graph(
        predictive, model, inputs, data_values, draw_values, mode, order, statistic
    )
    phi, all_components, varying = _components(predictive, graph, mode, second_moment, statistic)
    components = [all_components[i] for i in varying]
    likelihood = predictive.likelihood
    fixed = likelihood.fixed(*graph.params) if mode == "draw" or likelihood.matched_fixed else {}
    # returned beside the parameters only, which they complete (a truncation's
    # bounds, per draw and point: as large as a parameter)
    returned_fixed = fixed if parameters or whitened else {}
    extra_arguments, writes_in_place = [], False
    graph = graph.with_observed_y() if "log_density" in draw_sums else graph
    if whitened:
        outputs, extra_arguments, writes_in_place, scales_in_graph = _whitened_outputs(
            graph, likelihood, all_components, varying, fixed, backend, whitened
        )
    else:
        outputs = [phi] if parameters else []
        outputs += _derivative_outputs(graph, components, mode, order, backend, colors)
        names = list(predictive.parameters)
        # separate arrays: a statistic that is also a parameter is not copied
        outputs += [statistic_expression(likelihood, names, graph.params, n) for n in statistics]
        outputs += _draw_sums(
            likelihood,
            names,
            graph.params,
            all_components,
            draw_sums,
            phi.shape[1:3],
            points_per_copy,
            graph.observed,
            fixed,
        )
        outputs += list(returned_fixed.values())
    function, backend = compiled_function(
        graph.arguments + extra_arguments, graph.with_inputs_per_draw(outputs), backend, dtype
    )
    compiled = dict(
        function=function,
        data_variables=graph.data_variables,
        free_rvs=graph.free_rvs,
        inputs=list(inputs),
        mode=mode,
        order=order,
        varying=varying,
        fixed_names=list(returned_fixed),
        settings=dict(
            mode=mode,
            order=order,
            second_moment=second_moment,
            statistic=statistic,
            statistics=tuple(statistics),
            draw_sums=tuple(draw_sums),
            points_per_copy=points_per_copy,
            parameters=parameters,
            backend=backend,
            dtype=dtype,
            dependence=dependence,
            colors=colors,
        ),
        fixed_array_shapes=graph.fixed_array_shapes,
    )
    if not whitened:
        return CompiledPredictive(**compiled)
    compiled["settings"]["whitened"] = whitened
    return WhitenedNorm(
        **compiled,
        # forward graphs run in NumPy (`pm_sens._run.compiling.backend_for`)
        forward=forward or per_draw_graph(order=0, backend="python"),
        family=likelihood.draw_family,
        n_features=graph.n_features,
        writes_in_place=writes_in_place,
        point_means=whitened == "means",
        scales_in_graph=scales_in_graph,
    )


@dataclass
class _ChunkGraph:
    """The predictive's parameters as a graph of a chunk of draws and the points.

    ``params`` have a leading draw axis and broadcast shapes; ``arguments``
    are the function's inputs (data symbols, then the draws' placeholders);
    ``wrts`` the inputs to differentiate, which in draw mode with derivatives
    get a draw axis (``per_draw``: symbol → its per-draw stand-in), replaced by
    a broadcast in the outputs (`with_inputs_per_draw`) so callers pass them once.
    """

    params: list
    arguments: list
    wrts: list
    per_draw: dict
    n_draws: object
    one_dimensional: list
    n_features: int
    n_classes: int | None
    data_variables: list
    free_rvs: list
    #: draw mode: the components (parameters or the statistic) that depend on the inputs
    varying: list | None
    #: shapes of the fixed (non-pm.Data) arrays the parameters hold, for messages
    fixed_array_shapes: list
    #: the observed y at each point, a vector argument (`with_observed_y`), or None
    observed: object = None

    def with_observed_y(self):
        """The same graph taking the observed y at each point after the model's data.

        Its key among the data is `OBSERVED_Y`.
        """
        observed = pt.vector("observed_y", dtype="float64")
        n_data = len(self.data_variables)
        return replace(
            self,
            arguments=[*self.arguments[:n_data], observed, *self.arguments[n_data:]],
            data_variables=[*self.data_variables, OBSERVED_Y],
            observed=observed,
        )

    def with_inputs_per_draw(self, outputs):
        """``outputs`` with the per-draw inputs as broadcasts of the inputs."""
        if not self.per_draw:
            return outputs
        return graph_replace(
            outputs,
            {b: pt.broadcast_to(s, (self.n_draws, *s.shape)) for s, b in self.per_draw.items()},
            strict=False,
        )


def _chunk_graph(predictive, model, inputs, data_values, draw_values, mode, order, statistic):
    """The predictive's parameters over symbolic data and a chunk of draws (`_ChunkGraph`)."""
    params = parameters_given_observed(predictive, model)
    free_rvs = required_free_rvs(predictive, model, params)
    data_variables = data_variables_of(predictive, model, inputs)
    symbols = {v: _symbolic_like(v, data_values[v]) for v in data_variables}
    placeholders = {
        rv: symbolic_tensor(rv.name, rv.dtype, np.shape(values)[1:])
        for rv, values in zip(free_rvs, draw_values, strict=True)
    }
    params = graph_replace(params, {**symbols, **placeholders}, strict=False)
    n_classes = None
    if predictive.likelihood.support in ("categorical", *VECTOR_SUPPORTS):
        n_classes = _class_count(
            params,
            [symbols[v] for v in data_variables] + list(placeholders.values()),
            [data_values[v] for v in data_variables]
            + [np.asarray(values[0]) for values in draw_values],
        )
    unbatched_inputs = [symbols[x] for x in inputs]
    varying = None
    if mode == "draw":
        # decided before broadcasting, whose shape graphs would link every parameter to X
        components = _draw_components(predictive, params, n_classes, statistic)
        varying = [i for i, c in enumerate(components) if depends_on(c, unbatched_inputs)]
    params = broadcast_together(params)
    batch = {placeholders[rv]: _batched(rv) for rv in free_rvs}
    per_draw = {s: _batched(s) for s in unbatched_inputs} if mode == "draw" and order else {}
    batch.update(per_draw)
    one_dimensional = [np.ndim(data_values[x]) == 1 for x in inputs]
    fixed_array_shapes = sorted(
        {
            c.data.shape
            for c in graph_inputs(params)
            if isinstance(c, Constant) and np.ndim(c.data) and c.data.shape[0] > 1
        }
    )
    return _ChunkGraph(
        params=broadcast_together(vectorize_graph(params, batch)),
        arguments=[symbols[v] for v in data_variables]
        + [batch[placeholders[rv]] for rv in free_rvs],
        wrts=[batch.get(s, s) for s in unbatched_inputs],
        per_draw=per_draw,
        n_draws=batch[placeholders[free_rvs[0]]].shape[0] if free_rvs else None,
        one_dimensional=one_dimensional,
        n_features=sum(
            1 if flat else np.shape(data_values[x])[1]
            for x, flat in zip(inputs, one_dimensional, strict=True)
        ),
        n_classes=n_classes,
        data_variables=data_variables,
        free_rvs=free_rvs,
        varying=varying,
        fixed_array_shapes=fixed_array_shapes,
    )


def _components(predictive, graph, mode, second_moment, statistic):
    """``phi`` (the components stacked), the components, and the indices of those that vary."""
    if mode == "moment" and statistic is not None:
        components = [
            c.mean(0) for c in _draw_components(predictive, graph.params, None, statistic)
        ]
        varying = list(range(len(components)))
    elif mode == "moment":
        components, varying = _moment_components(
            predictive.likelihood, graph.params, second_moment, graph.n_classes
        )
    else:
        components = _draw_components(predictive, graph.params, graph.n_classes, statistic)
        varying = graph.varying
    # draw mode: components first, each one contiguous (`CompiledPredictive`)
    phi = pt.stack(components, axis=0 if mode == "draw" else -1)
    return phi, components, varying


def _draw_sums(
    likelihood, parameter_names, params, components, names, shape, points_per_copy, observed, fixed
):
    """Per name, a sum over the chunk's draws (or points) of per-draw values.

    ``"entropy"``: the per-draw entropies summed (N,). ``"mixture"``: the
    chunk's mixture mean and variance (N, 2), by the law of total variance
    over its draws (as `pm_sens.measures.mixture.MixtureMoments.add_draws`
    forms them from per-draw values). ``"table"``: a discrete family's pmf
    tables summed (N, W), then its entropies summed (N, 1)
    (`Family.graph_pmf_table` of the family's ``components``); ``"log_table"``:
    the log of each count's pmf summed (N, W) (`Family.graph_log_pmf_table`),
    as `pm_sens.measures.mixture_density.logsumexp_over_draws` sums a log
    density; ``"log_density"``: the log density at the ``observed`` y (a
    vector (N,) of the graph) summed so (N,) (`Family.graph_log_density`, given
    the ``fixed`` parameters: the Wald's shift).
    ``"mean_sum"``:
    the per-draw means summed (N,); ``"point_means"``: each draw's mean of them
    over the points of each copy (S, N / ``points_per_copy``), as
    `pm_sens.measures.permutation.MeanCurves` takes them. Each value is
    broadcast to the chunk's ``shape`` (draws, points) first: one that does not
    vary with the draws still counts once per draw.
    """

    def per_draw(name):
        value = statistic_expression(likelihood, parameter_names, params, name)
        return pt.broadcast_to(value, shape)

    outputs = []
    for name in names:
        if name == "entropy":
            outputs.append(per_draw("entropy").sum(0))
        elif name == "table":
            pmf, entropy = likelihood.draw_family.graph_pmf_table(pt, *components)
            sums = [pt.broadcast_to(x, shape).sum(0) for x in (*pmf, entropy)]
            outputs.append(pt.stack(sums, -1))
        elif name == "log_table":
            log_pmf = likelihood.draw_family.graph_log_pmf_table(pt, *components)
            outputs.append(
                pt.stack([_logsumexp_over_draws(pt.broadcast_to(x, shape)) for x in log_pmf], -1)
            )
        elif name == "log_density":
            cells = likelihood.draw_family.graph_log_density(pt, observed, *components, **fixed)
            outputs.append(_logsumexp_over_draws(pt.broadcast_to(cells, shape)))
        elif name == "mean_sum":
            outputs.append(per_draw("mean").sum(0))
        elif name == "point_means":
            mean = per_draw("mean")
            outputs.append(mean.reshape((shape[0], -1, points_per_copy)).mean(2))
        else:
            mean, variance = per_draw("mean"), per_draw("variance")
            center = mean.mean(0)
            spread = pt.sqr(mean - center).mean(0)
            outputs.append(pt.stack([center, variance.mean(0) + spread], -1))
    return outputs


def _logsumexp_over_draws(x):
    """``log Σ_s exp(x[s])`` (N,) of x (S, N), scaled by each point's largest.

    A point whose terms are all −inf gets −inf, as
    `pm_sens.measures.mixture_density.logsumexp_over_draws` gives it.
    """
    largest = x.max(0)
    shift = pt.switch(pt.isinf(largest), 0.0, largest)
    return pt.log(pt.exp(x - shift).sum(0)) + shift


def _derivative_outputs(graph, components, mode, order, backend, colors):
    """The components' derivatives up to ``order``, as the compiled function returns them."""
    outputs = []
    batched = backend == "python"
    for derivatives in point_derivatives(
        components, graph.wrts, graph.one_dimensional, graph.n_features, order, batched, colors
    ):
        # moment mode: small (M, N, D[, D]) arrays, merged across chunks as one
        outputs += [pt.stack(derivatives)] if mode == "moment" else derivatives
    return outputs


def _sums_showing_undefined_points(graph, components):
    """Each draw's sum of each component over the points, as a list of one output or none.

    The sum is nan where the model is undefined at a point, which the
    derivatives may not show (log(u) is nan where u < 0, its derivative u'/u
    finite). A component made of the inputs and draws by sums and products
    (μ = X b) is finite where they are, so it is not summed (both are checked).
    """
    draws = graph.arguments[len(graph.data_variables) :]
    roots = [*graph.wrts, *graph.per_draw, *draws]
    checked = [c for c in components if not finite_where_roots_are(c, roots)]
    return [pt.stack([c.sum(axis=-1) for c in checked], -1)] if checked else []


def _whitened_outputs(graph, likelihood, all_components, varying, fixed, backend, whitened):
    """Draw-mode R-sens in the graph: outputs, extra arguments, in place, scales in graph.

    ``all_components``: the parameters, of which those listed in ``varying``
    are differentiated. Their whitening scales are expressions of the graph
    where the family writes them so (`Family.graph_scales`) and no parameter
    is held ``fixed``: the forward pass and NumPy's whitening are then not
    needed, and each draw's sums of the parameters over the points come back
    to show undefined points (`_sums_showing_undefined_points`). Otherwise an
    argument (S, N, K), computed from the parameters in NumPy (`WhitenedNorm`).
    ``whitened``: ``"means"`` for each draw's mean over the points.
    """
    scales = None if fixed else likelihood.draw_family.graph_scales(pt, all_components, varying)
    checks = [] if scales is None else _sums_showing_undefined_points(graph, all_components)
    in_graph = scales is not None
    components = [all_components[i] for i in varying]
    extra = []
    if scales is None:
        given = pt.tensor("scales", dtype="float64", shape=(None, None, len(components)))
        scales, extra = [given[..., m] for m in range(len(components))], [given]
    grads = over_components(
        lambda c: pytensor.grad(c.sum(), graph.wrts, disconnected_inputs="ignore"),
        components,
        batched=backend == "python",
    )
    norm = whitened_norm(grads, scales, graph.one_dimensional)
    if whitened == "means":
        return [norm.mean(axis=1), *checks], extra, False, in_graph
    if backend != "numba":
        return [norm, *checks], extra, False, in_graph
    # one compiled elementwise loop computes the norm (several 1-D inputs' like
    # columns too: `local_join_of_like_elementwise`): a select on a flag known
    # only when called (always false) lets PyTensor's inplace rewrite run that
    # loop in the caller's (destroyable) array, not a new one copied afterwards;
    # where no loop computes it (other columns joined), the select is dropped
    # (`local_select_only_into_a_loop`). NumPy's linker computes a new array and
    # copies it into the destroyed one (twice when it is a view).
    target = pt.tensor("target", dtype="float64", shape=(None, None, graph.n_features))
    keep = pt.scalar("keep", dtype="bool")
    keep.tag.always_false = True
    extra += [pytensor.In(target, mutable=True), keep]
    return [pt.switch(keep, target, norm), *checks], extra, True, in_graph

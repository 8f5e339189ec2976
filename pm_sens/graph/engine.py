"""Compile a predictive into one function over a chunk of posterior draws.

The free random variables are replaced by placeholders with a leading draw axis
(``vectorize_graph``), the data containers by symbolic inputs, so one compiled
function serves every chunk of draws and every set of points. Per-point
derivatives use locality: the parameters at point i depend only on row i of
the inputs, so ``grad(λ.sum(), X)[i] = ∂λ_i/∂x_i`` for all points at once.
"""

import threading
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.graph.basic import Constant
from pytensor.graph.replace import graph_replace, vectorize_graph
from pytensor.graph.traversal import graph_inputs

from pm_sens.graph.chunk import ChunkOutputs
from pm_sens.graph.likelihoods import statistic_expression
from pm_sens.graph.model_queries import (
    data_containers,
    depends_on,
    free_variables,
    observed_ancestors,
    symbolic_tensor,
)
from pm_sens.graph.rewrites import compile_mode, runs_element_by_element


@dataclass
class CompiledPredictive:
    """A compiled predictive and the order of the arrays it takes and returns.

    Calling it with ``(data values, draw values)`` returns a
    `pm_sens.graph.chunk.ChunkOutputs`: ``jac`` and ``hess`` up to ``order``,
    draw-mode ones for the components listed in ``varying`` (separate arrays:
    stacking them would copy the largest arrays of the call; per-draw ``phi``
    is a view of an (M, S, N) array, each component contiguous, as NumPy reads
    it fastest after, where strided it was 3–4x slower). Moment-mode
    derivatives put the parameter axis first, so each parameter's slice is
    contiguous for the quadratic forms of `pm_sens.measures.rsens`.
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
    #: shapes of the fixed (non-pm.Data) arrays the parameters hold, for messages
    fixed_array_shapes: list = field(default_factory=list)
    #: a compiled function keeps its inputs and outputs in shared storage:
    #: one call at a time (dask may run blocks in threads)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def statistic_names(self):
        """Names of the per-draw statistics returned alongside ``phi``."""
        return self.settings.get("statistics", ())

    def __call__(self, data_values, draw_values):
        """Evaluate on data arrays (in ``data_variables`` order) and draw arrays."""
        rest = list(self.run(*data_values, *draw_values))
        result = ChunkOutputs()
        if self.settings.get("parameters", True):
            phi = rest.pop(0)
            result.phi = np.moveaxis(phi, 0, -1) if self.mode == "draw" else phi
        width = 1 if self.mode == "moment" else len(self.varying)
        for name in ["jac", "hess"][: self.order]:
            parts, rest = rest[:width], rest[width:]
            setattr(result, name, parts[0] if self.mode == "moment" else parts)
        width = len(self.statistic_names)
        result.statistics = dict(zip(self.statistic_names, rest[:width], strict=True))
        result.fixed = dict(zip(self.fixed_names, rest[width:], strict=True))
        return result

    def run(self, *arrays):
        """The compiled function's outputs on ``arrays``, with a clear shape error."""
        # one array type per argument (Numba compiles the graph again for each
        # new combination of memory layout and write flag)
        arguments = [np.require(a, requirements=("A", "C", "W")) for a in arrays]
        with self.lock:
            try:
                return self.function(*arguments)
            except ValueError as error:
                if "shape" not in str(error) or not self.fixed_array_shapes:
                    raise
                raise ValueError(
                    "the likelihood's parameters cannot be evaluated at these points: they "
                    f"hold fixed arrays of shapes {self.fixed_array_shapes} (NumPy values in "
                    "the model, not pm.Data). An array with one value per observation cannot "
                    "follow points of another number: put it in a pm.Data container and give "
                    f"its values in points= ({error})"
                ) from None


@dataclass
class WhitenedNorm(CompiledPredictive):
    """Draw-mode R-sens at α = 1 computed inside the graph, from parameters computed first.

    Calling it returns what the forward function (``forward``, order 0) returns
    plus ``norm`` (S, N, D): ``sqrt(Σ_m (s_m ∂φ_m)²)`` with ``s_m = sqrt(I_mm)``
    (`pm_sens.families.Family.whitening` of the forward's parameters, in NumPy),
    the derivatives never leaving the graph. ``norm`` is None where the family's
    information is not diagonal on the varying parameters. With more than one
    varying parameter the squares may over- or underflow: `norm_is_exact` says
    whether the chunk's values can be used as they are.
    """

    forward: CompiledPredictive | None = None
    family: object = None
    n_features: int = 0
    #: whether the graph takes an array to compute ``norm`` in (compiled graphs; it is
    #: returned where one loop computes the norm, a new array where columns are joined)
    writes_in_place: bool = False

    def __call__(self, data_values, draw_values, out=None):
        """The forward function's outputs and ``norm``, on data and draw arrays.

        ``out`` (S, N, D), C-contiguous: an array ``norm`` may be computed in
        (it is where `writes_in_place`); else ``norm`` is a new array.
        """
        result = self.forward(data_values, draw_values)
        phi, fixed = result.per_draw_parameters(len(draw_values[0]))
        scales, corr = self.family.whitening(phi, self.varying, **fixed)
        if corr is not None:
            return result
        arguments = [*data_values, *draw_values, scales]
        if self.writes_in_place:
            if out is None:
                out = np.empty((*phi.shape[:-1], self.n_features))
            arguments += [out, False]
        (result.norm,) = self.run(*arguments)
        return result

    def norm_is_exact(self, norm):
        """Whether no square in ``norm`` over- or underflowed (nor any value is nan)."""
        if len(self.varying) == 1:  # |s ∂φ|: no squares
            return bool(norm.max(initial=0.0) < np.inf)
        smallest, largest = norm.min(initial=np.inf), norm.max(initial=0.0)
        return bool(smallest >= _SMALLEST_SAFE_NORM and largest < np.inf)


#: below this, a sum of squares under the root may have lost digits to underflow
_SMALLEST_SAFE_NORM = 1e-140


def _whitened_norm(grads, scales, one_dimensional):
    """``sqrt(Σ_m (s_m ∂φ_m)²)``, or ``|s ∂φ|`` for one parameter: (S, N, D).

    ``grads[m]`` holds the derivatives of the m-th varying parameter with
    respect to each input ((S, N) for a 1-D input, (S, N, D_x) for a 2-D one),
    ``scales`` (S, N, K) the K varying parameters' scales. The norm is taken
    per input, then the columns are put side by side.
    """
    columns = []
    for i, flat in enumerate(one_dimensional):
        scale = [scales[..., m] if flat else scales[..., m, None] for m in range(len(grads))]
        u = [g[i] * s for g, s in zip(grads, scale, strict=True)]
        columns.append(pt.abs(u[0]) if len(u) == 1 else pt.sqrt(pt.add(*(x**2 for x in u))))
    return _feature_columns(columns, one_dimensional, features_last=True)


def _symbolic_like(var, value):
    """A symbolic tensor standing for ``var``, with the trailing shape of ``value``."""
    value = np.asarray(value)
    shape = (None, *value.shape[1:]) if value.ndim else ()
    return symbolic_tensor(var.name, var.dtype, shape)


def _batched(var):
    """``var``'s type with a leading draw axis."""
    return symbolic_tensor(var.name, var.dtype, (None, *var.type.shape))


def _point_gradient(expr, wrts, one_dimensional):
    """``∂expr_i/∂x_i`` for every point, one column per feature: shape (..., N, D)."""
    grads = pytensor.grad(expr.sum(), wrts, disconnected_inputs="ignore")
    return _feature_columns(grads, one_dimensional)


def _feature_columns(grads, one_dimensional, features_last=False):
    """Gradients per input as one array (..., N, D).

    A 1-D input's gradient is (..., N), a 2-D one's (..., N, D_x). 1-D inputs'
    columns are stacked in front and viewed as (..., N, D), unless
    ``features_last`` asks for an array laid out as (..., N, D).
    """
    if all(one_dimensional) and not features_last:
        # stacked in front, each column one contiguous block, then viewed as (..., N, D)
        return pt.moveaxis(pt.stack(grads), 0, -1)
    columns = [g[..., None] if flat else g for g, flat in zip(grads, one_dimensional, strict=True)]
    return pt.concatenate(columns, axis=-1) if len(columns) > 1 else columns[0]


def _split_components(expr, n_classes):
    """List of per-point scalar components: the class axis, if any, split up."""
    if n_classes is None:
        return [expr]
    return [expr[..., k] for k in range(n_classes)]


def _function(arguments, outputs, backend):
    return pytensor.function(
        arguments, outputs, on_unused_input="ignore", mode=compile_mode(backend)
    )


def _derivatives(components, wrts, one_dimensional, n_features, order, batched):
    """Per order up to ``order``, the list of each component's derivatives.

    ``batched``: second derivatives from one backward pass batched over the D
    rows (`_point_hessian`), a graph D times smaller to rewrite, for graphs run
    in NumPy; else from D backward passes, which compiled run faster (the
    batched pass multiplies every row by the whole identity).
    """
    if order == 0:
        return []
    jac = [_point_gradient(c, wrts, one_dimensional) for c in components]
    if order == 1:
        return [jac]
    if batched:
        return [jac, [_point_hessian(j, wrts, one_dimensional, n_features) for j in jac]]
    rows = range(n_features)
    hess = [
        pt.stack([_point_gradient(j[..., d], wrts, one_dimensional) for d in rows], axis=-2)
        for j in jac
    ]
    return [jac, hess]


def _point_hessian(jac, wrts, one_dimensional, n_features):
    """``∂jac_d/∂x_e`` for every point: shape (..., N, D, D).

    One backward pass with a tangent over the D rows, batched over the rows by
    ``vectorize_graph`` (a graph of one pass's size, not D passes).
    """
    tangent = pt.vector("tangent", dtype=jac.dtype, shape=(n_features,))
    grads = pytensor.grad((jac * tangent).sum(), wrts, disconnected_inputs="ignore")
    rows = []
    for g in grads:
        row = vectorize_graph(g, {tangent: pt.eye(n_features, dtype=jac.dtype)})
        # a gradient that does not depend on the tangent is the same for every row
        rows.append(row if row.ndim > g.ndim else pt.broadcast_to(row, (n_features, *g.shape)))
    return pt.moveaxis(_feature_columns(rows, one_dimensional), 0, -2)


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
    candidates = dict.fromkeys(
        [*predictive.inputs, *data_containers(model, params), *predictive.row_constants]
    )
    return list(inputs) + [v for v in candidates if v not in inputs]


def required_free_rvs(predictive, model):
    """The model's free RVs whose posterior draws the predictive needs."""
    return free_variables(model, _parameters_given_observed(predictive, model))


def _class_count(params, inputs, first_values):
    """Number of categories of a categorical likelihood's probabilities."""
    p = params[0]
    if p.type.shape[-1] is not None:
        return p.type.shape[-1]
    shape = pytensor.function(inputs, p.shape[-1], on_unused_input="ignore", mode="FAST_COMPILE")
    return int(shape(*first_values))


def _draw_components(predictive, params, n_classes, statistic):
    """Per-draw components: the family's parameters, or one named statistic."""
    likelihood = predictive.likelihood
    if statistic is not None:
        return [statistic_expression(likelihood, list(predictive.parameters), params, statistic)]
    return [
        c for p in likelihood.draw_parameters(*params) for c in _split_components(p, n_classes)
    ]


class GenericStatistics:
    """The mean and variance of a likelihood without closed forms, as a compiled predictive.

    Evaluates the draw-mode graph of the likelihood's leaf parameters (and their
    derivatives in the inputs) and turns it, per draw, into ``E[y]`` and
    ``Var[y]`` and their derivatives by the chain rule through the summation or
    quadrature rule of `pm_sens.graph.generic` (``∂E[f]/∂φ = E[f s]``). Returns
    what `CompiledPredictive` returns for the same settings: chunk moments in
    moment mode, the per-draw statistic in draw mode.
    """

    def __init__(self, draws, generic, *, mode, order, second_moment, statistic):
        self.draws, self.generic = draws, generic
        self.data_variables, self.free_rvs, self.inputs = (
            draws.data_variables,
            draws.free_rvs,
            draws.inputs,
        )
        self.mode, self.order, self.second_moment, self.statistic = (
            mode,
            order,
            second_moment,
            statistic,
        )
        n_components = 2 if mode == "moment" and statistic is None and second_moment else 1
        self.varying = list(range(n_components))
        self.fixed_names = []
        self.settings = dict(
            mode=mode,
            order=order,
            second_moment=second_moment,
            statistic=statistic,
            backend=draws.settings["backend"],
        )

    def __call__(self, data_values, draw_values):
        """Evaluate on data arrays (in ``data_variables`` order) and draw arrays."""
        n_draws = len(draw_values[0])
        out = self.draws(data_values, draw_values)
        phi, _ = out.per_draw_parameters(n_draws)
        raw = self.generic.raw_moments(phi, self.draws.varying, self.order)
        # per draw: values (S, N, 2) of (E y, E y²), derivatives (S, N, 2, D[, D]) in x
        values, derivatives = raw[0], []
        if self.order >= 1:
            derivatives.append(np.einsum("snkv,vsnd->snkd", raw[1], out.jac))
        if self.order == 2:
            derivatives.append(
                np.einsum("snkv,vsnde->snkde", raw[1], out.hess)
                + np.einsum("snkvw,vsnd,wsne->snkde", raw[2], out.jac, out.jac)
            )
        if self.mode == "moment" and self.statistic is None:
            # mixture over the chunk's draws: mean m and variance E[y²] − m²
            values = values.mean(0)
            derivatives = [d.mean(0) for d in derivatives]
            stats = _mean_and_variance(values, derivatives)
            if not self.second_moment:
                stats = [a[..., :1] for a in stats]
        else:
            stats = _mean_and_variance(values, derivatives)
            stats = [
                a[..., ["mean", "variance"].index(self.statistic or "mean")][..., None]
                for a in stats
            ]
            if self.mode == "moment":
                stats = [a.mean(0) for a in stats]
        phi, *derivatives = stats
        # the parameter axis first, as `CompiledPredictive` returns it
        derivatives = [np.moveaxis(d, -1, 0) for d in derivatives]
        return ChunkOutputs(phi, *derivatives)


def _mean_and_variance(raw, derivatives):
    """(E y, E y²) and their derivatives → (mean, variance) and theirs, last axis 2.

    Takes (..., 2), (..., 2, D) and (..., 2, D, D); returns values (..., 2),
    first derivatives (..., D, 2) and second (..., D, D, 2): components last.
    """
    mean, square = raw[..., 0], raw[..., 1]
    out = [np.stack([mean, square - mean**2], -1)]
    if derivatives:
        d_mean, d_square = derivatives[0][..., 0, :], derivatives[0][..., 1, :]
        out.append(np.stack([d_mean, d_square - 2 * mean[..., None] * d_mean], -1))
    if len(derivatives) == 2:
        dd_mean, dd_square = derivatives[1][..., 0, :, :], derivatives[1][..., 1, :, :]
        outer = d_mean[..., :, None] * d_mean[..., None, :]
        dd_var = dd_square - 2 * (outer + mean[..., None, None] * dd_mean)
        out.append(np.stack([dd_mean, dd_var], -1))
    return out


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
    parameters=True,
    backend="numba",
    whitened=False,
    forward=None,
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
    the statistics). ``backend``: one of `pm_sens.graph.rewrites.BACKENDS`.
    ``whitened`` (draw mode, order 1): a `WhitenedNorm`, R-sens in the graph,
    with ``forward`` the same predictive compiled with order 0 (built if None).
    """
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
    )
    generic = predictive.likelihood.generic
    if generic is not None and (mode == "moment" or statistic in ("mean", "variance")):
        draws = per_draw_graph(order=order, backend=backend)
        return GenericStatistics(
            draws,
            generic,
            mode=mode,
            order=order,
            second_moment=second_moment,
            statistic=statistic,
        )
    params = _parameters_given_observed(predictive, model)
    free_rvs = free_variables(model, params)
    data_variables = data_variables_of(predictive, model, inputs)
    symbols = {v: _symbolic_like(v, data_values[v]) for v in data_variables}
    placeholders = {
        rv: symbolic_tensor(rv.name, rv.dtype, np.shape(values)[1:])
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
    # draw mode differentiates per draw: the inputs get a draw axis, as a
    # broadcast inside the graph (replaced below) so callers pass them once
    per_draw = {s: _batched(s) for s in unbatched_inputs} if mode == "draw" and order else {}
    batch.update(per_draw)
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
        components, varying = _moment_components(likelihood, params, second_moment, n_classes)
    else:
        components = _draw_components(predictive, params, n_classes, statistic)
    # draw mode: components first, each one contiguous (`CompiledPredictive`)
    phi = pt.stack(components, axis=0 if mode == "draw" else -1)
    components = [components[i] for i in varying]

    fixed = likelihood.fixed(*params) if mode == "draw" or likelihood.matched_fixed else {}
    fixed_array_shapes = sorted(
        {
            c.data.shape
            for c in graph_inputs(params)
            if isinstance(c, Constant) and np.ndim(c.data) and c.data.shape[0] > 1
        }
    )
    extra_arguments = []
    if whitened:
        scales = pt.tensor("scales", dtype="float64", shape=(None, None, len(varying)))
        grads = [pytensor.grad(c.sum(), wrts, disconnected_inputs="ignore") for c in components]
        norm = _whitened_norm(grads, scales, one_dimensional)
        extra_arguments = [scales]
        writes_in_place = backend == "numba"
        if writes_in_place:
            # one compiled elementwise loop computes the norm (several 1-D
            # inputs' like columns too: `local_join_of_like_elementwise`): a select
            # on a flag known only when called (always false) lets PyTensor's
            # inplace rewrite run that loop in the caller's (destroyable)
            # array, not a new one copied afterwards; where no loop computes
            # it (other columns joined), the select is dropped
            # (`local_select_only_into_a_loop`). NumPy's linker computes a new
            # array and copies it into the destroyed one (twice when it is a view).
            target = pt.tensor("target", dtype="float64", shape=(None, None, n_features))
            keep = pt.scalar("keep", dtype="bool")
            keep.tag.always_false = True
            extra_arguments += [pytensor.In(target, mutable=True), keep]
            norm = pt.switch(keep, target, norm)
        outputs = [norm]
    else:
        outputs = [phi] if parameters else []
        for derivatives in _derivatives(
            components, wrts, one_dimensional, n_features, order, backend == "python"
        ):
            # moment mode: small (M, N, D[, D]) arrays, merged across chunks as one
            outputs += [pt.stack(derivatives)] if mode == "moment" else derivatives
        if statistics:
            names = list(predictive.parameters)
            # separate arrays: a statistic that is also a parameter is not copied
            outputs += [statistic_expression(likelihood, names, params, n) for n in statistics]
        outputs += list(fixed.values())
    if per_draw:
        n_draws = batch[placeholders[free_rvs[0]]].shape[0]
        outputs = graph_replace(
            outputs,
            {b: pt.broadcast_to(s, (n_draws, *s.shape)) for s, b in per_draw.items()},
            strict=False,
        )
    arguments = [symbols[v] for v in data_variables] + [batch[placeholders[rv]] for rv in free_rvs]
    arguments += extra_arguments
    function = _function(arguments, outputs, backend)
    if backend == "python" and runs_element_by_element(function):
        backend = "numba"  # an op NumPy would loop over in Python: compile instead
        function = _function(arguments, outputs, backend)
    compiled = dict(
        function=function,
        data_variables=data_variables,
        free_rvs=free_rvs,
        inputs=list(inputs),
        mode=mode,
        order=order,
        varying=varying,
        fixed_names=list(fixed),
        settings=dict(
            mode=mode,
            order=order,
            second_moment=second_moment,
            statistic=statistic,
            statistics=tuple(statistics),
            parameters=parameters,
            backend=backend,
        ),
        fixed_array_shapes=fixed_array_shapes,
    )
    if not whitened:
        return CompiledPredictive(**compiled)
    if forward is None:
        # forward graphs run in NumPy (`pm_sens._runner.backend_for`)
        forward = per_draw_graph(order=0, backend="python")
    compiled["settings"]["whitened"] = True
    return WhitenedNorm(
        **compiled,
        forward=forward,
        family=likelihood.draw_family,
        n_features=n_features,
        writes_in_place=writes_in_place,
    )

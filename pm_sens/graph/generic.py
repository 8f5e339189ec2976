"""Any univariate PyMC likelihood, through PyMC's own ``logp``.

For likelihoods without closed forms in `pm_sens.families` — mixtures,
zero-inflated and hurdle families, censored and truncated likelihoods, a
``pm.CustomDist`` with only a ``logp``, and the other univariate
distributions — the per-draw predictive at a point is described by its
*leaf parameters*: the parameters of the distribution node and of its
component distributions (a mixture's weights and each component's
parameters, a censored likelihood's base parameters, …), each flattened to
per-point scalars. One rebuilt copy of the observed variable, with the leaves
replaced by placeholders, gives ``log p(y | φ)`` and its score ``∂ log p/∂φ``.

Expectations over y use

- exact summation over the support 0, 1, 2, … for discrete likelihoods, grown
  until the remaining mass is below ``tail`` (1e-10);
- for continuous ones, a rule per part of the distribution: point masses
  (censoring bounds, a hurdle's zero) as single nodes, and each continuous
  part by Gauss–Legendre quadrature in ``θ`` after ``y = c + s tan θ`` over
  the part's bounds, centred at the part's median with its interquartile
  half-width as scale (``pm.icdf``) or, without an inverse CDF, at the mode
  found by Newton's method with the curvature there as scale. A mixture's
  components are integrated one by one, so separated modes are all resolved.

These give the Fisher information ``E[s sᵀ]``, the entropy, the KL
divergence and the moments of the likelihood as a `pm_sens.families.Family`.
"""

import threading

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pymc.distributions.censored import CensoredRV
from pymc.distributions.distribution import DiracDeltaRV, SymbolicRandomVariable
from pymc.distributions.mixture import _BaseMixtureRV
from pymc.distributions.moments import mean as pm_mean
from pymc.distributions.shape_utils import change_dist_size
from pymc.distributions.transforms import _default_transform
from pymc.distributions.truncated import TruncatedRV
from pymc.logprob.transforms import (
    CircularTransform,
    IntervalTransform,
    LogOddsTransform,
    LogTransform,
)
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Apply, Constant
from pytensor.graph.fg import MissingInputError
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import graph_inputs
from pytensor.tensor.random.type import RandomGeneratorType

from pm_sens.families import Family
from pm_sens.families._base import log1p_gap
from pm_sens.families._renyi import log_rule_term
from pm_sens.graph.model_queries import (
    censored_parts,
    data_value,
    is_distribution,
    replace_rebuilding,
)

#: Gauss–Legendre nodes per continuous part of a likelihood
N_NODES = 64
#: Discrete likelihoods: support summed until the remaining mass is below this
TAIL = 1e-10
# support values (or nodes) × rows per compiled call: small enough that the
# graph's temporaries stay in cache (4x faster per value than 1e6 cells)
_MAX_CELLS = 65_536
_NEWTON_STEPS = 60


def _distribution_inputs(node):
    """(parameter, core ndim) of a distribution node; component distributions included."""
    op = node.op
    if isinstance(op, TruncatedRV):
        base = list(zip(node.inputs[2:-2], op.base_rv_op.ndims_params, strict=True))
        return [*base, (node.inputs[-2], 0), (node.inputs[-1], 0)]
    return list(zip(op.dist_params(node), op.ndims_params, strict=True))


def _is_constant(var):
    return all(isinstance(v, Constant) for v in graph_inputs([var]))


def _lengths(var):
    """The axes' lengths of ``var``, static or read from the model's data and dims.

    A component count given by a coordinate (``dims=["N", "K"]``) is known.
    """
    if all(n is not None for n in var.type.shape):
        return var.type.shape
    try:  # the shape graph, not the values: no draw is needed
        return tuple(int(n) for n in pytensor.function([], var.shape, mode="FAST_COMPILE")())
    except (MissingInputError, NotImplementedError):
        raise ValueError(
            f"the likelihood parameter {var} has a component or class axis whose length "
            "depends on the posterior draws; pm_sens needs it fixed (a constant number of "
            "components, or one given by the model's dims)"
        ) from None


class Leaf:
    """A parameter of the likelihood or of one of its component distributions.

    ``trailing`` is its shape per point: the component's own batch axes beyond
    the point axis (a `NormalMixture`'s components) and the parameter's core
    axes (a mixture's weights).
    """

    def __init__(self, var, core, owner_output):
        self.var = var
        self.batch_ndim = owner_output.type.ndim
        self.core = core
        extra = _lengths(owner_output)[1:]
        core_shape = _lengths(var)[var.type.ndim - core :] if core else ()
        self.trailing = tuple(int(n) for n in (*extra, *core_shape))

    @property
    def size(self):
        """Number of per-point scalars."""
        return int(np.prod(self.trailing, dtype=int))

    def per_point_components(self):
        """The leaf as a list of per-point scalars (shape (1,) or (N,) each)."""
        var = self.var if self.var.dtype.startswith("float") else pt.cast(self.var, "float64")
        padded = pt.shape_padleft(var, self.batch_ndim + self.core - var.type.ndim)
        # a statically known 1 (a scalar parameter) stays known: PyTensor's
        # elementwise ops broadcast only along axes known to have length 1
        rows = 1 if padded.type.broadcastable[0] else padded.shape[0]
        full = pt.broadcast_to(padded, (rows, *self.trailing))
        return [full[(slice(None), *index)] for index in np.ndindex(*self.trailing)]

    def placeholder(self):
        """A root variable standing for the leaf, of the type `assemble` gives it.

        Any number of rows; a parameter shared by all points (a scalar, or one
        per component) gets its row axis here, so that each point can hold its
        own draw's value.
        """
        if not self.var.dtype.startswith("float") and self.var.type.ndim:
            return self.var.type()  # counts (trials) keep their type: it sizes the support
        return pt.tensor(dtype=self.var.dtype, shape=(None, *self.trailing))

    def assemble(self, components):
        """Inverse of `per_point_components`: (R, *trailing) from R-vectors."""
        if not self.trailing:
            return components[0]
        return pt.stack(components, axis=-1).reshape((components[0].shape[0], *self.trailing))

    def labels(self, name):
        """Labels of the per-point scalars: ``name`` or ``name[i,j]``."""
        if not self.trailing:
            return [name]
        return [f"{name}[{','.join(map(str, i))}]" for i in np.ndindex(*self.trailing)]


def _with_parameters(rv, replacements):
    """The distribution ``rv`` with parameters replaced, to be resized next.

    The replacements may have more axes (a row axis) than the parameters, so
    the result is only an input to ``change_dist_size``.

    Component distributions are rebuilt by their ops; the outer node keeps its op
    unchecked (a symbolic distribution's op is built for fixed input types), as
    ``change_dist_size`` builds it anew from its inputs.
    """
    node = rv.owner
    inputs = []
    for var in node.inputs:
        if var in replacements:
            var = replacements[var]
        elif is_distribution(var) and var.owner is not None:
            var = _rebuilt_component(var, replacements)
        inputs.append(var)
    if all(new is old for new, old in zip(inputs, node.inputs, strict=True)):
        return rv
    unchecked = Apply(node.op, inputs, [out.type() for out in node.outputs])
    return unchecked.outputs[node.outputs.index(rv)]


def _rebuilt_component(var, replacements):
    """A component distribution with its parameters replaced.

    A symbolic one (PyMC's Weibull) is rebuilt by its own ``rebuild_rv``, for
    the new parameters' types; others by their op.
    """
    node, op = var.owner, var.owner.op
    if not (isinstance(op, SymbolicRandomVariable) and op.extended_signature):
        (rebuilt,) = replace_rebuilding([var], replacements)
        return rebuilt
    (rngs, size, params), _ = op.get_input_output_type_idxs(op.extended_signature)
    inputs = [replacements.get(i, i) for i in node.inputs]
    rebuilt = op.rebuild_rv(
        *(inputs[i] for i in params),
        size=None if size is None else inputs[size],
        rng=inputs[rngs[0]] if len(rngs) == 1 else None,
    )
    return rebuilt.owner.outputs[node.outputs.index(var)]


def constant_parameters(rv, model_rvs):
    """Parameters of ``rv``'s distribution tree computed from constants only."""
    constants = []
    for param, _ in _distribution_inputs(rv.owner):
        if is_distribution(param) and param not in model_rvs:
            constants += constant_parameters(param, model_rvs)
        elif _is_constant(param) and param.owner is not None:
            constants.append(param)
    return constants


def _dim_lengths(rv, leaf_vars):
    """The model's dim lengths in ``rv``'s graph, as constants of their values.

    Integer shared scalars: a component sized ``(N, K)`` by dims keeps reading
    its K from that shape after it is resized to the points, and N then sizes
    nothing, but would stay an input of the graph.
    """
    return {
        v: pt.constant(v.get_value(), dtype=v.dtype)
        for v in graph_inputs([rv])
        if isinstance(v, SharedVariable)
        and getattr(v.type, "ndim", None) == 0
        and v.dtype.startswith("int")
        and v not in leaf_vars
    }


def likelihood_leaves(rv, model_rvs):
    """The non-constant leaf parameters of the observed variable ``rv``, in graph order.

    Component distributions (``.dist()`` variables inside a mixture, a censored or a
    truncated likelihood) are entered; model random variables are leaves' ancestors.
    """
    leaves = []
    for position, (param, core) in enumerate(_distribution_inputs(rv.owner)):
        if is_distribution(param) and param not in model_rvs:
            leaves += likelihood_leaves(param, model_rvs)
        elif not _is_constant(param) or _is_row_constant(param, rv):
            leaf = Leaf(param, core, rv)
            # the variable's name, else the distribution's and the position
            op_name = getattr(rv.owner.op, "name", None) or type(rv.owner.op).__name__
            leaf.name = param.name or f"{op_name.removesuffix('RV').lower()}_{position}"
            leaves.append(leaf)
    return leaves


def _is_row_constant(param, rv):
    """Whether ``param`` is a NumPy constant with one value per observation.

    Such a constant (a censoring bound per row) is a leaf, so that it can
    follow the points (`Predictive.from_observed`).
    """
    n_rows = rv.type.shape[0] if rv.type.ndim else None
    return (
        isinstance(param, Constant)
        and param.data.ndim > 0
        and n_rows is not None
        and n_rows > 1
        and param.data.shape[0] == n_rows
    )


def _support_bounds(out):
    """Bounds of a continuous distribution's support, from its default value transform."""
    transform = _default_transform(out.owner.op, out)
    if isinstance(transform, IntervalTransform):
        low, high = transform.args_fn(*out.owner.inputs)
        return (-np.inf if low is None else low), (np.inf if high is None else high)
    if isinstance(transform, LogTransform):
        return 0.0, np.inf
    if isinstance(transform, LogOddsTransform):
        return 0.0, 1.0
    if isinstance(transform, CircularTransform):
        return -np.pi, np.pi
    return -np.inf, np.inf


def _support_name(rv):
    """The moment-matching support of a continuous likelihood (user guide, "Likelihoods")."""
    try:
        bounds = _support_bounds(rv)
    except NotImplementedError:
        bounds = (-np.inf, np.inf)
    return {(0.0, np.inf): "positive", (0.0, 1.0): "unit"}.get(bounds, "real")


def _truncated_base(node):
    op = node.op
    return op.base_rv_op.make_node(*node.inputs[:-2]).default_output()


class _Parts:
    """Quadrature parts of a continuous distribution, built symbolically.

    Each part is ``(y, w)`` with shape (Q, *batch): nodes and weights whose
    weighted sum is the part's share of ``E[f(y)]``. Parts without an inverse
    CDF need a centre and scale found by Newton's method: ``located`` lists
    their (centre, scale) placeholders and the log density to search.
    """

    def __init__(self, n_nodes):
        t, w = np.polynomial.legendre.leggauss(n_nodes)
        self.t, self.w = (t + 1) / 2, w / 2
        self.located = []

    def of(self, out, lower, upper):
        op = out.owner.op
        if isinstance(op, DiracDeltaRV):
            value = pt.broadcast_to(op.dist_params(out.owner)[0], out.shape)
            return [(value[None], pt.ones_like(value, dtype="float64")[None])]
        if isinstance(op, _BaseMixtureRV):
            return self._mixture(out, lower, upper)
        if isinstance(op, CensoredRV):
            base, low, high = censored_parts(out)
            low, high = pt.maximum(low, lower), pt.minimum(high, upper)
            low_mass = pt.exp(pm.logcdf(base, low))
            high_mass = -pt.expm1(pm.logcdf(base, high))
            # a bound at ±inf holds no mass; keep its node finite
            masses = [
                (pt.broadcast_to(pt.switch(pt.isfinite(b), b, 0.0), out.shape)[None], m[None])
                for b, m in ((low, low_mass), (high, high_mass))
            ]
            return masses + self.of(base, low, high)
        if isinstance(op, TruncatedRV):
            low, high = out.owner.inputs[-2:]
            base = _truncated_base(out.owner)
            mass = pt.exp(pm.logcdf(base, high)) - pt.exp(pm.logcdf(base, low))
            return [(y, w / mass) for y, w in self.of(base, low, high)]
        return [self._continuous(out, lower, upper)]

    def _mixture(self, out, lower, upper):
        weights, *components = out.owner.op.dist_params(out.owner)
        batch = out.shape
        weights = pt.broadcast_to(weights, (*batch, weights.shape[-1]))
        parts = []
        if len(components) == 1:  # components stacked on the last axis
            for y, w in self.of(components[0], lower, upper):
                w = w * weights
                # (Q, *batch, K) -> (Q·K, *batch)
                parts.append(
                    tuple(
                        pt.moveaxis(a, -1, 1).reshape((-1, *[batch[i] for i in range(out.ndim)]))
                        for a in (y, w)
                    )
                )
            return parts
        for k, component in enumerate(components):
            parts += [(y, w * weights[..., k]) for y, w in self.of(component, lower, upper)]
        return parts

    def _continuous(self, out, lower, upper):
        low_support, high_support = _support_bounds(out)
        lower = pt.maximum(lower, low_support)
        upper = pt.minimum(upper, high_support)
        space = _Space.of(low_support, high_support)
        # centre and scale per row (in the integration space z) come from
        # `locate` (NumPy), as inputs
        centre = pt.tensor("centre", dtype="float64", shape=(None,) * out.ndim)
        scale = pt.tensor("scale", dtype="float64", shape=(None,) * out.ndim)
        self.located.append((out, centre, scale, lower, upper, space))
        expand = (slice(None),) + (None,) * out.ndim
        theta_low = pt.arctan((space.to_z(lower) - centre) / scale)
        theta_high = pt.arctan((space.to_z(upper) - centre) / scale)
        # two halves split at the centre, so a kink at the mode does not slow convergence
        halves = [
            (theta_low, pt.minimum(0.0, theta_high)),
            (pt.maximum(0.0, theta_low), theta_high),
        ]
        nodes, weights = [], []
        for start, stop in halves:
            width = pt.maximum(stop - start, 0.0)
            theta = start + width * pt.constant(self.t)[expand]
            z = centre + scale * pt.tan(theta)
            y = space.to_y(z)
            log_weight = pm.logp(out, y) + space.log_jacobian(z)
            w = pt.constant(self.w)[expand] * width * scale / pt.cos(theta) ** 2
            w = w * pt.exp(log_weight)
            nodes.append(y)
            weights.append(pt.switch(pt.isfinite(w), w, 0.0))
        return pt.concatenate(nodes), pt.concatenate(weights)


class _Space:
    """Where a continuous part is integrated: z = y, log y or logit y (by its support)."""

    def __init__(self, kind):
        self.kind = kind

    @classmethod
    def of(cls, low, high):
        if isinstance(low, float) and low == 0.0 and isinstance(high, float):
            return cls("log" if high == np.inf else "logit" if high == 1.0 else "identity")
        return cls("identity")

    def to_z(self, y):
        if self.kind == "log":
            return pt.log(y)
        if self.kind == "logit":
            return pt.log(y) - pt.log1p(-y)
        return y

    def to_y(self, z):
        if self.kind == "log":
            return pt.exp(z)
        if self.kind == "logit":
            return pt.sigmoid(z)
        return z

    def log_jacobian(self, z):
        """Log |dy/dz|."""
        if self.kind == "log":
            return z
        if self.kind == "logit":
            return -pt.softplus(-z) - pt.softplus(z)
        return pt.zeros_like(z)


class GenericLikelihood:
    """Log density, score and expectations of one observed variable as a `Family`.

    Parameters
    ----------
    rv : TensorVariable
        The observed variable (univariate, one value per point).
    model_rvs : set
        The model's random variables (never entered as components).
    n_nodes : int
        Gauss–Legendre nodes per continuous part.
    tail : float
        Mass left out of the support sums of discrete likelihoods.
    """

    def __init__(self, rv, model_rvs, *, n_nodes=N_NODES, tail=TAIL):
        self.name = type(rv.owner.op).__name__.removesuffix("RV").lstrip("_").lower()
        if getattr(rv.owner.op, "name", None):
            self.name = rv.owner.op.name
        self.discrete = rv.dtype.startswith("int")
        self.support = "count" if self.discrete else _support_name(rv)
        self.route = (
            f"summation over the support (tail mass < {tail:g})"
            if self.discrete
            else f"Gauss-Legendre quadrature (2x{n_nodes} nodes per part) of PyMC's logp"
        )
        # a parameter expression used twice (mu = sigma = f(x)) is one parameter
        self.leaves = list({leaf.var: leaf for leaf in likelihood_leaves(rv, model_rvs)}.values())
        # folded to constants, so PyMC's logp sees e.g. an infinite truncation
        # bound as such (and drops its term) instead of computing with inf
        self._constants = {
            c: pt.constant(data_value(c), dtype=c.dtype)
            for c in constant_parameters(rv, model_rvs)
        }
        self._dim_lengths = _dim_lengths(rv, {leaf.var for leaf in self.leaves})
        self.n_nodes, self.tail = n_nodes, tail
        self._rv = rv
        self._functions = self._symbolic = None
        self._per_row = None
        #: largest |Σ weights − 1| of the rules used so far (see `expectation`)
        self.mass_error = 0.0
        names = [leaf.name for leaf in self.leaves]
        # two components of the same family: normal_0, normal_1, normal_0#2, normal_1#2
        names = [
            n if not names[:i].count(n) else f"{n}#{names[:i].count(n) + 1}"
            for i, n in enumerate(names)
        ]
        self.labels = tuple(
            label
            for leaf, name in zip(self.leaves, names, strict=True)
            for label in leaf.labels(name)
        )

    def __getstate__(self):
        # compiled functions stay in the process that built them
        return {**self.__dict__, "_functions": None, "_symbolic": None}

    def per_point_parameters(self):
        """The leaf parameters as per-point scalar expressions of the model's graph."""
        return [c for leaf in self.leaves for c in leaf.per_point_components()]

    def _rebuilt(self, phis):
        """The observed variable with R rows whose leaves are the R-vectors ``phis``.

        Returns the variable, with each leaf replaced by a root placeholder of the
        leaf's own type (so PyMC's logprob rewrites cannot clone it away), and the
        replacements that turn those placeholders into the (R, …) arrays of ``phis``:
        to be applied to log densities and quadrature rules built on the variable.
        """
        rows = phis[0].shape[0]
        placeholders = {leaf.var: leaf.placeholder() for leaf in self.leaves}
        rv = graph_replace(self._rv, self._constants, strict=False)
        rv = graph_replace(_with_parameters(rv, placeholders), self._dim_lengths, strict=False)
        # resized from its new parameters by PyMC's own recipe for the distribution
        resized = change_dist_size(rv, new_size=(rows,))
        replacements, start = {}, 0
        for leaf in self.leaves:
            replacements[placeholders[leaf.var]] = leaf.assemble(phis[start : start + leaf.size])
            start += leaf.size
        return resized, replacements

    def _compile(self):
        phis = [pt.vector(f"phi_{i}") for i in range(len(self.labels))]
        resized, replacements = self._rebuilt(phis)
        value = pt.vector("y", dtype=self._rv.dtype)
        (logp,) = replace_rebuilding([pm.logp(resized, value)], replacements)
        scores = pytensor.grad(logp.sum(), phis, disconnected_inputs="ignore")
        functions = {
            "logp": _function([value, *phis], [logp], {}),
            "score": _function([value, *phis], [logp, *scores], {}),
            "logcdf": None,
        }
        if self.discrete:
            try:
                logcdf = pm.logcdf(resized, value)
            except (NotImplementedError, TypeError):  # none, or scalar values only
                pass
            else:
                functions["logcdf"] = _function([value, *phis], [logcdf], replacements)
        # second derivatives are compiled when first needed (moment mode, R-sens2)
        self._symbolic = ([value, *phis], [logp, *scores])
        if not self.discrete:
            parts = _Parts(self.n_nodes)
            pieces = parts.of(resized, pt.constant(-np.inf), pt.constant(np.inf))
            nodes = pt.concatenate([y for y, _ in pieces])
            weights = pt.concatenate([w for _, w in pieces])
            extra = [v for _, c, s, _, _, _ in parts.located for v in (c, s)]
            functions["nodes"] = _function([*phis, *extra], [nodes, weights], replacements)
            functions["locate"] = [
                _locate_functions(out, phis, replacements, lower, upper, space)
                for out, _, _, lower, upper, space in parts.located
            ]
        self._functions = functions
        return functions

    @property
    def functions(self):
        """The compiled functions, built on first use."""
        if self._functions:
            return self._functions
        try:
            return self._compile()
        except TypeError as error:  # PyTensor's, when a parameter cannot take R rows
            shared = [
                leaf.name for leaf in self.leaves if leaf.var.type.ndim < 1 + len(leaf.trailing)
            ]
            raise ValueError(
                f"pm_sens cannot evaluate the {self.name!r} likelihood point by point yet: "
                f"its parameter(s) {shared} hold one value for all observations (a scalar "
                "or per-component parameter) inside a distribution that PyMC builds for fixed "
                "parameter shapes (a mixture's weights, a censored or zero-inflated "
                "component). This model form is not supported yet; "
                f"PyTensor said: {error}"
            ) from None

    def _second_function(self):
        """The compiled log density, score and second derivatives in the parameters."""
        if "second" not in self.functions:
            inputs, (logp, *scores) = self._symbolic
            phis = inputs[1:]
            second = [
                g
                for score in scores
                for g in pytensor.grad(score.sum(), phis, disconnected_inputs="ignore")
            ]
            self._functions["second"] = _function(inputs, [logp, *scores, *second], {})
        return self._functions["second"]

    # ---- evaluation on arrays (NumPy in, NumPy out) ----

    def log_density(self, phi, y):
        """The log density ``log p(y | φ)``, broadcasting ``phi`` (..., M) against ``y`` (...)."""
        shape = np.broadcast_shapes(phi.shape[:-1], np.shape(y))
        phi = np.broadcast_to(phi, (*shape, phi.shape[-1])).reshape(-1, phi.shape[-1])
        y = np.broadcast_to(np.asarray(y, dtype=self._rv.dtype), shape).reshape(-1)
        out = np.empty(len(y))
        for rows in _blocks(len(y), 1):
            out[rows] = self.functions["logp"](y[rows], *np.ascontiguousarray(phi[rows].T))[0]
        return out.reshape(shape)

    def _score(self, y, phi, second=False):
        """The log density (L,), score (L, M) and, with ``second``, ∂²log p (L, M, M)."""
        function = self._second_function() if second else self.functions["score"]
        outputs = function(y, *np.ascontiguousarray(phi.T))
        m = phi.shape[-1]
        score = np.stack(outputs[1 : m + 1], -1)
        if not second:
            return outputs[0], score
        hessian = np.stack(outputs[m + 1 :], -1).reshape(len(y), m, m)
        return outputs[0], score, hessian

    def _rules(self, flat, cells_per_value=1):
        """Blocks of rows with their rule: (row indices, nodes (P, r), weights (P, r)).

        Discrete rows are grouped by the support they need (0..K−1, K a power of
        2), so a few rows with large counts do not widen every row's sum; their
        weights are None (the pmf, computed with the score).
        """
        if self.discrete:
            sizes = self._support_sizes(flat)
            for top in np.unique(sizes):
                index = np.flatnonzero(sizes == top)
                for rows in _blocks(len(index), top * cells_per_value):
                    nodes = np.broadcast_to(np.arange(top)[:, None], (top, len(index[rows])))
                    yield index[rows], nodes, None
            return
        if self._per_row is None:
            self._per_row = len(self._continuous_rule(flat[:1])[0])
        for rows in _blocks(len(flat), self._per_row * cells_per_value):
            yield np.arange(len(flat))[rows], *self._continuous_rule(flat[rows])

    def _continuous_rule(self, phi):
        """Nodes and weights (P, R) of continuous rows ``phi`` (R, M)."""
        columns = list(np.ascontiguousarray(phi.T))
        located = []
        for functions in self.functions["locate"]:
            located += _locate(functions, columns)
        return self.functions["nodes"](*columns, *located)

    def _support_sizes(self, phi):
        """Per row, K (a power of 2, ≥ 16) with the mass above K − 1 below ``tail``.

        From PyMC's logcdf when it has one (one evaluation per row and try),
        else from the pmf summed over 0..K − 1.
        """
        sizes = np.zeros(len(phi), dtype=int)
        top, logcdf = 16, self.functions["logcdf"]
        while True:
            pending = np.flatnonzero(sizes == 0)
            if not len(pending):
                return sizes
            rows = phi[pending]
            if logcdf is not None:
                upper = np.full(len(rows), top - 1, dtype=self._rv.dtype)
                left = -np.expm1(logcdf(upper, *np.ascontiguousarray(rows.T))[0])
            else:
                left = 1 - np.exp(self.log_density(rows[None], np.arange(top)[:, None])).sum(0)
            sizes[pending[left < self.tail]] = top
            if top >= 2**24:  # the tail is too heavy to sum: use what there is
                sizes[sizes == 0] = top
            top *= 2

    def expectation(self, phi, integrand, second=False):
        """``E[f]`` per row, summing ``integrand(y, logp, score[, hessian])`` by the rule.

        ``phi`` (..., M); ``y`` and ``logp`` are (P, R) over the rule's P nodes,
        ``score`` (P, R, M) and, with ``second``, ``hessian`` (P, R, M, M); the
        integrand returns (P, R, ...) arrays. Records in ``mass_error`` the
        largest |Σ weights − 1| seen: how well the rule integrates the density.
        """
        flat = phi.reshape(-1, phi.shape[-1])
        out = None
        for index, y, w in self._rules(flat, 1 + second * flat.shape[1]):
            logp, *derivatives = self._score(y.reshape(-1), _tiled(flat[index], len(y)), second)
            logp = logp.reshape(y.shape)
            w = np.exp(logp) if w is None else w
            # nodes without mass (or that underflowed onto a boundary) may score nan
            w = np.where(np.isfinite(logp) & (w > 0), w, 0.0)
            self.mass_error = max(self.mass_error, float(np.max(np.abs(w.sum(0) - 1))))
            if self.discrete and self.mass_error > 1e-6:
                raise ValueError(
                    f"the {self.name!r} likelihood puts mass {self.mass_error:.3g} outside "
                    "0, 1, 2, …, the values pm_sens sums over: discrete likelihoods with "
                    "negative values are not supported"
                )
            derivatives = [d.reshape(*y.shape, *d.shape[1:]) for d in derivatives]
            with np.errstate(over="ignore", invalid="ignore"):  # far nodes weigh 0
                value = integrand(y, logp, *derivatives)
            w = w.reshape(w.shape + (1,) * (value.ndim - w.ndim))
            # a derivative of PyMC's logp may overflow far in a tail (SkewNormal's
            # log erfc at 1e-200 of mass): nodes below the tail mass weigh 0
            negligible = (w < self.tail) & ~np.isfinite(value)
            with np.errstate(invalid="ignore"):
                block = np.where((w > 0) & ~negligible, w * value, 0.0).sum(0)
            if out is None:
                out = np.empty((len(flat), *block.shape[1:]))
            out[index] = block
        return out.reshape(*phi.shape[:-1], *out.shape[1:])

    def fisher_information(self, phi):
        """``E[s sᵀ]`` (..., M, M) of the leaf parameters."""
        return self.expectation(phi, lambda y, logp, s: s[..., :, None] * s[..., None, :])

    def entropy(self, phi):
        """``−E[log p]`` (...); point masses enter with their log mass."""
        return self.expectation(phi, lambda y, logp, s: -logp)

    def raw_moments(self, phi, varying, order):
        """``E[y]`` and ``E[y²]`` and their derivatives in the ``varying`` parameters.

        By the score identity ``∂E[f]/∂φ_j = E[f s_j]`` and
        ``∂²E[f]/∂φ_j∂φ_k = E[f (s_j s_k + ∂_k s_j)]``.

        Returns
        -------
        list of ndarray
            values (..., 2); with ``order >= 1`` first derivatives (..., 2, V);
            with ``order == 2`` second derivatives (..., 2, V, V).
        """
        v = len(varying)

        def integrand(y, logp, score, hessian=None):
            powers = np.stack([y, y * y], -1)  # (P, R, 2)
            score = score[..., varying]
            out = [powers]
            if order >= 1:
                out.append((powers[..., :, None] * score[..., None, :]).reshape(*y.shape, -1))
            if order == 2:
                curvature = hessian[..., varying, :][..., :, varying]
                outer = score[..., :, None] * score[..., None, :] + curvature
                out.append(
                    (powers[..., :, None, None] * outer[..., None, :, :]).reshape(*y.shape, -1)
                )
            return np.concatenate(out, -1)

        flat = self.expectation(phi, integrand, second=order == 2)
        shapes = [(2,), (2, v), (2, v, v)][: order + 1]
        sizes = np.cumsum([int(np.prod(shape)) for shape in shapes])[:-1]
        return [
            part.reshape(*phi.shape[:-1], *shape)
            for part, shape in zip(np.split(flat, sizes, -1), shapes, strict=True)
        ]

    def kl_divergence(self, phi_p, phi_q):
        """KL(p ‖ q) by the rule of p, as ``E_p[g(q/p − 1)]``, ``g(u) = u − log(1+u)``."""
        shape = np.broadcast_shapes(phi_p.shape, phi_q.shape)
        phi_p = np.broadcast_to(phi_p, shape).reshape(-1, shape[-1])
        phi_q = np.broadcast_to(phi_q, shape).reshape(-1, shape[-1])
        out = np.empty(len(phi_p))
        for index, y, w in self._rules(phi_p):
            logp = self.log_density(_tiled(phi_p[index], len(y)), y.reshape(-1)).reshape(y.shape)
            logq = self.log_density(_tiled(phi_q[index], len(y)), y.reshape(-1)).reshape(y.shape)
            w = np.exp(logp) if w is None else w
            with np.errstate(invalid="ignore", over="ignore"):
                gap = log1p_gap(np.expm1(logq - logp))
                out[index] = np.where(w > 0, w * gap, 0.0).sum(0)
        return out.reshape(shape[:-1])

    def renyi_divergence(self, phi_p, phi_q, alpha):
        """D_α(p ‖ q), 0 < α < 1, by the rules of both laws (`renyi_by_rules`)."""
        shape = np.broadcast_shapes(phi_p.shape, phi_q.shape)
        flat = [np.broadcast_to(x, shape).reshape(-1, shape[-1]) for x in (phi_p, phi_q)]
        terms = np.empty((2, len(flat[0])))
        for own, rows in enumerate(flat):
            for index, y, w in self._rules(rows):
                log_p, log_q = (
                    self.log_density(_tiled(x[index], len(y)), y.reshape(-1)).reshape(y.shape)
                    for x in flat
                )
                with np.errstate(divide="ignore"):
                    log_w = (log_p, log_q)[own] if w is None else np.log(w)
                terms[own, index] = log_rule_term(log_w, log_p, log_q, alpha)
        return (np.logaddexp(*terms) / (alpha - 1)).reshape(shape[:-1])

    def support_upper(self, phi, tail):
        """Discrete: a count above which each row's mass is below ``tail``."""
        flat = phi.reshape(-1, phi.shape[-1])
        upper = np.empty(len(flat), dtype=int)
        for index, y, _ in self._rules(flat):
            pmf = np.exp(self.log_density(_tiled(flat[index], len(y)), y.reshape(-1)))
            left = 1 - np.cumsum(pmf.reshape(y.shape), 0)
            upper[index] = np.argmax(left < tail, 0)
        return upper.reshape(phi.shape[:-1])

    def family(self):
        """The likelihood as a `pm_sens.families.Family` over its leaf parameters."""
        return Family(
            self.name,
            "generic",
            self.labels,
            lambda phi, **_: self.fisher_information(phi),
            lambda p, q, **_: self.kl_divergence(p, q),
            lambda phi, y, **_: self.log_density(phi, y),
            entropy=None if self.discrete else self.entropy,
            renyi_divergence=lambda p, q, alpha, **_: self.renyi_divergence(p, q, alpha),
            renyi_above_one=False,
            support_upper=(lambda phi, tail, **_: self.support_upper(phi, tail))
            if self.discrete
            else None,
        )


def _function(inputs, outputs, replacements):
    """A function of ``outputs`` after ``replacements``; any other graph input is an error.

    It is compiled at its first call and runs one call at a time (a compiled
    function keeps inputs and outputs in shared storage, and dask may evaluate
    blocks in threads).
    """
    outputs = replace_rebuilding(list(outputs), replacements)
    stray = [
        v
        for v in graph_inputs(outputs)
        if not isinstance(v, Constant)
        and v not in inputs
        and not isinstance(v.type, RandomGeneratorType)
    ]
    if stray:
        raise ValueError(f"the likelihood's log density still depends on {stray}")
    compiled = []  # compiled at the first call: a call may need only some functions
    lock = threading.Lock()

    def call(*args):
        with lock:
            if not compiled:
                compiled.append(pytensor.function(inputs, outputs, on_unused_input="ignore"))
            return compiled[0](*args)

    return call


def _locate_functions(out, phis, replacements, lower, upper, space):
    """Compiled pieces that place a continuous part's nodes (see `_locate`)."""
    try:
        quartiles = [space.to_z(pm.icdf(out, pt.full(out.shape, q))) for q in (0.25, 0.5, 0.75)]
    except NotImplementedError:
        quartile_fn = None
    else:
        quartile_fn = _function(phis, quartiles, replacements)
    z = pt.tensor("z", dtype="float64", shape=(None,) * out.ndim)
    log_density = pm.logp(out, space.to_y(z)) + space.log_jacobian(z)
    gradient = pytensor.grad(log_density.sum(), z)
    curvature = pytensor.grad(gradient.sum(), z)
    bounds = [space.to_z(lower), space.to_z(upper)]
    gradient_fn = _function([z, *phis], [gradient, curvature, *bounds], replacements)
    try:
        start = space.to_z(pm_mean(out))
    except NotImplementedError:
        start = pt.zeros(out.shape)
    start_fn = _function(phis, [pt.broadcast_to(start, out.shape)], replacements)
    return quartile_fn, gradient_fn, start_fn


def _locate(functions, columns):
    """Centre and scale of a continuous part per row, in its integration space.

    The median and interquartile half-width where PyMC has an inverse CDF that
    gives finite values; elsewhere the mode (Newton's method on log p, kept
    within the part's bounds, bisecting where the density is not concave) and
    the curvature scale ``1/sqrt(−∂² log p)`` there (at a kink, ``1/|∂ log p|``).
    """
    quartile_fn, gradient_fn, start_fn = functions
    if quartile_fn is not None:
        low, mid, high = quartile_fn(*columns)
        scale = (high - low) / 2
        good = np.isfinite(mid) & np.isfinite(scale) & (scale > 0)
        if np.all(good):
            return [mid, scale]
    z = np.asarray(start_fn(*columns)[0], dtype=float)
    z = np.where(np.isfinite(z), z, 0.0)
    step = np.maximum(np.abs(z), 1.0)
    previous = np.zeros_like(z)
    for _ in range(_NEWTON_STEPS):
        g, h, low_bound, high_bound = gradient_fn(z, *columns)
        concave = h < 0
        # where not concave (or at a kink), step uphill and halve the step when
        # the slope changes sign
        step = np.where(np.sign(g) * previous < 0, step / 2, step)
        move = np.where(concave, -g / np.where(concave, h, -1.0), np.sign(g) * step)
        move = np.clip(np.nan_to_num(move), -4 * step, 4 * step)
        previous = np.sign(g)
        new = z + move
        # stay inside the part's bounds: halve the way to a bound instead of crossing it
        z = np.where(
            new <= low_bound,
            (z + low_bound) / 2,
            np.where(new >= high_bound, (z + high_bound) / 2, new),
        )
        if np.all(np.abs(move) <= 1e-13 * (1 + np.abs(z))):
            break
    g, h, _, _ = gradient_fn(z, *columns)
    with np.errstate(divide="ignore"):
        # not concave at the mode (a kink, as Laplace's): the slope's length scale
        newton_scale = np.where(h < 0, 1 / np.sqrt(np.abs(h)), 1 / np.abs(g))
    newton_scale = np.where(np.isfinite(newton_scale) & (newton_scale > 0), newton_scale, 1.0)
    if quartile_fn is not None:
        return [np.where(good, mid, z), np.where(good, scale, newton_scale)]
    return [z, newton_scale]


def _tiled(rows, n_nodes):
    """Parameters (R, M) repeated for each of P nodes: (P·R, M), node-major like y."""
    return np.broadcast_to(rows, (n_nodes, *rows.shape)).reshape(-1, rows.shape[-1])


def _blocks(n_rows, per_row):
    step = max(1, _MAX_CELLS // max(per_row, 1))
    return [slice(s, s + step) for s in range(0, n_rows, step)]

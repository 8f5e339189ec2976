"""The graph of one observed variable in its leaf parameters, through PyMC's ``logp``.

One rebuilt copy of the observed variable, with its leaf parameters (see
`pm_sens.graph.likelihoods.generic.leaves`) replaced by placeholders for R rows, gives the
compiled ``log p(y | φ)``, its score ``∂ log p/∂φ``, a discrete law's ``logcdf``
and a continuous law's quadrature nodes (`pm_sens.graph.likelihoods.generic.rules`). The
expectations over y built from them are in `pm_sens.graph.likelihoods.generic.likelihood`.
"""

from contextlib import suppress
from functools import partial

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pymc.distributions.censored import CensoredRV
from pymc.distributions.moments import mean as pm_mean
from pymc.distributions.shape_utils import change_dist_size
from pymc.exceptions import UndefinedMomentException
from pytensor.gradient import NullTypeGradError, zero_grad
from pytensor.graph.replace import graph_replace, vectorize_graph
from pytensor.graph.traversal import ancestors, toposort
from pytensor.graph.utils import MethodNotDefined
from pytensor.scalar import Add, Log, upcast
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.special import LogSumExp

from pm_sens.graph.compile.functions import without_traces
from pm_sens.graph.compile.nodes import broadcast_together, broadcast_typed
from pm_sens.graph.likelihoods.generic.leaves import (
    constant_parameters,
    dim_lengths,
    distribution_inputs,
    likelihood_leaves,
    with_parameters,
)
from pm_sens.graph.likelihoods.generic.rules import (
    Parts,
    lazy_function,
    locate_functions,
    plain_mixture,
    support_bounds,
    support_name,
)
from pm_sens.graph.model.queries import data_value, replace_rebuilding


def at_nodes(outputs, value, nodes):
    """``outputs``, per-row graphs of ``value`` (R,), at ``nodes`` (P, R).

    Each row's outputs depend on its own value only, so PyTensor's
    vectorization over a leading node axis gives them per node and row (an
    output that does not depend on the value is broadcast along the nodes).
    """
    return _to_nodes(vectorize_graph(outputs, {value: nodes}), nodes)


def _to_nodes(outputs, nodes):
    """Each of ``outputs`` broadcast to the shape of ``nodes`` (P, R) (`broadcast_typed`)."""
    shape = [nodes.shape[0], nodes.shape[1]]
    return [broadcast_typed(out, shape, nodes.type.shape) for out in outputs]


#: Gauss–Legendre nodes per half of a continuous part of a likelihood: with
#: `rules.SCALE_MULTIPLE`, every law measured keeps its entropy, moments and
#: Fisher information within 2e-7 (most within 1e-9); below 48 the error grows
#: fast on a Weibull's tails (`benchmarks/README.md`)
N_NODES = 48
#: Discrete likelihoods: support summed until the remaining mass is below this
TAIL = 1e-10
#: a likelihood of more leaf columns evaluates its log density and derivatives
#: at the nodes op by op in NumPy: Numba's compile grows with the graph's inputs
#: and outputs (a 20-component mixture's 60 columns: 23–39 s per function on an
#: empty cache), where NumPy runs them within about 20 % of the compiled loops
WIDE = 16


class LikelihoodGraph:
    """The compiled log density and score of one observed variable in its leaf parameters.

    Parameters
    ----------
    rv : TensorVariable
        The observed variable (univariate, one value per point).
    model_rvs : set
        The model's random variables (never entered as components).
    n_nodes : int
        Gauss–Legendre nodes per half of each continuous part.
    tail : float
        Mass left out of the support sums of discrete likelihoods.
    """

    def __init__(self, rv, model_rvs, *, n_nodes=N_NODES, tail=TAIL):
        self.name = type(rv.owner.op).__name__.removesuffix("RV").lstrip("_").lower()
        if getattr(rv.owner.op, "name", None):
            self.name = rv.owner.op.name
        self.discrete = rv.dtype.startswith("int")
        self.support = "count" if self.discrete else support_name(rv)
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
        self._dim_lengths = dim_lengths(rv, {leaf.var for leaf in self.leaves})
        self.n_nodes, self.tail = n_nodes, tail
        self._rv = rv
        self._functions = self._symbolic = None
        #: per dtype, PyMC's mean of rows (`_mean_of_rows`)
        self._symbolic_mean = {}
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
        self._backend = "numba" if len(self.labels) <= WIDE else "python"

    def __getstate__(self):
        # compiled functions stay in the process that built them
        return {**self.__dict__, "_functions": None, "_symbolic": None, "_symbolic_mean": {}}

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
        rv = graph_replace(with_parameters(rv, placeholders), self._dim_lengths, strict=False)
        # resized from its new parameters by PyMC's own recipe for the distribution
        resized = change_dist_size(rv, new_size=(rows,))
        replacements, start = {}, 0
        for leaf in self.leaves:
            replacements[placeholders[leaf.var]] = leaf.assemble(phis[start : start + leaf.size])
            start += leaf.size
        return resized, replacements

    def pymc_mean(self):
        """`mean`, where PyMC has the distribution's mean E[y], else None.

        None where PyMC has no mean for it (a truncated or censored law, a
        mixture with such a component) or gives the location of an angle
        (VonMises: its circular mean, not E[y] over (−π, π]): E[y] then comes
        from the summation or quadrature rule.
        """
        return None if self._mean_of_rows("float64") is None else self.mean

    def _mean_of_rows(self, dtype):
        """PyMC's mean of R rows of ``dtype``: (its leaf columns, R-vectors; E[y] (R,)).

        None where PyMC has none (`pymc_mean`). Built once per dtype: `mean`
        puts its parameters in place of the columns, so that PyMC rebuilds the
        distribution (``change_dist_size``, PyTensor's shape inference) on
        R-vectors, never on the model's deep graphs.
        """
        if dtype not in self._symbolic_mean:
            phis = [pt.vector(f"phi_{i}", dtype=dtype) for i in range(len(self.labels))]
            resized, replacements = self._rebuilt(phis)
            laws = [
                v
                for v in ancestors([resized])
                if v.owner and isinstance(v.owner.op, RandomVariable)
            ]
            mean = None
            if not any(_circular(law) for law in laws):
                with suppress(NotImplementedError, UndefinedMomentException):
                    (mean,) = replace_rebuilding([pm_mean(resized)], replacements)
            self._symbolic_mean[dtype] = None if mean is None else (phis, mean)
        return self._symbolic_mean[dtype]

    def mean(self, *params):
        """E[y] (the shape of the leaf ``params``, broadcast) by PyMC's mean; None if none."""
        params = broadcast_together(params)
        dtype = upcast(*(p.dtype for p in params))
        if self._mean_of_rows(dtype) is None:
            return None
        phis, mean = self._mean_of_rows(dtype)
        flat = [p.reshape((-1,)).astype(dtype) for p in params]
        # in place, not rebuilt: a rebuilt broadcast would infer its static
        # shape from the parameters' graphs (seconds for a model's deep graph)
        (mean,) = graph_replace([mean], dict(zip(phis, flat, strict=True)), strict=False)
        return mean.reshape(params[0].shape)

    @without_traces
    def _compile(self):
        phis = [pt.vector(f"phi_{i}") for i in range(len(self.labels))]
        resized, replacements = self._rebuilt(phis)
        value = pt.vector("y", dtype=self._rv.dtype)
        (logp,) = replace_rebuilding([_log_density(resized, value)], replacements)
        logp = _weights_outside_the_log(logp)
        scores = pytensor.grad(logp.sum(), phis, disconnected_inputs="ignore")
        # y at P nodes per row, (P, R): what depends on the row's parameters only
        # (a truncation's normalizer, a mixture's log weights) is computed once per row
        nodes = pt.matrix("y", dtype=self._rv.dtype)
        logp_at_nodes, *scores_at_nodes = at_nodes([logp, *scores], value, nodes)
        functions = {
            "logp": lazy_function([nodes, *phis], [logp_at_nodes], {}, self._backend),
            "score": lazy_function(
                [nodes, *phis], [logp_at_nodes, *scores_at_nodes], {}, self._backend
            ),
            "logcdf": None,
        }
        if self.discrete:
            try:
                logcdf = pm.logcdf(resized, value)
            except (NotImplementedError, TypeError):  # none, or scalar values only
                pass
            else:
                functions["logcdf"] = lazy_function(
                    [value, *phis], [logcdf], replacements, self._backend
                )
        # second derivatives are compiled when first needed (moment mode, R-sens2)
        self._symbolic = (value, nodes, phis, [logp, *scores])
        if not self.discrete:
            parts = Parts(self.n_nodes)
            pieces = parts.of(resized, pt.constant(-np.inf), pt.constant(np.inf))
            nodes = pt.concatenate([y for y, _ in pieces])
            weights = pt.concatenate([w for _, w in pieces])
            extra = [v for _, placed, _, _, _ in parts.located for v in placed]
            outputs = [nodes, weights]
            if plain_mixture(resized):
                outputs.append(pt.concatenate(parts.components))
                functions["own"] = OwnComponents(
                    resized, self.leaves, phis, replacements, self._backend
                )
            functions["nodes"] = lazy_function([*phis, *extra], outputs, replacements, "python")
            functions["locate"] = [
                locate_functions(out, phis, replacements, lower, upper, space)
                for out, _, lower, upper, space in parts.located
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

    @without_traces
    def _second_function(self):
        """The compiled log density, score and second derivatives in the parameters.

        Where PyTensor cannot differentiate the score (a Bessel function's ratio
        in the von Mises' normalizer has no gradient), the second derivatives
        are central differences of the exact score (`_differenced_second`).
        """
        if "second" not in self.functions:
            value, nodes, phis, (logp, *scores) = self._symbolic
            try:
                second = [
                    g
                    for score in scores
                    for g in pytensor.grad(score.sum(), phis, disconnected_inputs="ignore")
                ]
            except (MethodNotDefined, NullTypeGradError, NotImplementedError):
                self._functions["second"] = partial(_differenced_second, self.functions["score"])
            else:
                outputs = at_nodes([logp, *scores, *second], value, nodes)
                self._functions["second"] = lazy_function(
                    [nodes, *phis], outputs, {}, self._backend
                )
        return self._functions["second"]


def _log_density(rv, value):
    """PyMC's ``logp`` of ``rv`` at ``value``; a censored law's bound masses computed per row.

    PyMC's censored log density evaluates the base law's log CDF at every
    value and keeps it where the value is a bound. At P quadrature nodes per
    row that is P log CDFs per row where one is used: here the masses are
    computed at the bounds themselves (the same number where a value is a
    bound), once per row. A bound is data, not a parameter the value moves
    with, as in PyMC's graph: its masses are not differentiated in it.
    """
    if not isinstance(rv.owner.op, CensoredRV) or rv.dtype.startswith("int"):
        return pm.logp(rv, value)
    base, lower, upper = rv.owner.op.dist_params(rv.owner)
    logp = pm.logp(base, value)
    if upper is not base:
        at = _finite_bound(zero_grad(upper))
        above = pt.switch(pt.gt(value, upper), -np.inf, logp)
        logp = pt.switch(pt.eq(value, upper), pm.logccdf(base, at), above)
    if lower is not base:
        at = _finite_bound(zero_grad(lower))
        below = pt.switch(pt.lt(value, lower), -np.inf, logp)
        logp = pt.switch(pt.eq(value, lower), pm.logcdf(base, at), below)
    return logp


def _finite_bound(bound):
    """``bound`` where finite, else 0.

    An infinite bound is never a value, and its log CDF's derivatives (∞·0)
    would turn the unselected branch's gradient into nan.
    """
    return pt.switch(pt.isfinite(bound), bound, 0.0)


class OwnComponents:
    """``log(w_k p_k(y))`` of each node's own component k, and its derivatives.

    ``∂E[f]/∂φ = Σ_k ∫ f ∂(w_k p_k)/∂φ dy = Σ_k w_k E_k[f ∂log(w_k p_k)/∂φ]``, and
    likewise for second derivatives: summed over each component's own nodes,
    every term is as smooth as its component. The mixture's score
    ``Σ_k w_k ∂p_k/p`` instead carries a narrow component's spike into the
    nodes of the wide ones, which cannot resolve it. A component of weight 0
    has no nodes of weight above 0, so the derivatives in its weight are left
    out: the predictive holds such a weight at 0 (`leaves.Leaf`).

    At a node of component k, a leaf with one value per component (the
    weights, a parameter of stacked components: trailing shape (K,)) enters
    by its k-th column only. The graph is differentiated in that value, one
    input θ per such leaf whatever K (a `NormalMixture`'s weight, mean and
    width: 3 first and 6 second derivatives, where its 3K columns would give
    3K and 9K² graphs); any other leaf's columns are inputs as they are. The
    columns' derivatives are the inputs' at the node's own component's
    columns, 0 at the others'.

    Parameters
    ----------
    mixture : TensorVariable
        The rebuilt mixture, its leaves replaced by root placeholders.
    leaves : list of Leaf
        Its leaves, in the order of ``replacements``.
    phis : list of TensorVariable
        The M leaf columns, vectors over the rows.
    replacements : dict
        Each leaf's placeholder → its (R, …) array assembled from ``phis``.
    backend : str
        Of the compiled functions (`rules.lazy_function`).
    """

    def __init__(self, mixture, leaves, phis, replacements, backend):
        weights, *components = mixture.owner.op.dist_params(mixture.owner)
        stacked = len(components) == 1
        value = pt.vector("y", dtype=mixture.dtype)
        owner = pt.vector("component", dtype="int64")
        own_replacements, inputs = dict(replacements), []
        #: per input: its first column, and whether it is one column per component
        self.first, self.per_component = [], []
        # one law in every component's column at a node where each parameter of
        # the stacked components and the weights is a leaf: its own value θ, or
        # one value per row (not a constant per component)
        laws = [weights, *(p for p, _ in distribution_inputs(components[0].owner))]
        same_law = stacked and all(any(p is r for r in replacements) for p in laws)
        self.n_components, start = 1, 0
        for placeholder, leaf in zip(replacements, leaves, strict=True):
            feeds = [
                k for k, c in enumerate([weights, *components]) if placeholder in ancestors([c])
            ]
            if len(leaf.trailing) == 1 and all(k == 0 or stacked for k in feeds):
                theta = pt.vector(f"own_{leaf.name}", dtype=phis[start].dtype)
                self.n_components = leaf.trailing[0]
                own_replacements[placeholder] = pt.broadcast_to(
                    theta[:, None], (theta.shape[0], self.n_components)
                )
                inputs.append(theta)
                self.first.append(start)
                self.per_component.append(True)
            else:
                same_law = same_law and not (leaf.trailing and placeholder in laws)
                inputs += phis[start : start + leaf.size]
                self.first += range(start, start + leaf.size)
                self.per_component += [False] * leaf.size
            start += leaf.size
        if stacked:  # stacked on the last axis
            component_logp = pm.logp(components[0], value[:, None])
        else:
            component_logp = pt.stack([pm.logp(c, value) for c in components], axis=-1)
        weights = pt.broadcast_to(weights, component_logp.shape)
        if same_law:  # every component's column holds the node's own law
            own = pt.log(weights[:, 0]) + component_logp[:, 0]
        else:
            rows = pt.arange(value.shape[0])
            own = pt.log(weights[rows, owner]) + component_logp[rows, owner]
        (own,) = replace_rebuilding([own], own_replacements)
        scores = pytensor.grad(own.sum(), inputs, disconnected_inputs="ignore")
        n = len(inputs)
        second = [
            g
            for a in range(n)
            for g in pytensor.grad(scores[a].sum(), inputs[a:], disconnected_inputs="ignore")
        ]
        #: the pairs (a, b), a ≤ b, of inputs of the second derivatives
        self._input_pairs = [(a, b) for a in range(n) for b in range(a, n)]
        #: per pair of inputs, each component's pair of columns (its index in `pairs`)
        self._pair_index, columns = [], {}
        for a, b in self._input_pairs:
            components = range(self.n_components) if self._either(a, b) else [0]
            for k in components:
                columns.setdefault((self._column(a, k), self._column(b, k)), len(columns))
            self._pair_index.append(
                [columns[self._column(a, k), self._column(b, k)] for k in components]
            )
        #: the pairs (2, n) of columns i ≤ j whose second derivatives `second` gives
        self.pairs = np.array(list(columns), dtype=int).reshape(-1, 2).T
        nodes = pt.matrix("y", dtype=mixture.dtype)
        owners = pt.matrix("component", dtype="int64")
        at_nodes = {value: nodes, owner: owners}
        per_node = []
        for theta, own_axis in zip(inputs, self.per_component, strict=True):
            per_node.append(pt.matrix(theta.name, dtype=theta.dtype) if own_axis else theta)
            if own_axis:
                at_nodes[theta] = per_node[-1]

        # the first column's length, the rows' count, sizes the rebuilt mixture
        # (`LikelihoodGraph._rebuilt`): an input even where it is not an input θ
        self._sized = all(x is not phis[0] for x in per_node)
        sizing = [phis[0]] if self._sized else []

        def compiled(outputs):
            outputs = _to_nodes(vectorize_graph(outputs, at_nodes), nodes)
            return lazy_function([nodes, owners, *per_node, *sizing], outputs, {}, backend)

        self._score = compiled([own, *scores])
        self._second = compiled([own, *scores, *second])

    def _either(self, a, b):
        return self.per_component[a] or self.per_component[b]

    def _column(self, a, k):
        return self.first[a] + k if self.per_component[a] else self.first[a]

    def __call__(self, order, owners, nodes, *columns):
        """``[log(w_k p_k), M first derivatives[, second derivatives at `pairs`]]``.

        At ``nodes`` (P, R) of each node's own component ``owners`` (P,), the
        rows' leaf ``columns`` (M, each (R,)): each output (P, R), the first
        derivatives in column order.
        """
        owners = np.asarray(owners)
        inputs = []
        for first, own_axis in zip(self.first, self.per_component, strict=True):
            if own_axis:  # the column of each node's component
                inputs.append(np.stack(columns[first : first + self.n_components])[owners])
            else:
                inputs.append(columns[first])
        tiled = np.ascontiguousarray(np.broadcast_to(owners[:, None], nodes.shape))
        function = self._second if order == 2 else self._score
        logp, *outputs = function(nodes, tiled, *inputs, *columns[: self._sized])
        n = len(inputs)
        mine = [owners[:, None] == k for k in range(self.n_components)]
        first = [None] * len(columns)
        for a, derivative in enumerate(outputs[:n]):
            for k in range(self.n_components if self.per_component[a] else 1):
                own = np.where(mine[k], derivative, 0.0) if self.per_component[a] else derivative
                first[self._column(a, k)] = own
        if order < 2:
            return [logp, *first]
        second = [None] * self.pairs.shape[1]
        for (a, b), derivative, where in zip(
            self._input_pairs, outputs[n:], self._pair_index, strict=True
        ):
            if self._either(a, b):
                for k, q in enumerate(where):
                    second[q] = np.where(mine[k], derivative, 0.0)
            else:
                second[where[0]] = derivative
        return [logp, *first, *second]


def _weights_outside_the_log(logp):
    """``logp`` with each mixture's weights as factors of the sum, not inside its log.

    PyMC writes a mixture's log density as ``logsumexp(log w + log p_k)``. At a
    weight of exactly 0 (a stick-breaking weight after a break that took the
    whole stick) PyTensor's derivative in ``w_k`` is 0·∞, where the score is
    ``p_k(y)/p(y)``. Written as ``log Σ_k w_k exp(log p_k − m) + m``, with ``m``
    the largest term held constant in derivatives, the value is the same and
    every derivative finite.
    """
    replacements = {}
    for node in toposort([logp]):
        terms = node.inputs[0].owner if isinstance(node.op, LogSumExp) else None
        if terms is None or not _is_elemwise(terms, Add):
            continue
        logs = [t for t in terms.inputs if t.owner and _is_elemwise(t.owner, Log)]
        if len(logs) != 1:
            continue
        others = [t for t in terms.inputs if t is not logs[0]]
        axis = node.op.axis
        top = zero_grad(pt.max(node.inputs[0], axis=axis, keepdims=True))
        top = pt.switch(pt.isinf(top), 0.0, top)  # all terms -inf: no offset
        weighted = logs[0].owner.inputs[0] * pt.exp(pt.add(*others) - top)
        mixed = pt.log(pt.sum(weighted, axis=axis, keepdims=True)) + top
        replacements[node.outputs[0]] = mixed.squeeze(axis)
    if not replacements:
        return logp
    (logp,) = replace_rebuilding([logp], replacements)
    return logp


def _is_elemwise(node, scalar_op):
    return isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op, scalar_op)


#: the step of central differences, relative to each parameter's size: the cube
#: root of float64's epsilon balances truncation (h²) against rounding (ε/h)
_DIFFERENCE_STEP = np.cbrt(np.finfo(float).eps)


def _differenced_second(score, nodes, *phis):
    """``[log p, score (M), ∂²log p/∂φ_k∂φ_j (M·M, k-major)]`` at ``nodes`` (P, R).

    Each column of the Hessian is the central difference of the exact score in
    one parameter, with a step relative to the parameter's size; the matrix is
    then symmetrized (its mean with its transpose).
    """
    logp, *first = score(nodes, *phis)
    m = len(phis)
    columns = []
    for j, phi in enumerate(phis):
        step = _DIFFERENCE_STEP * np.maximum(np.abs(phi), 1.0)
        up = score(nodes, *phis[:j], phi + step, *phis[j + 1 :])[1:]
        down = score(nodes, *phis[:j], phi - step, *phis[j + 1 :])[1:]
        columns.append([(u - d) / (2 * step) for u, d in zip(up, down, strict=True)])
    # columns[j][k] = ∂score_k/∂φ_j
    second = [0.5 * (columns[j][k] + columns[k][j]) for k in range(m) for j in range(m)]
    return [logp, *first, *second]


def _circular(law):
    """Whether ``law`` is a distribution of angles (its support is (−π, π])."""
    try:
        low, high = support_bounds(law)
    except NotImplementedError:
        return False
    return isinstance(low, float) and (low, high) == (-np.pi, np.pi)

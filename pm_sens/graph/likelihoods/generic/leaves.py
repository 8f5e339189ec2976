"""A likelihood's leaf parameters: what describes its per-draw law at a point.

The parameters of the distribution node and of its component distributions
(a mixture's weights and each component's parameters, a censored
likelihood's base parameters, …), each flattened to per-point scalars; and
the observed variable rebuilt with them replaced.
"""

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.distribution import SymbolicRandomVariable
from pymc.distributions.mixture import _BaseMixtureRV
from pymc.distributions.truncated import TruncatedRV
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Apply, Constant
from pytensor.graph.fg import MissingInputError
from pytensor.graph.traversal import graph_inputs

from pm_sens.graph.compile.functions import evaluate
from pm_sens.graph.model.queries import is_distribution, replace_rebuilding


def distribution_inputs(node):
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
        return tuple(int(n) for n in evaluate(var.shape))
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
    axes (a mixture's weights). ``weights``: whether it is a mixture's weights.
    """

    def __init__(self, var, core, owner_output, weights=False):
        self.var = var
        self.weights = weights
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
        components = [full[(slice(None), *index)] for index in np.ndindex(*self.trailing)]
        if self.weights:
            # a weight of exactly 0 (a stick used up: 1 − Φ(z) rounds to 0) stays 0
            # for nearby inputs in float64, so its derivative is 0, where PyTensor's
            # derivative of the real-number expression is not, and would meet the
            # huge information of a weight at 0 (∫ p_k²/p)
            components = [pt.switch(pt.eq(c, 0), pt.zeros_like(c), c) for c in components]
        return components

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


def with_parameters(rv, replacements):
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
    for param, _ in distribution_inputs(rv.owner):
        if is_distribution(param) and param not in model_rvs:
            constants += constant_parameters(param, model_rvs)
        elif _is_constant(param) and param.owner is not None:
            constants.append(param)
    return constants


def dim_lengths(rv, leaf_vars):
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
    for position, (param, core) in enumerate(distribution_inputs(rv.owner)):
        if is_distribution(param) and param not in model_rvs:
            leaves += likelihood_leaves(param, model_rvs)
        elif not _is_constant(param) or _is_row_constant(param, rv):
            weights = position == 0 and isinstance(rv.owner.op, _BaseMixtureRV)
            leaf = Leaf(param, core, rv, weights=weights)
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

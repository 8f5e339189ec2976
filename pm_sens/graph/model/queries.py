"""Small queries on a PyMC model's graph, and one way to rewrite it."""

import numpy as np
import pytensor.scalar as ps
import pytensor.tensor as pt
from pymc.distributions.distribution import SymbolicRandomVariable
from pytensor.compile.builders import SymbolicOp
from pytensor.graph.basic import Constant
from pytensor.graph.traversal import ancestors, apply_ancestors, toposort
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.linalg import Cholesky, SolveBase
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.shape import Shape, Shape_i, SpecifyShape
from pytensor.tensor.sharedvar import TensorSharedVariable
from pytensor.tensor.subtensor import AdvancedSubtensor

from pm_sens.graph.compile.nodes import is_float


def observed_variable(model, var_name):
    """The observed RV called ``var_name`` (default: the model's only one)."""
    observed = {rv.name: rv for rv in model.observed_RVs}
    if not observed:
        raise ValueError(
            "model has no observed random variable; pm_sens explains the predictions "
            "of an observed variable (a likelihood with observed=...)"
        )
    if var_name is None:
        if len(observed) > 1:
            raise ValueError(
                f"var_name=None is ambiguous: the model has several observed variables "
                f"{sorted(observed)}; pass var_name= one of them"
            )
        return next(iter(observed.values()))
    if var_name not in observed:
        raise ValueError(
            f"var_name={var_name!r} is not an observed variable of the model; "
            f"valid: {sorted(observed)}"
        )
    return observed[var_name]


def data_containers(model, outputs, given_draws=False):
    """The model's ``pm.Data`` containers that ``outputs`` depend on, in model order.

    With ``given_draws``, only those they depend on given the free random
    variables (not through a prior: those are replaced by posterior draws).
    """
    upstream = set(ancestors(outputs, blockers=model.free_RVs if given_draws else None))
    return [
        var for var in model.data_vars if isinstance(var, TensorSharedVariable) and var in upstream
    ]


def data_arrays(model, outputs):
    """``{array: value}`` of the arrays ``outputs`` are computed from.

    The NumPy constants with an axis and the ``pm.Data`` containers, given the
    free random variables.
    """
    roots = [v for v in ancestors(outputs, blockers=model.free_RVs) if v.owner is None]
    arrays = {c: np.asarray(c.data) for c in roots if isinstance(c, Constant) and np.ndim(c.data)}
    for container in data_containers(model, outputs, given_draws=True):
        arrays[container] = np.asarray(data_value(container))
    return arrays


def count_containers(model, var_name):
    """Integer containers that are count parameters of the likelihood ``var_name``.

    The trials ``n`` of a Binomial or BetaBinomial given per row in ``pm.Data``
    belong to their row like an exposure: they are held at each point's value,
    never moved as an input. Found as the containers behind the integer-typed
    parameters of the observed distribution and of its component distributions.
    """
    counts, stack = [], [model[var_name].owner]
    while stack:
        node = stack.pop()
        for param in _distribution_params(node):
            if is_distribution(param):
                stack.append(param.owner)
            elif param.type.dtype.startswith(("int", "uint")):
                counts.append(param)
    return data_containers(model, counts) if counts else []


def _distribution_params(node):
    """The parameters of a distribution node (all tensor inputs where it does not say)."""
    try:
        return node.op.dist_params(node)
    except ValueError:  # a symbolic distribution without a signature (PyMC's hurdles)
        return [i for i in node.inputs if hasattr(i.type, "dtype")]


def is_distribution(var):
    """Whether ``var`` is drawn by a distribution (a model variable or a ``.dist()``)."""
    return var.owner is not None and isinstance(
        var.owner.op, RandomVariable | SymbolicRandomVariable
    )


def arithmetic_integers(model, outputs):
    """Integer containers that ``outputs`` use only in arithmetic, never as an index.

    ``alpha + beta * t`` with ``t = pm.Data("t", range(n))`` (a time index, a
    count of rooms) is a numeric input like a float one; an index (``a[g]``),
    a comparison (``g == 1``) or a 0/1 flag (a dummy column, ``c * treated``)
    makes a container categorical. Its length (``steps=t.shape[0] - 1``) is no
    read of its values, and reads behind the free random variables are replaced
    by their draws.
    """
    uses = {}
    for node in apply_ancestors(outputs, blockers=model.free_RVs):
        if isinstance(node.op, Shape | Shape_i):
            continue
        arithmetic = isinstance(node.op, Elemwise) and not isinstance(
            node.op.scalar_op, ps.LogicalComparison | ps.Identity | ps.Cast
        )
        if isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op, ps.Cast):
            arithmetic = is_float(node.outputs[0])
        for var in node.inputs:
            if isinstance(var, TensorSharedVariable) and not is_float(var):
                uses.setdefault(var, set()).add(arithmetic or isinstance(node.op, DimShuffle))
    # a 0/1 flag multiplied in is a dummy (one-hot) column: categorical
    return [
        v
        for v in model.data_vars
        if uses.get(v) == {True} and not np.isin(v.get_value(), (0, 1)).all()
    ]


def per_point_arithmetic_integers(model, params, var_name):
    """Give integer containers used only in arithmetic a float copy, an input.

    ``beta * t`` with an integer time index ``t`` is differentiable in ``t``: the
    container is read through a float symbolic tensor named like it (its values
    are the container's, `pm_sens._core.points.current_value`). Returns the new parameters
    and ``{copy: (container, rows)}``.
    """
    counts = count_containers(model, var_name)  # trials: held, never moved
    numeric = [c for c in arithmetic_integers(model, params) if c not in counts]
    if not numeric:
        return params, {}
    copies = {c: symbolic_tensor(c.name, "float64", (None, *c.type.shape[1:])) for c in numeric}
    params = replace_rebuilding(params, copies, keep=model.free_RVs)
    return params, {copy: (c, np.arange(len(c.get_value()))) for c, copy in copies.items()}


def symbolic_tensor(name, dtype, shape):
    """``pt.tensor`` that takes any name (bambi's ``1|g`` would be read as a dtype)."""
    return pt.TensorType(dtype=dtype, shape=shape)(name=name)


def free_variables(model, outputs):
    """The model's free random variables that ``outputs`` depend on, in model order."""
    upstream = set(ancestors(outputs))
    return [rv for rv in model.free_RVs if rv in upstream]


def bart_variables(model, outputs):
    """pymc-bart's BART variables that ``outputs`` depend on, with the containers they take.

    Returns ``{rv: [container, ...]}``. (pymc-bart makes a class per variable,
    based on ``pymc_bart.bart.BARTRV``; it is recognized without importing it.)
    """
    return {
        rv: data_containers(model, _distribution_params(rv.owner), given_draws=True)
        for rv in free_variables(model, outputs)
        if any(c.__module__.startswith("pymc_bart") for c in type(rv.owner.op).__mro__)
    }


def observed_ancestors(model, outputs):
    """Observed RVs upstream of ``outputs``, mapped to their observed data."""
    upstream = set(ancestors(outputs))
    return {rv: model.rvs_to_values[rv] for rv in model.observed_RVs if rv in upstream}


def first_axis_reads(outputs):
    """``(read, base, index)`` for every ``base[index]`` along the first axis upstream."""
    for node in apply_ancestors(outputs):
        if (
            isinstance(node.op, AdvancedSubtensor)
            and len(node.inputs) == 2
            and indexes_first_axis(node)
        ):
            yield node.outputs[0], *node.inputs


def data_value(var):
    """The current value of a data container, or of an expression of containers only.

    Evaluated op by op in NumPy: compiling it (PyTensor's default) starts Numba,
    a second before the first analysis of a process.
    """
    if hasattr(var, "get_value"):
        return var.get_value()
    if isinstance(var, Constant):
        return var.data
    return var.eval(mode="FAST_COMPILE")


def indexes_first_axis(node):
    """Whether an advanced indexing node indexes the first axis only (``x[idx]``)."""
    positions = getattr(node.op, "idx_list", (0,))
    return len(positions) == 1 and not isinstance(positions[0], slice)


def censored_parts(censored):
    """Base variable and bounds of a ``pm.Censored`` variable, a missing bound as ±inf.

    PyMC writes a missing bound as the base variable itself (it clips nothing).
    """
    base, lower, upper = censored.owner.op.dist_params(censored.owner)
    lower = pt.constant(-np.inf) if lower is base else lower
    upper = pt.constant(np.inf) if upper is base else upper
    return base, lower, upper


def replace_rebuilding(outputs, replacements, keep=()):
    """``outputs`` with ``replacements``, every node above them rebuilt.

    Unlike ``graph_replace``, a replacement whose static shape is looser (any
    number of rows instead of the observed ones) does not get pinned to the old
    shape by a ``SpecifyShape``. Variables in ``keep`` (the model's random
    variables) and the graph's roots stay the same objects.

    A ``SpecifyShape`` of a rebuilt variable is dropped: it pinned the data's
    shape; a ``SymbolicOp`` (softmax) is built for the new input types.
    """
    memo = dict(replacements)
    for node in toposort(outputs, blockers=[*replacements, *keep]):
        inputs = [memo.get(i, i) for i in node.inputs]
        if all(new is old for new, old in zip(inputs, node.inputs, strict=True)):
            continue
        memo.update(zip(node.outputs, _rebuilt_outputs(node, inputs), strict=True))
    return [memo.get(output, output) for output in outputs]


def _rebuilt_outputs(node, inputs):
    """``node``'s op applied to ``inputs``, with outputs typed for them."""
    op = node.op
    if isinstance(op, SpecifyShape):
        return [inputs[0]]
    if isinstance(op, SymbolicOp):  # softmax & co.: built anew for the new input types
        outputs = op(*inputs)
        return outputs if isinstance(outputs, list | tuple) else [outputs]
    return node.clone_with_new_inputs(inputs, strict=False).outputs


def indexed_lengths(outputs, index):
    """Lengths of the first axes that ``index`` indexes in ``outputs``' graph (``a[index]``).

    The valid values of a group index are ``0 .. length − 1``. Lengths are read by
    evaluating the indexed variables' shapes (random variables are sampled once).
    """
    return sorted(
        {
            int(base.shape[0].eval(on_unused_input="ignore", mode="FAST_COMPILE"))
            for _, base, used in first_axis_reads(outputs)
            if used is index
        }
    )


def solves_a_linear_system(outputs):
    """Whether the graph of ``outputs`` solves a linear system (a Cholesky factor, a solve).

    A GP's conditional at new points does, with the training inputs' covariance.
    """
    ops = (Cholesky, SolveBase)
    return any(
        isinstance(getattr(node.op, "core_op", node.op), ops) for node in apply_ancestors(outputs)
    )

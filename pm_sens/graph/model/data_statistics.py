"""Statistics of the data inside a model, held at their values on the model's data.

A model that standardizes an input inside its graph, ``xs = (x - x.mean()) /
x.std()``, makes every point depend on every other point through the mean and
the sd. What its user means is the model as a function of a new x with the
training data's mean and sd: the transform is fixed at the data it was fitted
on. So each *statistic of the data* — an expression that reduces an input over
its observation axis (a sum, mean, sd, min, max: PyTensor writes them as
reductions over axis 0, with the axis's length; a median or another
quantile as an element of the input sorted over that axis) and depends on no
random variable — is replaced, in a copy of the graph, by its value on the
model's data.
"""

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Constant
from pytensor.graph.traversal import ancestors, graph_inputs, toposort
from pytensor.tensor.elemwise import CAReduce
from pytensor.tensor.shape import Shape, Shape_i
from pytensor.tensor.sort import ArgSortOp, SortOp
from pytensor.tensor.subtensor import Subtensor

from pm_sens.graph.compile.functions import evaluate
from pm_sens.graph.model.queries import replace_rebuilding

#: what a variable of the graph is, seen from the inputs' rows
_ROWS, _STATISTIC, _LENGTH = "rows", "statistic", "length"


def hold_data_statistics(model, params, inputs, defaults):
    """``params`` with each statistic of the ``inputs`` replaced by its value.

    Parameters
    ----------
    model : pymc.Model
        The model (its free random variables end the walk).
    params : list of TensorVariable
        The likelihood's parameters.
    inputs : list of TensorVariable
        Per-row inputs: containers, and symbols whose values are in ``defaults``.
    defaults : dict
        Values of symbolic inputs.

    Returns
    -------
    params : list of TensorVariable
    held : list of str
        What was held, e.g. ``["mean of x", "std of x"]``, in graph order.
    """
    kinds, users = _kinds(params, inputs, model.free_RVs)
    statistics = [
        var
        for var, kind in kinds.items()
        if kind == _STATISTIC and _is_maximal(var, kinds, params, users)
    ]
    statistics = [v for v in statistics if not _depends_on_random(v, model)]
    if not statistics:
        return params, []
    values = {var: _value(var, defaults) for var in statistics}
    constants = {var: pt.constant(value, dtype=var.dtype) for var, value in values.items()}
    held = list(dict.fromkeys(_describe(var, inputs, kinds) for var in statistics))
    return replace_rebuilding(params, constants, keep=model.free_RVs), held


def _kinds(params, inputs, blockers):
    """What each variable computed from an input is: its rows, a statistic, its length.

    Also returns ``{variable: outputs of the nodes that use it}``.
    """
    kinds, users = dict.fromkeys(inputs, _ROWS), {}
    for node in toposort(params, blockers=blockers):
        for i in node.inputs:
            users.setdefault(i, []).extend(node.outputs)
        seen = {kinds.get(i) for i in node.inputs} - {None}
        if not seen:
            continue
        op = node.op
        if isinstance(op, Shape | Shape_i):
            kind = _LENGTH
        elif _ROWS in seen and _reduces_rows(op):
            kind = _STATISTIC
        elif _ROWS in seen:
            kind = _ROWS
        elif _STATISTIC in seen:
            kind = _STATISTIC
        else:
            kind = _LENGTH
        kinds.update(dict.fromkeys(node.outputs, kind))
    return kinds, users


def _reduces_rows(op):
    """A reduction over the rows (sum, mean, max, …), or a sort along them (quantiles)."""
    if isinstance(op, CAReduce):
        return op.axis is None or 0 in op.axis
    return isinstance(op, SortOp | ArgSortOp) and op.axis == 0


def _is_maximal(var, kinds, params, users):
    """Whether a statistic is used by anything that is not a statistic itself."""
    return var in params or any(kinds[out] != _STATISTIC for out in users.get(var, ()))


def _depends_on_random(var, model):
    free = set(model.free_RVs)
    return any(v in free for v in ancestors([var], blockers=model.free_RVs))


def _value(var, defaults):
    symbols = [
        v
        for v in graph_inputs([var])
        if not isinstance(v, Constant) and not hasattr(v, "get_value")
    ]
    return np.asarray(evaluate(var, symbols, [defaults[s] for s in symbols]))


def _describe(var, inputs, kinds):
    """``"mean of x"``: the statistics held (PyTensor names mean, std, var, median) and input.

    An expression of several statistics (``q75 − q25``) is described by them.
    """
    reduced = [i.name for i in inputs if i in set(ancestors([var]))]
    names = ", ".join(dict.fromkeys(_statistic_names(var, kinds)))
    return f"{names} of {', '.join(reduced)}"


def _statistic_names(var, kinds):
    """The outermost statistics that make up ``var``, by name."""
    op = var.owner.op
    if var.name or isinstance(getattr(op, "name", None), str):
        return [var.name or op.name]  # pt.median is an IfElse named "median"
    if isinstance(op, Subtensor) and isinstance(var.owner.inputs[0].owner.op, SortOp):
        return ["order statistic"]  # x sorted, then indexed: a quantile
    if _reduces_rows(op):
        return [type(op.scalar_op if isinstance(op, CAReduce) else op).__name__.lower()]
    parts = [i for i in var.owner.inputs if kinds.get(i) == _STATISTIC]
    return [name for part in parts for name in _statistic_names(part, kinds)]

"""Inputs the predictions depend on only through steps: no derivative to measure.

A sum of trees (BART), ``floor``, ``round``, ``sign``, a comparison, the
condition of a ``switch`` or a cast to integers is piecewise constant: its
derivative is zero almost everywhere. An input whose every path to the
parameters passes through one has R-sens, EAD and Integrated Gradients of
zero wherever they are defined, which says nothing about how much it
matters; the measures from moved points (the finite-difference KL over a
finite step, VAR, levels, permutations, partial dependence) still see it.
"""

import pytensor.scalar as ps
from pymc.distributions.distribution import SymbolicRandomVariable
from pytensor.graph.traversal import ancestors, apply_ancestors
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.shape import Shape, Shape_i

from pm_sens.graph.compile.nodes import is_float
from pm_sens.graph.frontends.trees import TreeSums

#: the scalar operations that are piecewise constant, by the name users know
_STEPS = {
    ps.Floor: "floor",
    ps.Ceil: "ceil",
    ps.RoundHalfToEven: "round",
    ps.RoundHalfAwayFromZero: "round",
    ps.Trunc: "trunc",
    ps.Sign: "sign",
    ps.IntDiv: "// (floor division)",
    **dict.fromkeys((ps.LT, ps.GT, ps.LE, ps.GE, ps.EQ, ps.NEQ), "a comparison"),
}
_SHAPES = (Shape, Shape_i)
_RANDOM = (RandomVariable, SymbolicRandomVariable)


def _step(node, position):
    """What makes input ``position`` of ``node`` carry no derivative: a name, "" or None.

    A name for the steps users write (tree sums, rounding, comparisons, casts to
    integers); "" for integer values and shapes, which carry none either but
    are no sign of a step; None where the derivative passes.
    """
    if isinstance(node.op, TreeSums):
        return f"the trees of the BART variable {node.op.variable!r}" if position == 0 else ""
    if isinstance(node.op, Elemwise):
        scalar = node.op.scalar_op
        if type(scalar) in _STEPS:
            return _STEPS[type(scalar)]
        if isinstance(scalar, ps.Switch) and position == 0:
            return "the condition of a switch"
    parent = node.inputs[position]
    if not hasattr(parent, "dtype") or not is_float(parent) or isinstance(node.op, _SHAPES):
        return ""  # a random generator, integers, a shape
    if any(not is_float(out) for out in node.outputs):
        return "a cast to integers"
    return None


def piecewise_constant_inputs(outputs, inputs):
    """The ``inputs`` that reach ``outputs`` only through steps, with the steps' names.

    Returns ``{input: [step, ...]}`` for each input with no path to
    ``outputs`` along which derivatives pass, that reaches them through at
    least one named step (`_step`; behind integer values, the steps that
    made them, such as a cast of a float to integers to index a variable).
    """
    smooth, stack, blocked = set(outputs), list(outputs), {}
    while stack:
        var = stack.pop()
        if var.owner is None or isinstance(var.owner.op, _RANDOM):
            continue  # a free variable's prior: it is given by its draws
        for position, parent in enumerate(var.owner.inputs):
            step = _step(var.owner, position)
            if step is None and parent not in smooth:
                smooth.add(parent)
                stack.append(parent)
            elif step is not None:
                blocked.setdefault(parent, set()).add(step)
    steps = {}
    for parent, names in blocked.items():
        names = {n for n in names if n} or _steps_above(parent)
        for x in set(ancestors([parent])) & set(inputs) - smooth if names else ():
            steps.setdefault(x, set()).update(names)
    return {x: sorted(steps[x]) for x in inputs if x in steps}


def _steps_above(var):
    """The named steps among the operations that computed ``var`` (integer values)."""
    if not hasattr(var, "dtype"):
        return set()
    return {
        step
        for node in apply_ancestors([var], blockers=None)
        if not isinstance(node.op, _RANDOM)
        for step in (_step(node, p) for p in range(len(node.inputs)))
        if step
    }

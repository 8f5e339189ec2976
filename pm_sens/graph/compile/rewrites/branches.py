"""Special functions of a select's branch computed only where it is selected (NumPy backend).

Run op by op in NumPy, ``switch(c, a, b)`` computes both ``a`` and ``b`` on
every element. PyMC writes log-CDFs so, one stable form per region: an
ordered probit's class probabilities evaluate six ``erfcx``, two ``erf`` and
two ``erfc`` per row and draw where each element needs a third of them. Here
the special functions (10–25 ns a value in SciPy) that only one side of the
selects of a condition uses run their ufunc with ``where=`` that side's
elements; the other elements hold any value, which the selects drop. The
cheap elementwise ops around them still run on every element: gathering
each side's elements costs more than they do (a strided copy per input).
"""

import numpy as np
import pytensor.scalar.math as psm
import pytensor.tensor as pt
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.graph.rewriting.basic import GraphRewriter
from pytensor.graph.traversal import io_toposort
from pytensor.scalar import Switch
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.utils import import_func_from_string

from pm_sens.graph.compile.nodes import is_elemwise

#: scalar ops worth not computing on the elements a select drops
COSTLY_FUNCTIONS = (
    psm.Erf,
    psm.Erfc,
    psm.Erfcx,
    psm.Erfinv,
    psm.Erfcinv,
    psm.Gamma,
    psm.GammaLn,
    psm.Psi,
    psm.TriGamma,
    psm.PolyGamma,
    psm.GammaInc,
    psm.GammaIncC,
    psm.GammaIncInv,
    psm.GammaIncCInv,
    psm.BetaInc,
    psm.BetaIncInv,
    psm.Hyp2F1,
    psm.Owens_t,
    psm.I0,
    psm.I1,
    psm.Ive,
    psm.J0,
    psm.J1,
    psm.Jv,
    psm.Kve,
)


class SpecialFunctionsWhereSelected(GraphRewriter):
    """Special functions under one side of ``switch(c, a, b)`` computed where it is selected.

    The selects of one condition ``c`` go together (a log density's and those
    its derivatives sink into, on ``c`` or on copies of it with axes added),
    where ``c`` has their shape or broadcasts into it (a censored law's bound
    per row, its parameters per draw and row). A side's nodes are the
    elementwise ancestors of its branches, and the axes added to them, used by
    nothing else; those that apply a special function into whose shape ``c``
    broadcasts become `WhereSelected`. Nested selects narrow their masks
    further.
    """

    def apply(self, fgraph):
        """Mask the special functions of each condition's sides (nested masks combine)."""
        done = set()
        while (group := _next_group(fgraph, done)) is not None:
            cond, sides = group
            done.add(cond)
            mask = cond if cond.dtype == "bool" else pt.neq(cond, 0)
            replacements = [
                (node.outputs[0], _masked(node, side_mask))
                for side_mask, nodes in zip((mask, ~mask), sides, strict=True)
                for node in nodes
                if _maskable(node, cond)
            ]
            fgraph.replace_all_validate(replacements, reason="special_functions_where_selected")


def _next_group(fgraph, done):
    """``(c, (true side's nodes, false side's nodes))`` with a special function, or None.

    Selects on copies of ``c`` with axes added (`_expanded_from`) join its group:
    a gradient selects on the condition in each layout its terms take.
    """
    groups = {}
    for node in fgraph.toposort():
        if not is_elemwise(node, Switch):
            continue
        cond = _expanded_from(node.inputs[0])
        if cond in done:
            continue
        if _broadcasts_into(node.inputs[0], node.outputs[0]):
            groups.setdefault(cond, []).append(node)
    for cond, selects in groups.items():
        sides = tuple(_side_nodes(fgraph, selects, k) for k in (1, 2))
        if any(_maskable(node, cond) for side in sides for node in side):
            return cond, sides
        done.add(cond)
    return None


def _side_nodes(fgraph, selects, k):
    """The elementwise nodes only the selects' input ``k`` (1: true, 2: false) uses."""
    selects = set(selects)
    owned = set()
    for node in reversed(io_toposort([], [s.inputs[k] for s in selects])):  # users first
        if not (isinstance(node.op, Elemwise | WhereSelected) or _adds_axes(node)):
            continue
        uses = [c for out in node.outputs for c in fgraph.clients[out]]
        if all(c in owned or (c in selects and i == k) for c, i in uses):
            owned.add(node)
    return owned


def _adds_axes(node):
    """Whether ``node`` only adds broadcastable axes to its input (an ``expand_dims``)."""
    order = getattr(node.op, "new_order", None)
    return order is not None and [i for i in order if i != "x"] == list(
        range(len(node.inputs[0].type.shape))
    )


def _expanded_from(var):
    """The variable that ``var`` is, with axes added (`_adds_axes`) stripped."""
    while var.owner is not None and _adds_axes(var.owner):
        var = var.owner.inputs[0]
    return var


def _broadcasts_into(cond, var):
    """Whether ``cond`` has ``var``'s dimensions and broadcasts into its shape.

    Where ``var`` has length 1 (broadcastable), so must ``cond``: a masked
    function's output has the shape of its inputs and mask together.
    """
    pairs = zip(cond.type.broadcastable, var.type.broadcastable, strict=False)
    return cond.ndim == var.ndim and all(c or not v for c, v in pairs)


def _maskable(node, cond):
    """Whether ``node`` applies a special function (masked or not) ``cond`` broadcasts into."""
    if len(node.outputs) != 1 or not _broadcasts_into(cond, node.outputs[0]):
        return False
    if isinstance(node.op, WhereSelected):
        return True
    spec = getattr(node.op, "nfunc_spec", None)
    return is_elemwise(node, COSTLY_FUNCTIONS) and spec is not None and spec[1] == len(node.inputs)


def _masked(node, mask):
    """``node``'s output computed where ``mask`` is true (and its own mask, if it has one)."""
    if isinstance(node.op, WhereSelected):
        own, *inputs = node.inputs
        return node.op(pt.and_(own, mask), *inputs)
    return WhereSelected(node.op)(mask, *node.inputs)


class WhereSelected(Op):
    """An elementwise special function computed only where ``mask`` is true.

    Its other elements hold any value (whatever ``np.empty`` gave): only
    selects that drop them read them.
    """

    __props__ = ("elemwise",)

    def __init__(self, elemwise):
        self.elemwise = elemwise

    def make_node(self, mask, *inputs):
        """The elementwise op's output, with ``mask`` as first input."""
        out = self.elemwise.make_node(*inputs).outputs[0]
        return Apply(self, [mask, *out.owner.inputs], [out.type()])

    def perform(self, node, inputs, output_storage):
        """The ufunc with ``where=mask``, into an array of the layout of the mask or an input.

        The first of the mask and the inputs that has the output's shape
        gives the layout (a mask that broadcasts has none of its own).
        """
        mask, *args = inputs
        ufunc = import_func_from_string(self.elemwise.nfunc_spec[0])
        shape = np.broadcast_shapes(*(np.shape(a) for a in inputs))
        like = next((a for a in inputs if np.shape(a) == shape), None)
        dtype = node.outputs[0].dtype
        out = np.empty(shape, dtype) if like is None else np.empty_like(like, dtype=dtype)
        with np.errstate(all="ignore"):
            ufunc(*args, out=out, where=mask)
        output_storage[0][0] = out

    def infer_shape(self, node, shapes):
        """The elementwise op's shape (the mask broadcasts into it)."""
        elemwise = self.elemwise.make_node(*node.inputs[1:])
        return self.elemwise.infer_shape(elemwise, shapes[1:])

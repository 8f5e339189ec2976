"""Cumulative products as chains of products, so their derivatives stay finite.

PyTensor differentiates ``cumprod(x)`` as a reversed cumulative sum divided by
``x``: a factor of exactly 0 (a stick-breaking weight ``1 − Φ(z)`` that
saturates, as the probit stick-breaking of dependent density regression
writes it) makes the derivative 0/0 where it is finite. Along an axis of a
fixed, short length the same values are the running products
``x[0], x[0]·x[1], …``, whose derivatives PyTensor builds from products alone.
"""

import pytensor.tensor as pt
from pytensor.graph.fg import MissingInputError
from pytensor.graph.traversal import toposort
from pytensor.tensor.extra_ops import CumOp

from pm_sens.graph.model.queries import replace_rebuilding

#: the longest axis written as a chain (one product per element along it)
CHAIN_LIMIT = 256


def cumulative_products_as_chains(params, keep=()):
    """``params`` with every ``cumprod`` along a short axis written as running products.

    Returns the new parameters; ``keep``: variables (the model's random
    variables) left as they are, as `replace_rebuilding` does.
    """
    replacements = {}
    for node in toposort(params, blockers=keep):
        if isinstance(node.op, CumOp) and node.op.mode == "mul":
            chain = _running_products(node.inputs[0], node.op.axis)
            if chain is not None:
                replacements[node.outputs[0]] = chain
    if not replacements:
        return params
    return replace_rebuilding(params, replacements, keep=keep)


def _running_products(x, axis):
    """``cumprod(x, axis)`` as a chain of products, or None for a long or unknown axis."""
    if axis is None:
        x, axis = x.ravel(), 0
    length = _length(x, axis)
    if length is None or length > CHAIN_LIMIT:
        return None
    along = pt.moveaxis(x, axis, 0)
    products = [along[0]]
    for k in range(1, length):
        products.append(products[-1] * along[k])
    return pt.moveaxis(pt.stack(products), 0, axis)


def _length(x, axis):
    """The axis' length: static, or the value its shape graph has now (a dim's length)."""
    static = x.type.shape[axis]
    if static is not None:
        return static
    try:
        return int(x.shape[axis].eval(on_unused_input="ignore"))
    except MissingInputError:  # a length that depends on more than the model's data
        return None

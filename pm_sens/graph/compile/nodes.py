"""Small questions about PyTensor nodes and variables."""

import numpy as np
from pytensor.graph.traversal import ancestors
from pytensor.tensor.basic import Alloc, get_underlying_scalar_constant_value
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.exceptions import NotScalarConstantError


def is_elemwise(node, scalar_op) -> bool:
    """Whether ``node`` applies the elementwise scalar op ``scalar_op`` (a class)."""
    return isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op, scalar_op)


def is_float(var) -> bool:
    """Whether a variable holds floating-point values."""
    return np.dtype(var.dtype).kind == "f"


def depends_on(output, variables) -> bool:
    """Whether ``output`` has any of ``variables`` among its ancestors."""
    targets = set(variables)
    return any(var in targets for var in ancestors([output]))


def is_zeros(var) -> bool:
    """Whether ``var`` is an array of zeros allocated whole (``pt.zeros``, a gradient's)."""
    if var.owner is None or not isinstance(var.owner.op, Alloc):
        return False
    try:
        return get_underlying_scalar_constant_value(var.owner.inputs[0]) == 0
    except NotScalarConstantError:
        return False

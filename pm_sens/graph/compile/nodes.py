"""Small questions about PyTensor nodes and variables."""

import numpy as np
from pytensor.graph.traversal import ancestors
from pytensor.tensor.elemwise import Elemwise


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

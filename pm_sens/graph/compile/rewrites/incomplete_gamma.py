"""The regularized incomplete gamma functions as the JAX backend computes them.

XLA computes ``gammainc`` and ``gammaincc`` with a loop per value, which on
JAX's CPU build costs about 4 µs a value (SciPy's: 0.1 µs); a censored
Weibull's moments take two per draw and row. PyTensor's ops become
`pm_sens.graph.compile.special`'s, whose JAX form is arithmetic that XLA
fuses with the graph's other elementwise work.
"""

import pytensor.scalar.math as psm
from pytensor.graph.rewriting.basic import node_rewriter
from pytensor.tensor.elemwise import Elemwise

from pm_sens.graph.compile.special import gammainc_on_device, gammaincc_on_device

#: PyTensor's scalar op -> this backend's elementwise op
_ON_DEVICE = {psm.GammaInc: gammainc_on_device, psm.GammaIncC: gammaincc_on_device}


@node_rewriter([Elemwise])
def local_regularized_gamma_on_device(fgraph, node):
    """``gammainc`` and ``gammaincc`` as the JAX backend's ops."""
    replacement = _ON_DEVICE.get(type(node.op.scalar_op))
    if replacement is None:
        return None
    return [replacement(*node.inputs)]

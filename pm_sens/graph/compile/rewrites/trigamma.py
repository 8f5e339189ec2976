"""The trigamma function ψ₁ in elementary ops, which every backend runs as a loop.

PyTensor's ``tri_gamma`` (second derivatives of ``gammaln`` and ``betaln``: a
beta-binomial's or a Student-t's curvature in its parameters) has neither a
NumPy ufunc nor a Numba implementation: both backends call SciPy once per
element, about 200 times slower than an elementwise expression.
"""

import numpy as np
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.graph.rewriting.basic import node_rewriter
from pytensor.tensor.elemwise import Elemwise

#: the recurrence's steps: the asymptotic series from x + 10 on
_SHIFT = 10
#: Bernoulli numbers B₂, B₄, …, B₁₂ of the asymptotic series
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730)


def trigamma(x):
    """ψ₁(x) for any real x, to 1e-15 relative for x > 0.

    Below 0, as well as ``sin(πx)`` is known near the poles at 0, −1, −2, …
    (1e-10 relative at 1e-6 from one). For x ≥ 0 the recurrence
    ``ψ₁(x) = 1/x² + ψ₁(x + 1)`` carries x past 10, where the asymptotic series
    ``1/z + 1/(2z²) + Σ_k B₂ₖ/z^{2k+1}`` (DLMF 5.15.8) has a remainder below
    1e-15 · ψ₁(z); below 0 the reflection
    ``ψ₁(x) = π²/sin²(πx) − ψ₁(1 − x)`` (DLMF 5.15.6) gives it from 1 − x > 0.
    """
    negative = pt.lt(x, 0)
    y = pt.switch(negative, 1 - x, x)
    near = sum(1 / (y + k) ** 2 for k in range(_SHIFT))
    z = y + _SHIFT
    series = 1 / z + 1 / (2 * z**2)
    for k, b in enumerate(_BERNOULLI, 1):
        series = series + b / z ** (2 * k + 1)
    positive = near + series
    return pt.switch(negative, (np.pi / pt.sin(np.pi * x)) ** 2 - positive, positive)


@node_rewriter([Elemwise])
def local_trigamma_as_series(fgraph, node):
    """``tri_gamma(x)`` as `trigamma`, a loop of elementwise ops."""
    if not isinstance(node.op.scalar_op, ps.TriGamma):
        return None
    (x,) = node.inputs
    return [pt.cast(trigamma(x), node.outputs[0].dtype)]

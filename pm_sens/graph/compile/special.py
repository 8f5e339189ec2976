"""Special functions PyTensor lacks, as elementwise ops: ``e^z E₁(z)`` (the Wald's entropy).

The op runs in NumPy through `pm_sens.families.wald.scaled_exp1` (SciPy's
``exp1``, an asymptotic series where ``e^z`` would overflow), and on the JAX
backend by arithmetic alone (`scaled_exp1_by_arithmetic`, registered by
`register_jax_forms` before the JAX backend compiles a graph), which XLA
fuses with the graph's other elementwise work; jax.scipy's ``exp1`` loops
per value (measured: `benchmarks/README.md`, "The JAX backend").
"""

import functools

import numpy as np
import pytensor.scalar as ps
from pytensor.tensor.elemwise import Elemwise

from pm_sens.families.wald import scaled_exp1 as _scaled_exp1


class ScaledExp1(ps.UnaryScalarOp):
    """``e^z E₁(z)`` for z > 0; its derivative is ``e^z E₁(z) − 1/z``."""

    nfunc_spec = ("pm_sens.families.wald.scaled_exp1", 1, 1)

    def impl(self, z):
        """The value at one z (NumPy's linker runs the whole array through ``nfunc_spec``)."""
        return _scaled_exp1(z).item()

    def pullback(self, inputs, outputs, output_grads):
        """``∂/∂z e^z E₁(z) = e^z E₁(z) − 1/z``, from the op's own output."""
        (z,), (value,), (gz,) = inputs, outputs, output_grads
        return [gz * (value - 1 / z)]


#: ``e^z E₁(z)`` elementwise, as a PyTensor op
scaled_exp1 = Elemwise(ScaledExp1(ps.upgrade_to_float, name="scaled_exp1"))


#: ``e^z E₁(z)`` by its power series below this z (`_SERIES_TERMS` terms), by its
#: continued fraction from here on (`_FRACTION_LEVELS` levels, evaluated from the
#: deepest): within 5e-15 of SciPy's, relative, at every z > 0
_SERIES_BELOW = 2.0
_SERIES_TERMS = 25
_FRACTION_LEVELS = 50


def scaled_exp1_by_arithmetic(xp, z):
    """``e^z E₁(z)`` for z > 0 in the namespace ``xp``, by additions, products and quotients.

    Below `_SERIES_BELOW`: ``e^z (−γ − log z − Σ_k (−z)^k/(k·k!))``; from there on
    the continued fraction ``1/(z + 1 − 1/(z + 3 − 4/(z + 5 − …)))``, which
    never overflows.
    """
    small = z < _SERIES_BELOW
    near = xp.where(small, z, 1.0)
    term, total = xp.ones_like(near), xp.zeros_like(near)
    for k in range(1, _SERIES_TERMS + 1):
        term = term * (-near) / k
        total = total + term / k
    by_series = xp.exp(near) * (-np.euler_gamma - xp.log(near) - total)
    far = xp.where(small, _SERIES_BELOW, z)
    fraction = far + (2 * _FRACTION_LEVELS + 1)
    for k in range(_FRACTION_LEVELS, 0, -1):
        fraction = far + (2 * k - 1) - k * k / fraction
    return xp.where(small, by_series, 1 / fraction)


@functools.cache
def register_jax_forms():
    """Give PyTensor's JAX linker this module's ops (imports JAX: called where it is used)."""
    import jax.numpy as jnp
    from pytensor.link.jax.dispatch import jax_funcify

    @jax_funcify.register(ScaledExp1)
    def _jax_scaled_exp1(op, node=None, **kwargs):
        return functools.partial(scaled_exp1_by_arithmetic, jnp)

"""Special functions as elementwise ops: ``e^z E₁(z)``, and the JAX backend's gamma functions.

``e^z E₁(z)`` (the Wald's entropy), which PyTensor lacks, runs in NumPy
through `pm_sens.families.wald.scaled_exp1` (SciPy's ``exp1``, an asymptotic
series where ``e^z`` would overflow), and on the JAX backend by arithmetic
alone (`scaled_exp1_by_arithmetic`, registered by `register_jax_forms` before
the JAX backend compiles a graph), which XLA fuses with the graph's other
elementwise work; jax.scipy's ``exp1`` loops per value (measured:
`benchmarks/README.md`, "The JAX backend"). XLA's incomplete gamma functions
loop per value too: the JAX backend's graphs take PyTensor's as
`GammaIncOnDevice` and `GammaIncCOnDevice`
(`pm_sens.graph.compile.rewrites.incomplete_gamma`), computed by
`regularized_gamma_by_arithmetic` where every shape allows it.
"""

import functools

import numpy as np
import pytensor.scalar as ps
import pytensor.scalar.math as psm
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


class GammaIncOnDevice(psm.GammaInc):
    """PyTensor's ``gammainc``, P(s, x), computed on the JAX backend by arithmetic."""


class GammaIncCOnDevice(psm.GammaIncC):
    """PyTensor's ``gammaincc``, Q(s, x) = 1 − P(s, x), computed on the JAX backend likewise."""


gammainc_on_device = Elemwise(GammaIncOnDevice(ps.upgrade_to_float, name="gammainc_on_device"))
gammaincc_on_device = Elemwise(GammaIncCOnDevice(ps.upgrade_to_float, name="gammaincc_on_device"))

#: P(s, x) by its series where x < s + 1, Q(s, x) by its continued fraction
#: elsewhere, each to this many terms: within 2e-13 of SciPy's (relative to the
#: smaller of P and Q, 1e-13 absolute) for every shape 0 < s <= `_ARITHMETIC_UP_TO`
_GAMMA_TERMS = 60
_ARITHMETIC_UP_TO = 40.0


def regularized_gamma_by_arithmetic(xp, s, x, lgamma, upper=False):
    """P(s, x) (``upper``: Q(s, x)) for 0 < s <= `_ARITHMETIC_UP_TO`, x >= 0, in ``xp``.

    With ``f = x^s e^{−x}/Γ(s)``: where x < s + 1, ``P = f Σ_n x^n/(s (s+1) ⋯ (s+n))``;
    elsewhere ``Q = f/(x + 1 − s − 1(1 − s)/(x + 3 − s − 2(2 − s)/(x + 5 − s − ⋯)))``,
    evaluated from the deepest level; the other of the two is 1 minus it.
    Each side is computed from stand-ins where it is not taken; ``lgamma`` is
    the namespace's log-gamma function.
    """
    near = x < s + 1
    x_near, s_near = xp.where(near, x, 0.5), xp.where(near, s, 1.0)
    term = 1 / s_near
    series = term
    for n in range(1, _GAMMA_TERMS + 1):
        term = term * x_near / (s_near + n)
        series = series + term
    infinite = xp.isinf(x)
    x_far = xp.where(near | infinite, s + 2.0, x)
    s_far = xp.where(near, 1.0, s)
    fraction = x_far + (2 * _GAMMA_TERMS + 1) - s_far
    for i in range(_GAMMA_TERMS, 0, -1):
        fraction = x_far + (2 * i - 1) - s_far - i * (i - s_far) / fraction
    front = xp.exp(s * xp.log(xp.where(infinite, 1.0, x)) - x - lgamma(s))
    lower_side, upper_side = front * series, front / fraction
    if upper:
        return xp.where(infinite, 0.0, xp.where(near, 1 - lower_side, upper_side))
    return xp.where(infinite, 1.0, xp.where(near, lower_side, 1 - upper_side))


def _regularized_gamma_on_device(s, x, upper):
    """`regularized_gamma_by_arithmetic` in JAX where every s allows it, else XLA's loop."""
    import jax
    import jax.numpy as jnp
    from jax.scipy import special as jax_special

    s, x = jnp.broadcast_arrays(s, x)
    exact = jax_special.gammaincc if upper else jax_special.gammainc
    outside = (s <= 0) | (s > _ARITHMETIC_UP_TO)  # nan is not: it stays nan
    return jax.lax.cond(
        jnp.any(outside),
        exact,
        functools.partial(
            regularized_gamma_by_arithmetic, jnp, lgamma=jax_special.gammaln, upper=upper
        ),
        s,
        x,
    )


@functools.cache
def register_jax_forms():
    """Give PyTensor's JAX linker this module's ops (imports JAX: called where it is used)."""
    import jax.numpy as jnp
    from pytensor.link.jax.dispatch import jax_funcify

    @jax_funcify.register(ScaledExp1)
    def _jax_scaled_exp1(op, node=None, **kwargs):
        return functools.partial(scaled_exp1_by_arithmetic, jnp)

    @jax_funcify.register(GammaIncOnDevice)
    def _jax_gammainc(op, node=None, **kwargs):
        return functools.partial(_regularized_gamma_on_device, upper=False)

    @jax_funcify.register(GammaIncCOnDevice)
    def _jax_gammaincc(op, node=None, **kwargs):
        return functools.partial(_regularized_gamma_on_device, upper=True)

"""The truncated Normal's mean, variance and entropy as graph expressions.

Normal(μ, σ) truncated to (l, u), with the standardized bounds a, b, ``Z =
Φ(b) − Φ(a)`` (in log space from the tail nearer to the interval,
`pm_sens.families.censored_normal.graph_log_mass`) and ``t = φ/Z`` at each
bound. Far beyond one bound the textbook forms cancel terms near a²; there
the Mills ratio's continued fraction gives them to rounding.
"""

import pytensor.tensor as pt
from pytensor.gradient import disconnected_grad

from pm_sens.families import censored_normal


def _parts(mu, sigma, lower, upper):
    """The standardized bounds a, b, ``log Z`` and ``t_a = φ(a)/Z``, ``t_b = φ(b)/Z``."""
    a, b = censored_normal.graph_bounds(pt, mu, sigma, lower, upper)
    log_mass = censored_normal.graph_log_mass(pt, a, b)
    t_a, t_b = (pt.exp(censored_normal.log_pdf(z) - log_mass) for z in (a, b))
    return a, b, log_mass, t_a, t_b


#: a bound this many scales beyond the location, the other's terms below rounding,
#: takes the moments from the Mills ratio's continued fraction
_FRACTION_FROM = 4.0
#: its levels: 2e-16 relative at 4 scales (measured against 60-digit arithmetic)
_FRACTION_DEPTH = 50


def _far_in_a_tail(a, b):
    """Where the interval lies far in one tail, the distance to its nearer bound and the side.

    Returns ``(far, z, side)``: whether the nearer bound ``z`` (a ≥ 0, or −b ≥
    0) is at least `_FRACTION_FROM` scales out while the farther one's terms
    ``φ(far)/φ(z)``, times the squares of both, are below 1e-20;
    ``side`` +1 above the location, −1 below.
    """
    upper_side = a >= 0
    z = pt.where(upper_side, a, -b)
    other = pt.where(upper_side, b, -a)
    log_ratio = -(other - z) * (other + z) / 2  # log φ(other) − log φ(z)
    small = log_ratio + 2 * pt.log(pt.maximum(other, 1.0) * pt.maximum(z, 1.0)) < -46.0
    far = (z >= _FRACTION_FROM) & small
    return far, pt.maximum(z, _FRACTION_FROM), pt.where(upper_side, 1.0, -1.0)


def _mills_fraction(z):
    """``C₂, C₃, C₄`` of the Mills ratio's continued fraction at z ≥ `_FRACTION_FROM`.

    ``(1 − Φ(z))/φ(z) = 1/C₁``, ``C_k = z + k/C_{k+1}``, evaluated from its
    `_FRACTION_DEPTH`-th level up. Beyond a bound at z the standard normal's
    mean is ``C₁ = z + 1/C₂`` and its variance ``1 + z C₁ − C₁²``, which is
    ``(z + 4/C₃ − 3/C₄)/(C₃ C₂²)`` by the recurrence: a sum of positive terms,
    where ``1 + z C₁ − C₁²`` (near ``1/z²``) cancels terms near z².
    """
    fraction = z
    for k in range(_FRACTION_DEPTH, 4, -1):
        fraction = z + k / fraction
    c4 = z + 4 / fraction
    c3 = z + 3 / c4
    return z + 2 / c3, c3, c4


def moments(mu, sigma, lower, upper):
    """Mean and variance of Normal(μ, σ) truncated to (l, u).

    With ``t_a = φ(a)/Z``, ``t_b = φ(b)/Z``: ``E[y] = μ + σ(t_a − t_b)``,
    ``Var[y] = σ²(1 + a t_a − b t_b − (t_a − t_b)²)``; far in a tail
    (`_far_in_a_tail`), from the Mills ratio's continued fraction
    (`_mills_fraction`).
    """
    a, b, _, t_a, t_b = _parts(mu, sigma, lower, upper)
    shift = t_a - t_b
    variance = 1 + a * t_a - b * t_b - shift**2
    far, z, side = _far_in_a_tail(a, b)
    c2, c3, c4 = _mills_fraction(z)
    shift = _tail_values(shift, far, side * (z + 1 / c2))
    variance = _tail_values(variance, far, (z + 4 / c3 - 3 / c4) / (c3 * c2**2))
    return mu + sigma * shift, sigma**2 * variance


def entropy(mu, sigma, lower, upper):
    """``log(√(2πe) σ Z) + (a t_a − b t_b)/2`` (the second moment ``1 + a t_a − b t_b``).

    Far in a tail, beyond a bound at z (`_far_in_a_tail`), ``log Z`` and ``z t_z/2``
    are near ``∓z²/2``: there ``log σ + ½ − log C₁ + z/(2 C₂)`` instead, with
    ``Z = φ(z)/C₁`` and ``t_z = C₁ = z + 1/C₂`` (`_mills_fraction`).
    """
    a, b, log_mass, t_a, t_b = _parts(mu, sigma, lower, upper)
    value = pt.log(sigma) + censored_normal.LOG_ROOT_2PI + 0.5 + log_mass + (a * t_a - b * t_b) / 2
    far, z, _ = _far_in_a_tail(a, b)
    c2, _, _ = _mills_fraction(z)
    return _tail_values(value, far, pt.log(sigma) + 0.5 - pt.log(z + 1 / c2) + z / (2 * c2))


def _tail_values(value, far, in_tail):
    """``value``, and ``in_tail`` where ``far``, with ``value``'s derivatives everywhere.

    The continued fraction's derivatives, level by level, would make a moment
    mode's graph many times larger (one fused operation of more inputs than
    PyTensor's Python mode takes); the derivatives stay those of the
    difference of ``φ/Z``'s terms, as accurate as before. ``value − value``
    carries them and is 0 (a sum ``value + (in_tail − value)`` is flattened by
    PyTensor's rewrites into one of ``value``'s terms near z²).
    """
    return pt.where(far, disconnected_grad(in_tail) + (value - disconnected_grad(value)), value)

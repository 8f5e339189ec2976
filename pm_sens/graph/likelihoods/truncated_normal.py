"""The truncated Normal's mean, variance and entropy as graph expressions.

Normal(μ, σ) truncated to (l, u), with the standardized bounds a, b, ``Z =
Φ(b) − Φ(a)`` (in log space from the tail nearer to the interval,
`pm_sens.families.censored_normal.graph_log_mass`) and ``t = φ/Z`` at each
bound. Far beyond one bound the textbook forms cancel terms near a²; there
the family's forms from the Mills ratio's continued fraction
(`pm_sens.families.truncated_normal.beyond_a_bound`) give them to rounding.
"""

import pytensor.tensor as pt
from pytensor.gradient import disconnected_grad

from pm_sens.families import censored_normal
from pm_sens.families import truncated_normal as family


def _parts(mu, sigma, lower, upper):
    """The standardized bounds a, b, ``log Z`` and ``t_a = φ(a)/Z``, ``t_b = φ(b)/Z``."""
    a, b = censored_normal.graph_bounds(pt, mu, sigma, lower, upper)
    log_mass = censored_normal.graph_log_mass(pt, a, b)
    t_a, t_b = (pt.exp(censored_normal.log_pdf(z) - log_mass) for z in (a, b))
    return a, b, log_mass, t_a, t_b


def moments(mu, sigma, lower, upper):
    """Mean and variance of Normal(μ, σ) truncated to (l, u).

    With ``t_a = φ(a)/Z``, ``t_b = φ(b)/Z``: ``E[y] = μ + σ(t_a − t_b)``,
    ``Var[y] = σ²(1 + a t_a − b t_b − (t_a − t_b)²)``; far beyond one bound
    (`pm_sens.families.truncated_normal.far_in_a_tail`), the mean's distance
    ``C₁`` from it and the excess's variance.
    """
    a, b, _, t_a, t_b = _parts(mu, sigma, lower, upper)
    shift = t_a - t_b
    variance = 1 + a * t_a - b * t_b - shift**2
    far, z, side = family.far_in_a_tail(pt, a, b)
    c1, _, tail_variance, _, _ = family.beyond_a_bound(pt, z)
    shift = _tail_values(shift, far, side * c1)
    variance = _tail_values(variance, far, tail_variance)
    return mu + sigma * shift, sigma**2 * variance


def entropy(mu, sigma, lower, upper):
    """``log(√(2πe) σ Z) + (a t_a − b t_b)/2`` (the second moment ``1 + a t_a − b t_b``).

    Far beyond one bound ``log Z`` and ``a t_a/2`` are near ``∓a²/2``: there
    ``log σ`` plus `pm_sens.families.truncated_normal.beyond_a_bound`'s.
    """
    a, b, log_mass, t_a, t_b = _parts(mu, sigma, lower, upper)
    value = pt.log(sigma) + censored_normal.LOG_ROOT_2PI + 0.5 + log_mass + (a * t_a - b * t_b) / 2
    far, z, _ = family.far_in_a_tail(pt, a, b)
    return _tail_values(value, far, pt.log(sigma) + family.beyond_a_bound(pt, z)[1])


def _tail_values(value, far, in_tail):
    """``value``, and ``in_tail`` where ``far``, with ``value``'s derivatives everywhere.

    The continued fraction's derivatives, level by level, would make a moment
    mode's graph many times larger (an Add of one term per level, more
    operands than PyTensor's Python mode takes); the derivatives stay those of
    the difference of ``φ/Z``'s terms, as accurate as before. ``value − value``
    carries them and is 0 (a sum ``value + (in_tail − value)`` is flattened by
    PyTensor's rewrites into one of ``value``'s terms near z²).
    """
    return pt.where(far, disconnected_grad(in_tail) + (value - disconnected_grad(value)), value)

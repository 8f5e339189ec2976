"""Negative binomial in PyMC's (mean μ, dispersion α) and in (mean, variance).

Variance ``v = μ + μ²/α``. The α–α information has no closed form; it is the
expected squared score summed over the support (tail mass below ``tail``).
"""

import numpy as np
from scipy.stats import nbinom

from pm_sens.families._base import Family, diagonal_matrix, reparametrize, stack_matrix

_MAX_CELLS = 4_000_000  # elements × support values summed at once


def _alpha_information_block(m, a, tail):
    p = a / (a + m)
    y = np.arange(int(nbinom.ppf(1 - tail, a, p).max()) + 2)
    # ψ(y + a) − ψ(a) as a running sum of 1/(a + k), k < y: stable when a ≫ y
    steps = 1 / (a[:, None] + y[None, :-1])
    digamma_diff = np.concatenate([np.zeros_like(a)[:, None], np.cumsum(steps, -1)], -1)
    score = digamma_diff + np.log1p(-m / (a + m))[:, None] + (m[:, None] - y) / (a + m)[:, None]
    return (nbinom.pmf(y, a[:, None], p[:, None]) * score**2).sum(-1)


def alpha_information(m, a, tail=1e-12):
    """Expected squared score of α, ``E[(∂ log p / ∂α)²]``, for NB(m, α)."""
    m, a = (np.asarray(x, dtype=float) for x in np.broadcast_arrays(m, a))
    flat_m, flat_a = m.ravel(), a.ravel()
    out = np.empty_like(flat_m)
    if flat_m.size:
        width = int(nbinom.ppf(1 - tail, flat_a, flat_a / (flat_a + flat_m)).max()) + 2
        step = max(1, _MAX_CELLS // width)
        for start in range(0, flat_m.size, step):
            block = slice(start, start + step)
            out[block] = _alpha_information_block(flat_m[block], flat_a[block], tail)
    return out.reshape(m.shape)


def fisher_information_mean_alpha(phi):
    """Fisher information in (μ, α): ``diag(α/(μ(μ+α)), I_αα)``."""
    m, a = phi[..., 0], phi[..., 1]
    return diagonal_matrix(a / (m * (m + a)), alpha_information(m, a))


# Beyond this α/(m+1) the α score drowns in round-off; NB(m, v) is then Poisson up
# to O(1/α) and its (m, v) information takes the limit form below.
_POISSON_LIMIT = 1e10


def fisher_information(phi):
    """Fisher information in (m, v), ``v > m``; Poisson(m) where ``v <= m``.

    Reparametrizes (μ, α) with ``α = m²/(v − m)``.
    """
    m, v = np.broadcast_arrays(phi[..., 0], phi[..., 1])
    excess = v - m
    overdispersed = excess > 0
    a = np.where(overdispersed, m**2 / np.where(overdispersed, excess, 1), np.inf)
    near_poisson = a > _POISSON_LIMIT * (m + 1)
    regular = overdispersed & ~near_poisson
    info = np.zeros((*m.shape, 2, 2))
    info[..., 0, 0] = 1 / m  # Poisson(m), where v <= m
    if regular.any():
        mr, er, ar = m[regular], excess[regular], a[regular]
        jac = stack_matrix([[1.0, 0.0], [mr * (mr + 2 * er) / er**2, -(mr**2) / er**2]])
        info[regular] = reparametrize(fisher_information_mean_alpha(np.stack([mr, ar], -1)), jac)
    limit = overdispersed & near_poisson
    if limit.any():
        c = 1 / (2 * m[limit] ** 2)
        info[limit] = stack_matrix([[1 / m[limit] + c, -c], [-c, c]])
    return info


FAMILY = Family("negative_binomial", "count", ("mean", "variance"), fisher_information)

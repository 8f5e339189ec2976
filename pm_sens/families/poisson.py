"""Poisson(mean)."""

import numpy as np

from pm_sens.families._base import NUMPY, Family, clip_positive, diagonal_factors, log1p_gap


def fisher_information(phi):
    """Fisher information of the rate m: ``1/m``."""
    m = clip_positive(phi[..., :1])
    return (1 / m)[..., None]


def _rate_scale(xp, m):
    """``sqrt(1/m)``."""
    return 1 / xp.sqrt(clip_positive(m, xp))


def kl_divergence(phi_p, phi_q):
    """KL between Poisson laws: ``m₁ g((m₂ − m₁)/m₁)``."""
    m1, m2 = clip_positive(phi_p[..., 0]), clip_positive(phi_q[..., 0])
    return m1 * log1p_gap((m2 - m1) / m1)


def graph_log_density(xp, y, m):
    """Log pmf at the count y, ``y log m − m − log y!`` (−inf off the counts), in ``xp``."""
    m = clip_positive(m, xp)
    inside = (y >= 0) & xp.equal(xp.floor(y), y)
    return xp.where(inside, y * xp.log(m) - m - xp.gammaln(xp.maximum(y, 0) + 1.0), -np.inf)


def log_density(phi, y):
    """Log pmf at the count y (`graph_log_density` in NumPy)."""
    return graph_log_density(NUMPY, np.asarray(y, dtype=float), phi[..., 0])


#: SciPy's inverse survival function of the Poisson is nan below this tail mass
SMALLEST_TAIL = 1e-16


def upper_count(m, tail):
    """The count above which the mass of Poisson(m) is below ``tail`` (≥ `SMALLEST_TAIL`)."""
    from scipy import stats

    # isf, not ppf(1 − tail): 1 − tail is 1 for a tail below 1e-16 (a hurdle's
    # tail times a small 1 − f₀), where ppf is infinite
    return stats.poisson.isf(np.maximum(tail, SMALLEST_TAIL), m).astype(int)


def support_upper(phi, tail):
    """The count above which the mass is below ``tail``."""
    return upper_count(phi[..., 0], tail)


def support_window(low, high, tail):
    """Counts holding all but ``tail`` of the mass for every rate in [low, high]."""
    from scipy import stats

    lower = stats.poisson.ppf(tail / 2, low[..., 0])
    return np.maximum(lower, 0).astype(int), support_upper(high, tail / 2)


def pmf_recursion(phi):
    """``p(y)/p(y−1) = m/y``: Panjer's (a, b) = (0, m)."""
    m = clip_positive(phi[..., 0])
    return np.zeros_like(m), m, lambda y: log_density(phi, y), None, None


def renyi_divergence(phi_p, phi_q, alpha):
    """``(α m₁ + (1 − α) m₂ − m₁^α m₂^(1−α)) / (1 − α)``."""
    m1, m2 = clip_positive(phi_p[..., 0]), clip_positive(phi_q[..., 0])
    tilted = np.exp(alpha * np.log(m1) + (1 - alpha) * np.log(m2))
    return (alpha * m1 + (1 - alpha) * m2 - tilted) / (1 - alpha)


FAMILY = Family(
    "poisson",
    "count",
    ("mean",),
    fisher_information,
    kl_divergence,
    log_density,
    support_upper=support_upper,
    support_window=support_window,
    pmf_recursion=pmf_recursion,
    fisher_factors=diagonal_factors(_rate_scale),
    graph_log_density=graph_log_density,
    renyi_divergence=renyi_divergence,
)

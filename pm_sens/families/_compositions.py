"""Sums over every split of n trials into K categories (multinomial-type counts).

The entropy of a count vector's law, and the KL between two such laws where
no closed form exists, are sums over the vectors of K counts that add up to n.
There are ``C(n + K − 1, K − 1)`` of them: the sums are exact, and are taken
only while they are small (`MAX_SPLITS`).
"""

from functools import cache
from itertools import combinations
from math import comb

import numpy as np

from pm_sens.families._base import log1p_gap

#: most count vectors a table may hold (every vector of K counts with sum <= n)
MAX_SPLITS = 3000


def split_count(n, k):
    """How many vectors of k counts sum to at most n (a table's width)."""
    return comb(int(n) + k, k)


def check_splits(n, k, name):
    """Raise, in our words, when the table for n trials and k categories is too large."""
    width = split_count(n, k)
    if width > MAX_SPLITS:
        raise ValueError(
            f"the {name} predictive's entropy is a sum over every split of its trials into "
            f"its {k} categories: {width:,} count vectors for up to n={int(n)} trials, more "
            f"than the {MAX_SPLITS:,} pm_sens sums over; pass kind='likelihood' "
            "(permutation_importance) or kind='log_likelihood' (partial_dependence), which "
            "need no such sum"
        )


@cache
def _splits(n, k):
    """Every vector of k counts with sum <= n, (W, k) (stars and bars with a slack bin)."""
    rows = []
    for bars in combinations(range(n + k), k):
        edges = np.diff(np.r_[-1, bars]) - 1  # the counts before each bar
        rows.append(edges)
    return np.array(rows, dtype=float).reshape(-1, k)


def count_table(log_pmf, n, k, name):
    """The count vectors and their log pmf at every draw and row.

    Parameters
    ----------
    log_pmf : callable
        ``log_pmf(y) -> (..., W)`` for count vectors y (W, k); −inf where a
        vector does not split the row's n.
    n : ndarray
        Trials per draw and row (...).
    k : int
        Categories.
    name : str
        The family, for the error on too large a table.

    Returns
    -------
    ndarray (..., W)
        The log pmf over the table, every vector with sum <= max(n) (those of
        another sum than a row's n have −inf there).
    """
    n_max = int(np.max(n))
    check_splits(n_max, k, name)
    y = _splits(n_max, k)
    logp = log_pmf(y)
    return np.where(y.sum(-1) == np.asarray(n)[..., None], logp, -np.inf)


def pmf_table(logp):
    """``(pmf, entropy)`` as `Family.pmf_table` gives them, from the table's log pmf."""
    with np.errstate(under="ignore"):
        pmf = np.exp(logp)
    entropy = -np.where(pmf > 0, pmf * np.where(np.isfinite(logp), logp, 0.0), 0.0).sum(-1)
    return tuple(np.moveaxis(pmf, -1, 0)), entropy


def kl_over_table(logp, logq):
    """``Σ_y p (u − log(1 + u))``, ``u = q/p − 1``: KL(p ‖ q) with no cancellation.

    Adding ``Σ p u = Σ q − Σ p = 0`` (both sum to 1 over the table) makes every
    term non-negative and of second order in the gap between the laws.
    """
    inside = np.isfinite(logp)
    with np.errstate(invalid="ignore", under="ignore"):
        gap = np.expm1(np.where(inside, logq - logp, 0.0))
        p = np.exp(np.where(inside, logp, -np.inf))
    return (p * log1p_gap(gap)).sum(-1)

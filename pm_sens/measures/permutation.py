"""Permutation feature importance and partial-dependence grids.

After Wood et al., "Model-agnostic variable importance for predictive
uncertainty: an entropy-based approach".
"""

import numpy as np


def permutations(n_points, n_repeats, n_groups, rng, block_size=1):
    """Independent permutations of the points: (n_repeats, n_groups, N).

    ``block_size`` > 1: the points' blocks of that many consecutive rows (the
    last one shorter if N is not a multiple) are permuted, each kept in its
    order: a series keeps its course within a block.
    """
    blocks = np.split(np.arange(n_points), np.arange(block_size, n_points, block_size))

    def one():
        return np.concatenate([blocks[b] for b in rng.permutation(len(blocks))])

    return np.array([[one() for _ in range(n_groups)] for _ in range(n_repeats)]).reshape(
        n_repeats, n_groups, n_points
    )


def permuted_features(x, groups, order):
    """Copies of ``x`` (N, D) with each group's columns permuted together.

    ``groups`` lists column indices; ``order`` is (R, G, N) from `permutations`.
    Returns (R, G, N, D).
    """
    out = np.broadcast_to(x, (*order.shape[:2], *x.shape)).copy()
    for g, columns in enumerate(groups):
        for c in columns:
            out[:, g, :, c] = x[order[:, g], c]
    return out


def importance(base, permuted):
    """Mean over points of ``permuted − base``: (..., N) with base (N,) → (...)."""
    return np.mean(permuted - base, axis=-1)


def feature_grid(column, resolution, percentiles, levels):
    """Grid of one feature: its levels if ``levels``, else quantiles between percentiles."""
    if levels:
        return np.unique(column)
    quantiles = np.linspace(percentiles[0], percentiles[1], resolution)
    return np.unique(np.quantile(column, quantiles))


def grid_features(x, columns, grids):
    """ICE points: for each column d and its grid value g, x with column d set to g.

    Returns (F, K, N, D) for F columns, K the longest grid; shorter grids repeat
    their last value (the caller masks those entries).
    """
    width = max(len(g) for g in grids)
    out = np.broadcast_to(x, (len(columns), width, *x.shape)).copy()
    for f, (d, grid) in enumerate(zip(columns, grids, strict=True)):
        padded = np.concatenate([grid, np.repeat(grid[-1:], width - len(grid))])
        out[f, :, :, d] = padded[:, None]
    return out


class MeanCurves:
    """PDP and ICE of the predictive mean, added chunk by chunk of draws.

    The R rows are the N points at each of R/N grid values (feature-major).
    A vector outcome's mean has a trailing axis of its K outcomes (``outcome_shape``).

    Attributes
    ----------
    pdp : ndarray, shape (S, R/N[, K])
        Each draw's mean over the points, per grid value.
    ice : ndarray, shape (R[, K])
        The mean summed over the draws added so far, per row.
    """

    def __init__(self, n_draws, n_rows, n_points, outcome_shape=()):
        self.pdp = np.empty((n_draws, n_rows // n_points, *outcome_shape))
        self.ice = np.zeros((n_rows, *outcome_shape))
        self.n_points = n_points

    def add(self, draws, mean):
        """Add the per-draw mean (size, R[, K]) of the draws ``draws`` (a slice)."""
        size, outcomes = draws.stop - draws.start, self.ice.shape[1:]
        mean = np.broadcast_to(mean, (size, *self.ice.shape))
        mean = mean.reshape(size, -1, self.n_points, *outcomes)
        self.add_sums(draws, mean.mean(2), mean.sum(0).reshape(self.ice.shape))

    def add_sums(self, draws, point_means, mean_sum):
        """Add draws by their means' averages over each copy's points and sum over draws.

        ``point_means`` (size, R/N[, K]) of the draws ``draws`` (a slice),
        ``mean_sum`` (R[, K]).
        """
        self.pdp[draws] = point_means
        self.ice += mean_sum

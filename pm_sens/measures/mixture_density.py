"""The predictive mixture's log density at observed values, over chunks of draws.

``log q(y|x) = log (1/S) Σ_s p(y|λ_s(x))``, what likelihood permutation
importance scores (Wood et al., "Model-agnostic variable importance for predictive
uncertainty", eqs. 5 and 6).
"""

import numpy as np


def logsumexp_over_draws(x):
    """``log Σ_s exp(x[s])`` per row of x (S, R), scaled by each row's largest.

    Does what ``scipy.special.logsumexp(x, axis=0)`` does for real x, about 4
    times faster on (400, 10000) (one exponential into a buffer, no checks for
    complex or signed input).
    """
    largest = x.max(0)
    shift = np.where(np.isfinite(largest), largest, 0.0)  # a row of −inf stays −inf
    terms = np.subtract(x, shift)
    np.exp(terms, out=terms)
    with np.errstate(divide="ignore"):
        return np.log(terms.sum(0)) + shift


class MixtureLogDensity:
    """``log q(y|x) = logsumexp_s log p(y|λ_s(x)) − log S``, over chunks of draws."""

    def __init__(self, n_rows):
        self.count = 0
        self.log_sum = np.full(n_rows, -np.inf)

    def add(self, log_density):
        """Add per-draw log densities (S, R)."""
        self.add_sums(len(log_density), logsumexp_over_draws(log_density))

    def add_sums(self, count, log_sum):
        """Add ``count`` draws by the log of their densities' sum (R,) (`logsumexp_over_draws`)."""
        self.count += count
        self.log_sum = np.logaddexp(self.log_sum, log_sum)

    def add_count_sums(self, count, log_table, y):
        """Add ``count`` draws by the log of each count's densities' sum (R, W), read at y (R,).

        The counts 0..W−1 of a small support, summed where the draws were
        (on a device): y outside them has density 0 in every draw (−inf).
        """
        counts = np.arange(log_table.shape[1])
        at_y = counts == np.asarray(y)[:, None]  # (R, W): one column or none
        self.add_sums(count, np.where(at_y, log_table, -np.inf).max(1))

    def value(self):
        """``log q`` per row."""
        return self.log_sum - np.log(self.count)

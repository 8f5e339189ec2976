"""What the reproductions share: the 95 % interval of a mean over repetitions."""

import numpy as np


def interval(values):
    """Mean over the first axis (repetitions) and the half-width of its 95 % interval
    (1.96 standard errors)."""
    half = 1.96 * values.std(0, ddof=1) / np.sqrt(len(values))
    return values.mean(0), half

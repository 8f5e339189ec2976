"""Support sums of Panjer's (a, b, 0) families in NumPy, count by count.

The same sums as the compiled loop of `pm_sens.measures.entropy.recursion_sums`
for rows whose counts span few values: all draws and rows step together from
the smallest count of the windows to the largest, the log pmf moving by
``log(a + b/y)`` (for a Poisson ``log b − log y``), a vector operation per
count. No compiling: Numba compiles that loop in about 6 s the first time an
environment uses it, longer than a narrow support's sums take here.
"""

import numpy as np

#: the pmf below e^−700 (1e-304) is taken as e^−700: NumPy's exp leaves its vector
#: path for results that underflow, which is many times slower
_LOG_SMALLEST = -700.0
#: counts between evaluations of the log pmf itself: the sum of log ratios from a
#: log pmf of −3000 (a rate of 3000 at 0) rounds to 1e-10 over 3000 counts
_ANCHOR = 64


def walk_sums(a, b, log_base, zero, scale, rows, pmf_sum, aleatoric_sum):
    """Add draws' pmfs and ``−Σ p log p`` over each row's counts (`recursion_sums`' contract).

    The rows go in order of their last count, largest first, so that each count
    is summed over the rows whose window still holds it (a slice).

    Parameters
    ----------
    a, b : ndarray (S, R)
        Panjer's recurrence ``p(y) = p(y − 1)(a + b/y)`` of the base pmf.
    log_base : callable
        ``log_base(y)`` (S, R): the base log pmf at the count y.
    zero, scale : ndarray (S, R) or None
        The pmf at 0, and the factor on the base pmf at y >= 1 (None: the base's).
    rows : (ndarray, ndarray, ndarray)
        ``(lower, upper, offsets)``: row r's counts ``lower..upper`` have their
        pmf sums in ``pmf_sum[offsets[r]:offsets[r + 1]]``.
    pmf_sum, aleatoric_sum : ndarray
        Added to in place: the pmf sums, and per row (R,) the draws' entropies.
    """
    lower, upper, offsets = rows
    if not len(upper):
        return
    order = np.argsort(-upper, kind="stable")
    lower, upper, starts = lower[order], upper[order], offsets[:-1][order]
    first, shape = int(lower.min()), np.shape(b)

    def by_order(x):
        """(S, R) in the rows' order (None stays None)."""
        return None if x is None else np.broadcast_to(x, shape)[:, order]

    a, b, zero, scale = (by_order(x) for x in (a, b, zero, scale))
    log_p = by_order(log_base(first)).astype(float)
    with np.errstate(divide="ignore"):  # a zero mass or scale of 0
        log_b = np.log(b) if not np.any(a) else None  # a Poisson: log(b/y)
        log_zero = None if zero is None else np.log(zero)
        log_scale = None if scale is None else np.log(scale)
    if log_scale is not None and first >= 1:  # the walk carries the scale from y = 1 on
        log_p += log_scale
    clipped, p, entropy = np.empty_like(log_p), np.empty_like(log_p), np.zeros(len(order))
    for y in range(first, int(upper[0]) + 1):
        held = np.searchsorted(-upper, -y, side="right")  # rows whose window reaches y
        log_p = log_p[:, :held]
        if (y - first) % _ANCHOR == 0 and y > first:  # the log pmf itself, not a sum
            log_p[...] = by_order(log_base(y))[:, :held]
            if log_scale is not None:
                log_p += log_scale[:, :held]
        elif y > first and log_b is not None:
            log_p += log_b[:, :held]
            log_p -= np.log(y)
        elif y > first:
            log_p += np.log(a[:, :held] + b[:, :held] / y)
        if y == 1 and log_scale is not None and first == 0:
            log_p += log_scale[:, :held]
        q = log_zero[:, :held] if y == 0 and log_zero is not None else log_p
        if q.min() < _LOG_SMALLEST:
            q = np.maximum(q, _LOG_SMALLEST, out=clipped[:, :held])
        mass = np.exp(q, out=p[:, :held])
        inside = lower[:held] <= y
        pmf_sum[starts[:held][inside] + y - lower[:held][inside]] += mass.sum(0)[inside]
        entropy[:held] -= np.where(inside, np.einsum("sr,sr->r", q, mass), 0.0)
    aleatoric_sum[order] += entropy

"""Compiled loops of `pm_sens.measures.entropy.recursion_sums` (Numba).

Imported only when a count family's entropy is asked for. The functions live
at module level so that Numba's on-disk cache finds them again in the next
process (a function built inside another is compiled anew each time).
"""

import numba
import numpy as np

# reassociation lets the sums and maxima over draws run as vector operations
_FAST = {"reassoc", "contract", "nsz", "arcp"}


@numba.njit(inline="always", fastmath=_FAST)
def _log_where_positive(x, needed):
    """``log x`` where x > 0, else 0 (its product with x is then 0); x itself if not needed."""
    if not needed:
        return x
    out = np.zeros_like(x)
    for s in range(len(x)):
        if x[s] > 0:
            out[s] = np.log(x[s])
    return out


@numba.njit(inline="always", fastmath=_FAST)
def _add_mass(y, low, p, log_p, k, log_k, modified, scaled, pmf_row):
    """Add the draws' pmf at count y to ``pmf_row``; return their sum of p log p."""
    total, p_log_p = 0.0, 0.0
    if y == 0 and modified:  # the zero's own mass: added by _walk, reached or not
        return 0.0
    if scaled:
        for s in range(len(p)):
            value = k[s] * p[s]
            total += value
            p_log_p += value * (log_k[s] + log_p[s])
    else:
        for s in range(len(p)):
            total += p[s]
            p_log_p += p[s] * log_p[s]
    pmf_row[y - low] += total
    return p_log_p


@numba.njit(inline="always", fastmath=_FAST)
def _advance(count, up, a, b, log_b, p, log_p, poisson, log_y, inverse_y):
    """Move the pmfs across ``p(count) = p(count − 1) (a + b/count)``, up or down.

    Returns the largest pmf after the move and the largest (up) or smallest
    (down) ratio: with it below (above) 1 every draw is past its mode.
    """
    inverse = inverse_y[count - 1]
    sign = 1.0 if up else -1.0
    # (separate loops, each simple enough to run as vector operations)
    if poisson:  # a = 0: log(b/y) from the table of log y, no log per count
        log_count = log_y[count - 1]
        for s in range(len(p)):
            log_p[s] += sign * (log_b[s] - log_count)
    else:
        for s in range(len(p)):
            log_p[s] += sign * np.log(a[s] + b[s] * inverse)
    largest = 0.0
    if up:
        extreme = 0.0
        for s in range(len(p)):
            ratio = a[s] + b[s] * inverse
            p[s] *= ratio
            extreme = max(extreme, ratio)
            largest = max(largest, p[s])
    else:
        extreme = np.inf
        for s in range(len(p)):
            ratio = a[s] + b[s] * inverse
            p[s] /= ratio
            extreme = min(extreme, ratio)
            largest = max(largest, p[s])
    return largest, extreme


@numba.njit(inline="always", fastmath=_FAST)
def _walk(y0, low, high, draws, log_start, p, log_p, flags, log_y, inverse_y, negligible, pmf_row):
    """Walk a set of draws together up and down from count y0; return their sum of p log p.

    ``draws``: (a, b, k, z) of the set; ``p``, ``log_p``: work arrays of its
    size; ``flags``: (modified, scaled, poisson): whether z, k are used and a = 0.
    """
    a, b, k, z = draws
    modified, scaled, poisson = flags
    log_b = _log_where_positive(b, poisson)
    log_k, log_z = _log_where_positive(k, scaled), _log_where_positive(z, modified)
    p_log_p = 0.0
    if modified and low == 0:  # the walks may stop short of 0 (base pmf negligible)
        for s in range(len(z)):
            pmf_row[0] += z[s]
            p_log_p += z[s] * log_z[s]
    for up in (True, False):
        log_p[:] = log_start
        p[:] = np.exp(log_start)
        y = y0
        if up:
            p_log_p += _add_mass(y, low, p, log_p, k, log_k, modified, scaled, pmf_row)
        while y < high if up else y > low:
            count = y + 1 if up else y
            largest, ratio = _advance(count, up, a, b, log_b, p, log_p, poisson, log_y, inverse_y)
            y += 1 if up else -1
            # past every draw's mode (ratio < 1 going up, > 1 going down) and negligible
            if largest < negligible and (ratio < 1.0 if up else ratio > 1.0):
                break
            p_log_p += _add_mass(y, low, p, log_p, k, log_k, modified, scaled, pmf_row)
    return p_log_p


@numba.njit(parallel=True, cache=True, fastmath=_FAST)
def recursion_kernel(
    by_draw, start, log_start, n_alone, center, lower, upper, flags, tables, pmf_sum, aleatoric_sum
):
    """Per row (in parallel): the draws ``0..S−n_alone`` walk together from ``center``,
    the others one by one from their ``start``; arrays are (R, S), draws
    ``(a, b, k, z)``."""
    log_y, inverse_y, negligible = tables
    n_rows, n_draws = start.shape
    for row in numba.prange(n_rows):
        low, high, pmf_row = lower[row], upper[row], pmf_sum[row]
        n = n_draws - n_alone[row]
        p, log_p = np.empty(n_draws), np.empty(n_draws)
        p_log_p = 0.0
        for k in range(n_alone[row] + 1):  # draws 0..n−1 together, then one by one
            first = 0 if k == 0 else n + k - 1
            last = n if k == 0 else first + 1
            y0 = center[row] if k == 0 else start[row, first]
            draws = (
                by_draw[0][row, first:last],
                by_draw[1][row, first:last],
                by_draw[2][row, first:last],
                by_draw[3][row, first:last],
            )
            p_log_p += _walk(
                y0,
                low,
                high,
                draws,
                log_start[row, first:last],
                p[: last - first],
                log_p[: last - first],
                flags,
                log_y,
                inverse_y,
                negligible,
                pmf_row,
            )
        aleatoric_sum[row] -= p_log_p

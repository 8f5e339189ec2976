"""Compiled loops of `pm_sens.measures.entropy.recursion_sums` (Numba).

Imported only when a count family's entropy is asked for. The functions live
at module level so that Numba's on-disk cache finds them again in the next
process (a function built inside another is compiled anew each time).
"""

import contextlib
import threading

import numba
import numpy as np

# reassociation lets the sums over draws run as vector operations
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
def _add_start(y, low, p, log_p, k, log_k, scaled, pmf_row):
    """Add the draws' pmf at their start y to ``pmf_row``; return their sum of p log p."""
    p_log_p = 0.0
    if scaled:
        for s in range(len(p)):
            pmf_row[y - low] += k[s] * p[s]
            p_log_p += k[s] * p[s] * (log_k[s] + log_p[s])
    else:
        for s in range(len(p)):
            pmf_row[y - low] += p[s]
            p_log_p += p[s] * log_p[s]
    return p_log_p


@numba.njit(inline="always", fastmath=_FAST)
def _step(count, up, a, b, k, log_b, inverse_b, log_k, p, log_p, flags, log_y, inverse_y):
    """Move the pmfs across ``p(count) = p(count − 1) (a + b/count)``, up or down.

    Returns, at the new count, the draws' (scaled) pmf sum, their sum of
    p log p and their base pmf sum. One loop moves the pmfs, one sums: each
    simple enough to run as vector operations (no maximum, which does not; and
    arrays passed one by one: taken from tuples, they made these loops 1.5x slower).
    """
    _, scaled, poisson = flags
    inverse = inverse_y[count - 1]
    n = len(p)
    if poisson:  # a = 0: log(b/y) from the table of log y, and no division going down
        log_count = log_y[count - 1]
        if up:
            for s in range(n):
                log_p[s] += log_b[s] - log_count
                p[s] *= b[s] * inverse
        else:
            y = float(count)
            for s in range(n):
                log_p[s] -= log_b[s] - log_count
                p[s] *= y * inverse_b[s]
    elif up:
        for s in range(n):
            ratio = a[s] + b[s] * inverse
            log_p[s] += np.log(ratio)
            p[s] *= ratio
    else:
        for s in range(n):
            ratio = a[s] + b[s] * inverse
            log_p[s] -= np.log(ratio)
            p[s] /= ratio
    total, p_log_p, base = 0.0, 0.0, 0.0
    if scaled:
        for s in range(n):
            value = k[s] * p[s]
            total += value
            p_log_p += value * (log_k[s] + log_p[s])
            base += p[s]
    else:
        for s in range(n):
            total += p[s]
            p_log_p += p[s] * log_p[s]
        base = total
    return total, p_log_p, base


@numba.njit(inline="always", fastmath=_FAST)
def _modes(a, b):
    """The smallest and largest of the draws' modes ``b/(1 − a)``."""
    lowest, highest = np.inf, -np.inf
    for s in range(len(b)):
        mode = b[s] / (1.0 - a[s]) if a[s] < 1.0 else np.inf
        lowest, highest = min(lowest, mode), max(highest, mode)
    return lowest, highest


@numba.njit(inline="always", fastmath=_FAST)
def _walk(y0, low, high, draws, log_start, p, log_p, flags, log_y, inverse_y, negligible, pmf_row):
    """Walk a set of draws together up and down from count y0; return their sum of p log p.

    ``draws``: (a, b, k, z) of the set; ``p``, ``log_p``: work arrays of its
    size; ``flags``: (modified, scaled, poisson): whether z, k are used and a = 0.
    """
    a, b, k, z = draws
    modified, scaled, poisson = flags
    log_b, log_k = _log_where_positive(b, poisson), _log_where_positive(k, scaled)
    inverse_b = 1.0 / b if poisson else b
    lowest_mode, highest_mode = _modes(a, b)
    p_log_p = 0.0
    if modified and low == 0:  # the walks may stop short of 0 (base pmf negligible)
        log_z = _log_where_positive(z, True)
        for s in range(len(z)):
            pmf_row[0] += z[s]
            p_log_p += z[s] * log_z[s]
    for up in (True, False):
        log_p[:] = log_start
        p[:] = np.exp(log_start)
        y = y0
        if up and not (y == 0 and modified):  # the zero's own mass is added above
            p_log_p += _add_start(y, low, p, log_p, k, log_k, scaled, pmf_row)
        while y < high if up else y > low:
            count = y + 1 if up else y
            total, step_p_log_p, base = _step(
                count, up, a, b, k, log_b, inverse_b, log_k, p, log_p, flags, log_y, inverse_y
            )
            y += 1 if up else -1
            # past every draw's mode and negligible (the base pmfs' sum bounds each)
            if base < negligible and (y > highest_mode if up else y < lowest_mode):
                break
            if not (y == 0 and modified):
                pmf_row[y - low] += total
                p_log_p += step_p_log_p
    return p_log_p


#: one call of the kernel at a time: Numba's default threading layer runs one
#: parallel loop at once, and the kernel releases the GIL (`nogil`), so chunks
#: evaluated in other threads meanwhile (`pm_sens._run.chunks`) could call it together
KERNEL_LOCK = threading.Lock()


@contextlib.contextmanager
def kernel_call(cores):
    """One call of `recursion_kernel` at a time (`KERNEL_LOCK`), on at most ``cores`` threads.

    Numba's parallel loops take every thread it started (one per core) unless
    told otherwise; the count is the calling thread's own, set back after.
    ``cores``: None for Numba's count.
    """
    with KERNEL_LOCK:
        before = numba.get_num_threads()
        numba.set_num_threads(min(cores or before, numba.config.NUMBA_NUM_THREADS))
        try:
            yield
        finally:
            numba.set_num_threads(before)


def loop_is_ready():
    """Whether `recursion_kernel` runs without being compiled first.

    Compiled in this process, or held in Numba's on-disk cache for this source
    (its index, read as Numba reads it: Numba has no public way to ask; an index
    that cannot be read counts as absent).
    """
    if recursion_kernel.signatures:
        return True
    try:
        return bool(recursion_kernel._cache._cache_file._load_index())
    except (AttributeError, OSError):
        return False


@numba.njit(parallel=True, nogil=True, cache=True, fastmath=_FAST)
def recursion_kernel(
    by_draw, start, log_start, n_alone, center, rows, flags, tables, pmf_sum, aleatoric_sum
):
    """Per row (in parallel): draws ``0..S−n_alone`` walk together, the others alone.

    The first draws walk from ``center``, the others one by one from their
    ``start``; arrays are (R, S), draws ``(a, b, k, z)``; ``rows``: (lower,
    upper, offsets) (R,), (R,), (R + 1,).
    """
    log_y, inverse_y, negligible = tables
    lower, upper, offsets = rows
    n_rows, n_draws = start.shape
    for row in numba.prange(n_rows):
        low, high = lower[row], upper[row]
        pmf_row = pmf_sum[offsets[row] : offsets[row + 1]]
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

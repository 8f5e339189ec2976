"""Entropy of the posterior predictive and its aleatoric/epistemic split (004).

Total entropy ``H(x)`` of the predictive mixture; aleatoric
``A(x) = E_s H(p(·|λ_s(x)))``; epistemic ``H − A``. For discrete families the
mixture pmf is summed over the support (tail mass below ``tail``), so ``H`` is
exact and the epistemic part is the mutual information between y and the
parameters. For continuous families ``H`` is the moment-matched family's
entropy, an upper bound on the mixture's for the Normal (maximum entropy at
fixed variance).
"""

import functools

import numpy as np
from scipy import special

_MAX_CELLS = 20_000_000  # draws × rows × support values held at once
_ROW_GROUPS = 8  # rows summed in groups of similar support width


class EntropyAccumulator:
    """Aleatoric entropy and (discrete) mixture pmf, summed over chunks of draws.

    Parameters
    ----------
    family : pm_sens.families.Family
        The per-draw family.
    n_rows : int
        Number of evaluation rows.
    tail : float
        Discrete families: support truncated where the remaining mass < tail.
    window : (ndarray, ndarray), optional
        Discrete families: the support ``lower..upper`` (R,) of each row over
        all the draws that will be added (`support_window`); rows are then
        summed over their own window, in groups of similar width. Without it,
        over ``0..`` the largest upper bound met so far.
    """

    #: mass left out of the support sums
    TAIL = 1e-10

    def __init__(self, family, n_rows, tail=TAIL, window=None):
        self.family, self.tail = family, tail
        self.count = 0
        self.aleatoric_sum = np.zeros(n_rows)
        self.lower = np.zeros(n_rows, dtype=int) if window is None else window[0]
        width = 0 if window is None else int((window[1] - window[0]).max()) + 1
        self.widths = None if window is None else window[1] - window[0] + 1
        self.pmf_sum = np.zeros((n_rows, width))

    def add(self, phi, **fixed):
        """Add draws with per-draw parameters ``phi`` (S, R, M) (``fixed``: (S, R))."""
        self.count += len(phi)
        if not self.family.discrete:
            self.aleatoric_sum += self.family.entropy(phi, **fixed).sum(0)
            return
        if self.widths is None:
            top = int(self.family.support_upper(phi, self.tail, **fixed).max()) + 1
            if top > self.pmf_sum.shape[1]:
                pad = top - self.pmf_sum.shape[1]
                self.pmf_sum = np.pad(self.pmf_sum, ((0, 0), (0, pad)))
        if self.family.pmf_recursion is not None:
            self._add_by_recursion(phi, fixed)
            return
        if self.widths is None:
            groups = [slice(None)]  # every row, without copying phi
        else:
            split = np.array_split(np.argsort(self.widths), _ROW_GROUPS)
            groups = [rows for rows in split if len(rows)]
        for rows in groups:
            self._add_rows(rows, phi[:, rows], {k: v[:, rows] for k, v in fixed.items()})

    def _add_by_recursion(self, phi, fixed):
        """Support sums of an (a, b, 0)-class family by its pmf recurrence (`recursion_sums`)."""
        a, b, log_base, zero, scale = self.family.pmf_recursion(phi, **fixed)
        widths = self.pmf_sum.shape[1] if self.widths is None else self.widths
        upper = self.lower + np.broadcast_to(widths, self.lower.shape) - 1
        with np.errstate(divide="ignore", invalid="ignore"):
            mode = np.floor(np.where(a < 1, b / (1 - a), 0.0))
        start = np.clip(np.nan_to_num(mode), self.lower, upper).astype(np.int64)
        recursion_sums(
            *np.broadcast_arrays(a, b, start, log_base(start)),
            np.full(a.shape, np.nan) if zero is None else np.broadcast_to(zero, a.shape),
            np.ones(a.shape) if scale is None else np.broadcast_to(scale, a.shape),
            self.lower,
            upper,
            self.pmf_sum,
            self.aleatoric_sum,
        )

    def _add_rows(self, rows, phi, fixed):
        width = self.pmf_sum.shape[1] if self.widths is None else int(self.widths[rows].max())
        y = self.lower[rows, None] + np.arange(width)
        block = max(1, _MAX_CELLS // (phi.shape[1] * width))
        for start in range(0, len(phi), block):
            draws = slice(start, start + block)
            logp = self.family.log_density(
                phi[draws, :, None, :], y, **{k: v[draws, :, None] for k, v in fixed.items()}
            )
            # −inf (a count outside the support) → the most negative float: p log p = 0
            np.maximum(logp, np.finfo(float).min, out=logp)
            p = np.exp(logp)
            self.aleatoric_sum[rows] -= np.einsum("srw,srw->r", p, logp)
            self.pmf_sum[rows, :width] += p.sum(0)

    def aleatoric(self):
        """``A(x)`` per row."""
        return self.aleatoric_sum / self.count

    def mixture_entropy(self):
        """Exact entropy of the discrete mixture per row."""
        return special.entr(self.pmf_sum / self.count).sum(-1)


#: counts whose pmf is below this, beyond the mode, end a recurrence (the mass
#: left out is at most this times the window's width)
_NEGLIGIBLE_PMF = 1e-20


def recursion_sums(a, b, start, log_start, zero, scale, lower, upper, pmf_sum, aleatoric_sum):
    """Add draws' pmfs and ``−Σ p log p`` over each row's counts, by recurrence.

    Per draw and row (arrays (S, R)), the base pmf runs from its mode ``start``
    (log pmf ``log_start``) up and down the row's counts ``lower..upper`` (R,)
    by Panjer's recurrence ``p(y) = p(y−1) (a + b/y)``: a product and a sum per
    count, no log pmf, until it falls below `_NEGLIGIBLE_PMF` (it only
    decreases away from the mode). On y >= 1 the pmf is ``scale`` times the
    base; at 0 it is ``zero`` where that is not nan. Adds in place to
    ``pmf_sum`` (R, W), column k for count ``lower + k``, and to
    ``aleatoric_sum`` (R,) the sum over draws of the entropies.
    """
    counts = np.arange(1, int(upper.max(initial=0)) + 2, dtype=float)
    arrays = [np.ascontiguousarray(x, dtype=float) for x in (a, b, log_start, zero, scale)]
    _recursion_kernel()(
        *arrays[:2],
        np.ascontiguousarray(start, dtype=np.int64),
        *arrays[2:],
        np.ascontiguousarray(lower, dtype=np.int64),
        np.ascontiguousarray(upper, dtype=np.int64),
        np.log(counts),
        1 / counts,
        _NEGLIGIBLE_PMF,
        pmf_sum,
        aleatoric_sum,
    )


@functools.cache
def _recursion_kernel():
    """The compiled loop of `recursion_sums` (Numba, cached on disk; parallel over rows)."""
    import numba

    @numba.njit(inline="always")
    def mass(y, p, log_p, k, log_k, zero, log_zero):
        """The pmf at count y and its log: ``zero`` at 0 unless nan, else k p(y)."""
        if y == 0 and not np.isnan(zero):
            return zero, log_zero
        return k * p, log_k + log_p

    @numba.njit(parallel=True, cache=True)
    def kernel(
        a,
        b,
        start,
        log_start,
        zero,
        scale,
        lower,
        upper,
        log_y,
        inverse_y,
        negligible,
        pmf_sum,
        aleatoric_sum,
    ):
        n_draws, n_rows = a.shape
        for row in numba.prange(n_rows):
            low, high, p_log_p = lower[row], upper[row], 0.0
            for s in range(n_draws):
                a_s, b_s, y0, k, z = (
                    a[s, row],
                    b[s, row],
                    start[s, row],
                    scale[s, row],
                    zero[s, row],
                )
                poisson = a_s == 0.0  # log(b/y) from the table of log y
                log_b = np.log(b_s) if poisson and b_s > 0 else 0.0
                log_k = np.log(k) if k > 0 else 0.0
                log_z = np.log(z) if z > 0 else 0.0
                # up from the mode: p(y) = p(y − 1) (a + b/y)
                log_p, y = log_start[s, row], y0
                p = np.exp(log_p)
                while True:
                    value, log_value = mass(y, p, log_p, k, log_k, z, log_z)
                    pmf_sum[row, y - low] += value
                    if value > 0:
                        p_log_p += value * log_value
                    if y >= high:
                        break
                    y += 1
                    ratio = a_s + b_s * inverse_y[y - 1]
                    if ratio <= 0.0:
                        break
                    p *= ratio
                    log_p += log_b - log_y[y - 1] if poisson else np.log(ratio)
                    if p < negligible and ratio < 1.0:
                        break
                # down from the mode: p(y − 1) = p(y) / (a + b/y)
                log_p, y = log_start[s, row], y0
                p = np.exp(log_p)
                while y > low:
                    ratio = a_s + b_s * inverse_y[y - 1]
                    p /= ratio
                    log_p -= log_b - log_y[y - 1] if poisson else np.log(ratio)
                    y -= 1
                    if p < negligible and ratio > 1.0:
                        break
                    value, log_value = mass(y, p, log_p, k, log_k, z, log_z)
                    pmf_sum[row, y - low] += value
                    if value > 0:
                        p_log_p += value * log_value
            aleatoric_sum[row] -= p_log_p

    return kernel


def entropy_components(total, aleatoric):
    """Stack (total, aleatoric, epistemic) on a trailing axis."""
    return np.stack([total, aleatoric, total - aleatoric], -1)


COMPONENTS = ("total", "aleatoric", "epistemic")


class MixtureLogDensity:
    """``log q(y|x) = logsumexp_s log p(y|λ_s(x)) − log S``, over chunks of draws."""

    def __init__(self, n_rows):
        self.count = 0
        self.log_sum = np.full(n_rows, -np.inf)

    def add(self, log_density):
        """Add per-draw log densities (S, R)."""
        self.count += len(log_density)
        self.log_sum = np.logaddexp(self.log_sum, special.logsumexp(log_density, axis=0))

    def value(self):
        """``log q`` per row."""
        return self.log_sum - np.log(self.count)

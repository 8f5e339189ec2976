"""Entropy of the posterior predictive and its aleatoric/epistemic split.

After Wood et al., "Model-agnostic variable importance for predictive
uncertainty: an entropy-based approach".

Total entropy ``H(x)`` of the predictive mixture; aleatoric
``A(x) = E_s H(p(·|λ_s(x)))``; epistemic ``H − A``. For discrete families the
mixture pmf is summed over the support (tail mass below ``tail``), so ``H`` is
exact and the epistemic part is the mutual information between y and the
parameters. For continuous families ``H`` is the moment-matched family's
entropy, an upper bound on the mixture's for the Normal (maximum entropy at
fixed variance).
"""

import copy

import numpy as np
from scipy import special

from pm_sens.families._base import check_support
from pm_sens.measures import _halves
from pm_sens.measures._halves import on_two_threads, over_halves
from pm_sens.measures._walk import walk_sums

#: draws × rows × support values of the summation route's log densities held at
#: once (`_add_rows`): 16 MB, so the blocks stay within the CPU's caches
_MAX_CELLS = 2_000_000
#: the same for a family's pmf table, built in blocks of rows and draws that
#: keep its arrays in the CPU's cache
_TABLE_CELLS = 131_072
#: rows × draws of a table block at least: a table of many counts keeps blocks
#: of this many rows × draws per count, so each NumPy call stays long
_TABLE_LEAST = 8_192
#: draws per call of the support sums that keep their vector loops over draws full
DRAWS_TOGETHER = 64
_ROW_GROUPS = 8  # rows summed in groups of similar support width
#: a pass's support sums run in NumPy (`walk_sums`) where that takes about this
#: long or less, else in the loop Numba compiles (`recursion_sums`: about 1 ns per
#: draw and count)
NUMPY_SECONDS = 1.5
#: the loop's compile, the first time an environment uses it (later processes
#: load it from Numba's cache in 0.3 s): until then NumPy also takes sums of up to
#: this many seconds more
COMPILE_SECONDS = 6.0
#: `walk_sums`' cost: per draw and count — a Poisson's step adds log b − log y,
#: other laws' take log(a + b/y) of every draw — and per count of each chunk of
#: draws (the NumPy calls themselves, which dominate where few draws walk far)
_NUMPY_PER_CELL = {"poisson": 1e-8, "other": 3e-8}
_NUMPY_PER_COUNT = 12e-6


def _sum_over_draws(x):
    """``x.sum(0)``, or ``x[0]`` of one draw.

    NumPy's reduction over a length-1 axis is a loop over the rows: 1 s of a
    30-input logistic's default PDP, whose Bernoulli tables come one draw at a
    time.
    """
    return x[0] if len(x) == 1 else x.sum(0)


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
        all the draws that will be added (`support_window`); each row's pmf sums
        are then held over its own window only. Without it, over ``0..`` the
        largest upper bound met so far, the same for every row.
    table_mean : bool
        Families whose pmf table is over the counts 0..W−1 (a likelihood
        without closed forms): `add` also returns the per-draw means from it.
    draws : int, optional
        With a window: how many draws will be added. Support sums that NumPy
        runs in about `NUMPY_SECONDS` or less (by their draws × counts, from the
        windows' lowest count to each row's last) run in NumPy, others in a
        compiled loop.
    cores : int, optional
        The CPU cores the sums may use (half the rows on a second thread, the
        compiled loop's threads); None: every core.
    """

    #: mass left out of the support sums
    TAIL = 1e-10

    def __init__(
        self, family, n_rows, tail=TAIL, window=None, table_mean=False, draws=None, cores=None
    ):
        self.family, self.tail, self.table_mean = family, tail, table_mean
        self.cores = cores
        self.count = 0
        self.aleatoric_sum = np.zeros(n_rows)
        self.windowed, self.in_numpy = window is not None, False
        if self.windowed:
            self.lower, upper = window
            self.widths = upper - self.lower + 1
            check_support(self.family.name, self.widths, "entropy")
            self.in_numpy = draws is not None and (
                _numpy_seconds(window, draws, "poisson" in family.name) <= _numpy_limit()
            )
        else:
            self.lower = np.zeros(n_rows, dtype=int)
            self.widths = np.zeros(n_rows, dtype=int)
        self.width = 0  # without a window: every row's counts are 0..width − 1
        # the pmf sums of all rows end to end: row r's in offsets[r]..offsets[r + 1]
        self.offsets = np.concatenate([[0], np.cumsum(self.widths)])
        self.pmf_sum = np.zeros(self.offsets[-1])

    def add(self, phi, **fixed):
        """Add draws with per-draw parameters ``phi`` (S, R, M) (``fixed``: (S, R)).

        Returns, with ``table_mean``, the per-draw mean ``Σ_y y p(y)`` (S, R)
        from the pmf table (`add_tables`), else None.
        """
        if not self.family.discrete:
            self.add_entropies(self.family.entropy(phi, **fixed))
            return None
        if self.family.pmf_table is not None and not self.windowed:
            return self.add_tables(phi, fixed)
        self.count += len(phi)
        if not self.windowed:
            self._widen(int(self.family.support_upper(phi, self.tail, **fixed).max()) + 1)
        if self.family.pmf_recursion is not None:
            self._add_by_recursion(phi, fixed)
            return
        for rows, width in self._row_groups():
            self._add_rows(rows, width, phi[:, rows], {k: v[:, rows] for k, v in fixed.items()})

    def add_tables(self, phi, fixed):
        """Add draws by the family's pmf table of 0..W−1; with ``table_mean``, their means (S, R).

        The tables are built in cache-sized blocks (`_table_blocks`). Once the
        tables' width is known (after the first draws), half the rows go on
        each of two threads where `on_two_threads`, in blocks of at least
        ``TWO_THREADS_VALUES`` rows × draws; a wider table met there waits for
        both, then widens the sums.
        """
        n_draws, n_rows = phi.shape[:2]
        mean = np.empty((n_draws, n_rows)) if self.table_mean else None
        split = (
            self._two_threads and bool(self.width) and on_two_threads(n_draws, n_rows, self.width)
        )
        least = _halves.TWO_THREADS_VALUES if split else _TABLE_LEAST
        wider = []  # per half, the blocks left for a wider table

        def add_rows(rows):
            blocks = self._table_blocks(n_draws, rows, least)  # sized as the width is known
            if split:
                wider.append(self._add_table_blocks(phi, fixed, list(blocks), mean, widen=False))
            else:
                self._add_table_blocks(phi, fixed, blocks, mean, widen=True)

        over_halves(add_rows, n_rows, split)
        for blocks in wider:
            self._add_table_blocks(phi, fixed, blocks, mean, widen=True)
        self.count += n_draws
        return mean

    def _add_table_blocks(self, phi, fixed, blocks, mean, widen):
        """Add tables of ``blocks``; without ``widen``, up to a wider one (returns the rest)."""
        for i, block in enumerate(blocks):
            pmf, entropy = self.family.pmf_table(
                phi[block], **{k: v[block] for k, v in fixed.items()}
            )
            if len(pmf) > self.width:  # every row's counts are 0..W−1
                if not widen:
                    return blocks[i:]
                self._widen(len(pmf))
            by_row = self.pmf_sum.reshape(len(self.widths), -1)[block[1]]
            for k, p in enumerate(pmf):  # each count's column, without stacking them first
                by_row[:, k] += _sum_over_draws(p)
            self.aleatoric_sum[block[1]] += _sum_over_draws(entropy)
            if self.table_mean:  # Σ_y y p(y), from the count 1 on
                mean[block] = pmf[1] if len(pmf) > 1 else 0.0
                for k, p in enumerate(pmf[2:], 2):
                    mean[block] += k * p
        return []

    @staticmethod
    def _table_values(width, least):
        """Rows × draws per block of a table of ``width`` counts.

        `_TABLE_CELLS` values in all, or ``least`` per count for wide tables.
        """
        return max(_TABLE_CELLS // width, least)

    def _table_blocks(self, n_draws, rows, least):
        """(draws, rows) slices of about `_table_values` rows × draws each, rows outer.

        Over ``rows`` (a slice); each is sized by the counts known when it is
        made: before the first table, one draw of rows for 2 counts.
        """
        start_row = rows.start
        while start_row < rows.stop:
            step = self._table_values(max(2, self.width), least)
            block_rows = slice(start_row, min(rows.stop, start_row + step))
            start = 0
            while start < n_draws:
                known = self._table_values(self.width, least) if self.width else 1
                size = max(1, known // (block_rows.stop - block_rows.start))
                yield slice(start, start + size), block_rows
                start += size
            start_row = block_rows.stop

    def part(self):
        """An accumulator for one chunk's draws, added where the chunk was evaluated.

        Of the same rows and windows, with nothing added: `merge` adds it to
        this one. Without a window its counts start empty and widen as its own
        draws need (this one's widen meanwhile, as other chunks are merged).
        """
        part = copy.copy(self)
        part.count = 0
        part.aleatoric_sum = np.zeros_like(self.aleatoric_sum)
        if not self.windowed:
            part.width = 0
            part.widths = np.zeros_like(self.widths)
            part.offsets = np.zeros_like(self.offsets)
        part.pmf_sum = np.zeros(part.offsets[-1])
        return part

    def merge(self, part):
        """Add a chunk's accumulator (`part`): its draws' sums, widened to this one's counts."""
        self.count += part.count
        self.aleatoric_sum += part.aleatoric_sum
        if self.windowed:
            self.pmf_sum += part.pmf_sum
            return
        if part.width:
            self._widen(part.width)
            by_row = self.pmf_sum.reshape(len(self.widths), -1)
            by_row[:, : part.width] += part.pmf_sum.reshape(len(part.widths), -1)

    def add_table_sums(self, count, table):
        """Add ``count`` draws by their pmf tables' and entropies' sums (R, W + 1).

        The tables of counts 0..W−1 held whole (no window), summed over the
        draws where they were computed (on a device), the entropies' sum last.
        """
        width = table.shape[1] - 1
        self._widen(width)
        self.pmf_sum.reshape(len(self.widths), -1)[:, :width] += table[:, :width]
        self.add_entropy_sums(count, table[:, width])

    def add_entropies(self, entropy):
        """Continuous families: add draws by their per-draw entropies (S, R)."""
        self.add_entropy_sums(len(entropy), entropy.sum(0))

    def add_entropy_sums(self, count, entropy_sum):
        """Continuous families: add ``count`` draws by their entropies' sum (R,)."""
        self.count += count
        self.aleatoric_sum += entropy_sum

    def _widen(self, width):
        """Without a window: make every row's counts ``0..width − 1`` at least."""
        check_support(self.family.name, [width], "entropy")
        n_rows, old = len(self.widths), self.width
        if width > old:
            self.width = width
            dense = self.pmf_sum.reshape(n_rows, old)
            self.pmf_sum = np.pad(dense, ((0, 0), (0, width - old))).ravel()
            self.widths = np.full(n_rows, width)
            self.offsets = np.arange(n_rows + 1) * width

    def _row_groups(self):
        """(rows, width): the rows in groups of similar support width, each with its widest."""
        if not self.windowed:
            return [(slice(None), self.width)]  # every row, without copying
        split = np.array_split(np.argsort(self.widths), _ROW_GROUPS)
        return [(rows, int(self.widths[rows].max())) for rows in split if len(rows)]

    @property
    def _two_threads(self):
        """Whether the cores allow a second thread (`over_halves`)."""
        return self.cores is None or self.cores >= 2

    def _add_by_recursion(self, phi, fixed):
        """Support sums of an (a, b, 0)-class family by its pmf recurrence.

        In NumPy (`walk_sums`) where `in_numpy`, half the rows on each of two
        threads where `on_two_threads`; else in the compiled loop
        (`recursion_sums`).
        """
        if self.in_numpy:
            split = self._two_threads and on_two_threads(*phi.shape[:2], self.widths.mean())
            over_halves(lambda rows: self._walk_rows(phi, fixed, rows), phi.shape[1], split)
            return
        a, b, log_base, zero, scale = self.family.pmf_recursion(phi, **fixed)
        shape = phi.shape[:2]
        a, b = np.broadcast_arrays(a, b)
        upper = self.lower + self.widths - 1
        with np.errstate(divide="ignore", invalid="ignore"):
            mode = np.floor(np.where(a < 1, b / (1 - a), 0.0))
        mode = np.clip(mode, self.lower, upper).astype(np.int64)
        # all draws of a row walk together from the draws' mean mode, except those
        # whose pmf there is too small to grow back without underflow: from their own
        center = mode.mean(0).astype(np.int64)
        log_start = np.broadcast_to(log_base(center), shape)
        alone = ~(log_start >= _LOG_SMALLEST_START)
        start = np.where(alone, mode, center) if alone.any() else None
        if start is not None:
            log_start = np.where(alone, log_base(start), log_start)
        recursion_sums(
            a,
            b,
            center,
            start,
            log_start,
            alone,
            zero,
            scale,
            (self.lower, upper, self.offsets),
            self.pmf_sum,
            self.aleatoric_sum,
            self.cores,
        )

    def _walk_rows(self, phi, fixed, rows):
        """`walk_sums` of the rows ``rows`` (a slice), into their own sums."""
        fixed = {k: np.broadcast_to(v, phi.shape[:2])[:, rows] for k, v in fixed.items()}
        a, b, log_base, zero, scale = self.family.pmf_recursion(phi[:, rows], **fixed)
        lower = self.lower[rows]
        window = (lower, lower + self.widths[rows] - 1, self.offsets[rows.start : rows.stop + 1])
        walk_sums(a, b, log_base, zero, scale, window, self.pmf_sum, self.aleatoric_sum[rows])

    def _add_rows(self, rows, width, phi, fixed):
        y = self.lower[rows, None] + np.arange(width)
        # a row's counts beyond its own window (up to its group's widest) are left out
        outside = np.arange(width) >= self.widths[rows, None]
        block = max(1, _MAX_CELLS // (phi.shape[1] * width))
        pmf_sum = np.zeros(y.shape)
        for start in range(0, len(phi), block):
            draws = slice(start, start + block)
            logp = self.family.log_density(
                phi[draws, :, None, :], y, **{k: v[draws, :, None] for k, v in fixed.items()}
            )
            # −inf (a count outside the support) → the most negative float: p log p = 0
            np.maximum(logp, np.finfo(float).min, out=logp)
            logp[:, outside] = np.finfo(float).min
            p = np.exp(logp)
            self.aleatoric_sum[rows] -= np.einsum("srw,srw->r", p, logp)
            pmf_sum += p.sum(0)
        index = self.offsets[:-1][rows, None] + np.arange(width)
        self.pmf_sum[index[~outside]] += pmf_sum[~outside]

    def aleatoric(self):
        """``A(x)`` per row."""
        return self.aleatoric_sum / self.count

    def mixture_entropy(self):
        """Exact entropy of the discrete mixture per row."""
        return np.add.reduceat(special.entr(self.pmf_sum / self.count), self.offsets[:-1])


#: counts whose pmf is below this, beyond the mode, end a recurrence (the mass
#: left out is at most this times the window's width)
_NEGLIGIBLE_PMF = 1e-20
#: a draw whose log pmf at its row's common start is below this walks from its own
#: mode (the pmf, ~1e-261 there, can grow back by products without underflow)
_LOG_SMALLEST_START = -600.0


def _numpy_limit():
    """Seconds of support sums NumPy takes rather than the compiled loop.

    `NUMPY_SECONDS`, and `COMPILE_SECONDS` more where the loop would be compiled
    first: neither compiled in this process nor found in Numba's cache.
    """
    from pm_sens.measures._recurrence import loop_is_ready

    return NUMPY_SECONDS + (0.0 if loop_is_ready() else COMPILE_SECONDS)


def _numpy_seconds(window, draws, poisson):
    """`walk_sums`' time, roughly, for ``draws`` over the counts of ``window``."""
    lower, upper = window
    counts = upper - (lower.min() if len(lower) else 0) + 1
    chunks = -(-draws // DRAWS_TOGETHER)
    widest = counts.max(initial=0)
    per_cell = _NUMPY_PER_CELL["poisson" if poisson else "other"]
    return draws * counts.sum() * per_cell + chunks * widest * _NUMPY_PER_COUNT


def recursion_sums(
    a, b, center, start, log_start, alone, zero, scale, rows, pmf_sum, aleatoric_sum, cores=None
):
    """Add draws' pmfs and ``−Σ p log p`` over each row's counts, by recurrence.

    Per draw and row (arrays (S, R)), the base pmf runs from its start (log
    pmf ``log_start``) up and down the row's counts ``lower..upper`` (R,) by
    Panjer's recurrence ``p(y) = p(y−1) (a + b/y)``, a product per count and no
    log pmf, until every draw's pmf is below `_NEGLIGIBLE_PMF` and falling. The
    draws of a row walk together from the row's ``center`` (R,), a vector
    operation per count, except where ``alone`` (S, R): those start from their
    own ``start`` (None if no draw is alone). On y >= 1 the pmf is ``scale``
    times the base; at 0 it is ``zero``; either may be None (no change).
    ``rows``: (lower, upper, offsets), row r's counts and where their pmf sums
    are in ``pmf_sum``, from ``offsets[r]`` (count ``lower[r]``) to
    ``offsets[r + 1]``. Adds in place to ``pmf_sum`` and to ``aleatoric_sum``
    (R,) the sum over draws of the entropies. ``cores``: the threads its
    rows may run on (None: every core).
    """
    from pm_sens.measures._recurrence import kernel_call, recursion_kernel

    shape, poisson = alone.shape, not np.any(a)
    flags = (zero is not None, scale is not None, poisson)
    order = np.argsort(alone, axis=0, kind="stable") if alone.any() else None

    def by_row(x):
        """(S, R) → (R, S), per row the draws walking together first."""
        x = np.broadcast_to(x, shape)
        return np.ascontiguousarray((x if order is None else np.take_along_axis(x, order, 0)).T)

    b = by_row(b)
    # what the kernel does not read is left as zeros, or b (same type)
    a = np.zeros(b.shape) if poisson else by_row(a)
    scale, zero = (b if x is None else by_row(x) for x in (scale, zero))
    start = np.zeros(b.shape, np.int64) if start is None else by_row(start).astype(np.int64)
    lower, upper, offsets = (np.asarray(x, dtype=np.int64) for x in rows)
    counts = np.arange(1, int(upper.max(initial=0)) + 2, dtype=float)
    with kernel_call(cores):
        recursion_kernel(
            (a, b, scale, zero),
            start,
            by_row(log_start),
            alone.sum(0),
            np.asarray(center, dtype=np.int64),
            (lower, upper, offsets),
            flags,
            (np.log(counts), 1 / counts, _NEGLIGIBLE_PMF),
            pmf_sum,
            aleatoric_sum,
        )


def entropy_components(total, aleatoric):
    """Stack (total, aleatoric, epistemic) on a trailing axis."""
    return np.stack([total, aleatoric, total - aleatoric], -1)


COMPONENTS = ("total", "aleatoric", "epistemic")

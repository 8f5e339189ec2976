"""Entropy of the posterior predictive and its aleatoric/epistemic split (004).

Total entropy ``H(x)`` of the predictive mixture; aleatoric
``A(x) = E_s H(p(·|λ_s(x)))``; epistemic ``H − A``. For discrete families the
mixture pmf is summed over the support (tail mass below ``tail``), so ``H`` is
exact and the epistemic part is the mutual information between y and the
parameters. For continuous families ``H`` is the moment-matched family's
entropy, an upper bound on the mixture's for the Normal (maximum entropy at
fixed variance).
"""

import numpy as np
from scipy.special import logsumexp

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
            groups = [slice(None)]  # every row, without copying phi
        else:
            split = np.array_split(np.argsort(self.widths), _ROW_GROUPS)
            groups = [rows for rows in split if len(rows)]
        for rows in groups:
            self._add_rows(rows, phi[:, rows], {k: v[:, rows] for k, v in fixed.items()})

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
        q = self.pmf_sum / self.count
        with np.errstate(divide="ignore", invalid="ignore"):
            return -np.where(q > 0, q * np.log(q), 0.0).sum(-1)


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
        self.log_sum = np.logaddexp(self.log_sum, logsumexp(log_density, axis=0))

    def value(self):
        """``log q`` per row."""
        return self.log_sum - np.log(self.count)

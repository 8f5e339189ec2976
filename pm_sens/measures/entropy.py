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


def _plogp(logp):
    p = np.exp(logp)
    return np.where(p > 0, p * logp, 0.0)


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
    """

    def __init__(self, family, n_rows, tail=1e-10):
        self.family, self.tail = family, tail
        self.count = 0
        self.aleatoric_sum = np.zeros(n_rows)
        self.pmf_sum = np.zeros((n_rows, 0))

    def add(self, phi, **fixed):
        """Add draws with per-draw parameters ``phi`` (S, R, M) (``fixed``: (S, R))."""
        self.count += len(phi)
        if not self.family.discrete:
            self.aleatoric_sum += self.family.entropy(phi, **fixed).sum(0)
            return
        top = int(self.family.support_upper(phi, self.tail, **fixed).max()) + 1
        if top > self.pmf_sum.shape[1]:
            pad = top - self.pmf_sum.shape[1]
            self.pmf_sum = np.pad(self.pmf_sum, ((0, 0), (0, pad)))
        y = np.arange(self.pmf_sum.shape[1])
        block = max(1, _MAX_CELLS // (phi.shape[1] * len(y)))
        for start in range(0, len(phi), block):
            rows = slice(start, start + block)
            logp = self.family.log_density(
                phi[rows, :, None, :], y, **{k: v[rows, :, None] for k, v in fixed.items()}
            )
            self.aleatoric_sum -= _plogp(logp).sum((0, 2))
            self.pmf_sum += np.exp(logp).sum(0)

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

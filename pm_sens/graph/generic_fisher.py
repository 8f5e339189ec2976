"""Generic Fisher information ``E[s sᵀ]`` of any univariate PyMC likelihood.

For likelihoods without a closed form: the score ``s = ∂ log p(y|θ)/∂θ`` comes
from ``pm.logp`` by automatic differentiation and its outer product is averaged
over ``n_samples`` draws of ``y ~ p(·|θ)`` (Monte Carlo, seeded). The result is
approximate (relative error about ``sqrt(2/n_samples)``); results using it are
marked ``fisher="approximate"``.
"""

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pytensor.tensor.random.type import random_generator_type

_MAX_CELLS = 4_000_000  # samples × parameter sets per block


class GenericFisher:
    """Monte Carlo estimate of the Fisher information of ``op``'s parameters.

    Parameters
    ----------
    op : RandomVariable
        The likelihood's op (univariate: scalar parameters and values).
    n_samples : int
        Draws of y per parameter set.
    seed : int
        Seed of the draws; estimates are reproducible.
    """

    def __init__(self, op, n_samples=2000, seed=0):
        self.n_samples, self.seed = n_samples, seed
        n_params = len(op.ndims_params)
        params = [pt.matrix(f"theta_{i}") for i in range(n_params)]
        rng = random_generator_type("rng")
        draws = op.make_node(rng, None, *params).outputs[1]
        self._sample = pytensor.function([rng, *params], draws)
        value = draws.type("y")
        logp = pm.logp(op(*params), value)
        scores = pytensor.grad(logp.sum(), params, disconnected_inputs="ignore")
        self._score = pytensor.function([*params, value], pt.stack(scores, -1))

    def __call__(self, phi, **fixed):
        """Fisher information (..., M, M) at parameters ``phi`` (..., M)."""
        flat = phi.reshape(-1, phi.shape[-1])
        out = np.empty((len(flat), phi.shape[-1], phi.shape[-1]))
        rng = np.random.default_rng(self.seed)
        block = max(1, _MAX_CELLS // self.n_samples)
        for start in range(0, len(flat), block):
            rows = flat[start : start + block]
            params = [
                np.broadcast_to(rows[:, k], (self.n_samples, len(rows)))
                for k in range(rows.shape[1])
            ]
            y = self._sample(rng, *params)
            score = self._score(*params, y)
            out[start : start + len(rows)] = (
                np.einsum("sem,sek->emk", score, score) / self.n_samples
            )
        return out.reshape(*phi.shape, phi.shape[-1])

"""Generic Fisher information ``E[s sᵀ]`` of any univariate PyMC likelihood.

For likelihoods without a closed form. The score ``s = ∂ log p(y|θ)/∂θ``
comes from ``pm.logp`` by automatic differentiation; its outer product is
averaged over y:

- by quadrature in the quantile, ``∫₀¹ s sᵀ(F⁻¹(u)) du`` with Gauss–Legendre
  nodes, when PyMC knows the distribution's inverse CDF (``pm.icdf``);
- otherwise by Monte Carlo over ``n_samples`` seeded draws of y
  (relative error about ``sqrt(2/n_samples)``).

Either way the result is approximate; results using it carry
``fisher="approximate"``.
"""

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pytensor.tensor.random.type import random_generator_type

_MAX_CELLS = 4_000_000  # nodes × parameter sets per block


class GenericFisher:
    """Fisher information of ``op``'s parameters by quadrature or Monte Carlo.

    Parameters
    ----------
    op : RandomVariable
        The likelihood's op (univariate: scalar parameters and values).
    n_nodes : int
        Gauss–Legendre nodes in the quantile (when an inverse CDF exists).
    n_samples : int
        Monte Carlo draws of y per parameter set otherwise.
    seed : int
        Seed of the Monte Carlo draws; estimates are reproducible.
    """

    def __init__(self, op, n_nodes=512, n_samples=4000, seed=0):
        self.seed = seed
        params = [pt.matrix(f"theta_{i}") for i in range(len(op.ndims_params))]
        rng = random_generator_type("rng")
        node = op.make_node(rng, None, *params)
        draws = node.outputs[1]
        value = draws.type("y")
        logp = pm.logp(draws, value)
        scores = pytensor.grad(logp.sum(), params, disconnected_inputs="ignore")
        self._score = pytensor.function([*params, value], pt.stack(scores, -1))
        u = pt.matrix("u")
        try:
            quantile = pm.icdf(draws, u)
        except NotImplementedError:
            self._sample = pytensor.function([rng, *params], draws)
            self.weights = np.full(n_samples, 1 / n_samples)
            self.method = f"Monte Carlo ({n_samples} draws)"
            self._quantile = None
        else:
            self._quantile = pytensor.function([*params, u], quantile)
            nodes, weights = np.polynomial.legendre.leggauss(n_nodes)
            self.nodes, self.weights = (nodes + 1) / 2, weights / 2
            self.method = f"Gauss-Legendre quadrature in the quantile ({n_nodes} nodes)"

    def _values(self, rng, params):
        if self._quantile is None:
            return self._sample(rng, *params)
        u = np.broadcast_to(self.nodes[:, None], params[0].shape)
        return self._quantile(*params, u)

    def __call__(self, phi, **fixed):
        """Fisher information (..., M, M) at parameters ``phi`` (..., M)."""
        flat = phi.reshape(-1, phi.shape[-1])
        out = np.empty((len(flat), phi.shape[-1], phi.shape[-1]))
        rng = np.random.default_rng(self.seed)
        n_y = len(self.weights)
        block = max(1, _MAX_CELLS // n_y)
        for start in range(0, len(flat), block):
            rows = flat[start : start + block]
            params = [np.broadcast_to(rows[:, k], (n_y, len(rows))) for k in range(rows.shape[1])]
            score = self._score(*params, self._values(rng, params))
            out[start : start + len(rows)] = np.einsum(
                "r,rem,rek->emk", self.weights, score, score
            )
        return out.reshape(*phi.shape, phi.shape[-1])

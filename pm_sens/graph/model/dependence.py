"""Which rows' inputs the parameters at a row depend on, and the colouring that uses it.

A model is *local* when the parameters at row i depend on row i of the inputs
alone. Lags, adstock and time-series covariates make the inputs at row s move
the parameters at rows ``s + first … s + last`` of the series (``first ≤ 0 ≤
last``; adstock over ``l_max`` weeks: 0 … l_max − 1).

The joint R-sens of input row s needs ``∂λ_i/∂x_s`` for every row i it moves.
Rows whose distance is at least the window's width move disjoint sets of
predictions, so one backward pass through the rows of one *colour* (``i ≡ r
mod C``, C the width) gives, at each input row s, the derivative of the one
row of that colour that s moves (Curtis, Powell and Reid's compression of a
banded Jacobian). C passes give the whole Jacobian; a local model has C = 1.
"""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Dependence:
    """An input at row s moves the predictions at rows ``s + first … s + last``.

    ``first ≤ 0 ≤ last``; ``Dependence()`` is a local model.
    """

    first: int = 0
    last: int = 0

    @property
    def local(self):
        """Whether each row's predictions depend on its own inputs alone."""
        return self.first == 0 and self.last == 0

    @property
    def width(self):
        """How many rows one input row moves at most."""
        return self.last - self.first + 1

    def colors(self, n_rows):
        """Backward passes for the whole Jacobian of ``n_rows`` rows: the window, at most N."""
        return min(self.width, n_rows)

    def rows_read(self, n_rows):
        """For each colour r and input row s, the row of colour r that s moves: (C·N,).

        Where no row of that colour is moved (near the series' ends), an index
        in range whose derivative is zero. Ordered colour first, like the
        derivatives of a colored graph (`pm_sens.graph.compile.derivatives`).
        """
        colors = self.colors(n_rows)
        s = np.arange(n_rows)
        if colors == n_rows:  # every colour one row
            return np.repeat(s, n_rows)
        rows = [s + self.first + (r - s - self.first) % colors for r in range(colors)]
        return np.clip(np.concatenate(rows), 0, n_rows - 1)

    def describe(self):
        """In words, for results' attrs and messages."""
        if self.local:
            return "local: the predictions at a point depend on its own inputs alone"
        return (
            f"joint: an input at row s moves the predictions at rows s{self.first:+d} to "
            f"s{self.last:+d}; R-sens is that of the joint predictive of all rows"
        )

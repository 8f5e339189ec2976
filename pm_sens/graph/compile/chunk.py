"""What a compiled predictive returns for one chunk of draws."""

from dataclasses import dataclass, field

import numpy as np


@dataclass
class ChunkOutputs:
    """The outputs of one compiled call, by name.

    Attributes
    ----------
    phi : ndarray or None
        Moment mode: the chunk's moments (N, M) (class probabilities or mean,
        then the mixture variance, or squared scale and tail weight, per
        ``second_moment``). Draw mode: per-draw parameters (S, N, M), a view of
        an (M, S, N) array (each component contiguous). None for a graph built
        with ``parameters=False``.
    jac, hess : ndarray, list of ndarray, or None
        First and second derivatives in the inputs. Moment mode: one array,
        the parameter axis first, (M, N, D) and (M, N, D, D). Draw mode: one
        array per varying parameter, (S, N, D) and (S, N, D, D).
    statistics : dict of str to ndarray
        Draw mode, per name a per-draw statistic (S, N) computed in the same
        evaluation as ``phi``.
    sums : dict of str to ndarray
        Draw mode, per name a sum over the chunk's draws computed in the graph
        (`pm_sens.graph.engine.compile_predictive`'s ``draw_sums``), the points
        first: (N,) or (N, W); or per draw a mean over the points of each copy
        of them (S, copies), which needs whole copies at once.
    fixed : dict of str to ndarray
        Parameters held fixed by the family (Binomial ``n``), (S, N) or (N,).
    norm : ndarray or None
        Draw-mode R-sens computed in the graph (S, N, D), or each draw's sum of
        it over the points (S, D) (`pm_sens.graph.compile.compiled.WhitenedNorm`); None
        where not computed.
    norm_range : tuple or None
        The smallest and largest of the (S, N, D) values behind ``norm``; of
        point means, the smallest and largest mean.
    whitening : tuple or None
        ``(scales, corr)``, `pm_sens.families.Family.whitening` of the
        varying parameters, where ``norm``'s graph had them computed in NumPy
        (for R-sens from the derivatives where ``norm`` is None or inexact).
    """

    phi: np.ndarray | None = None
    jac: object = None
    hess: object = None
    statistics: dict = field(default_factory=dict)
    sums: dict = field(default_factory=dict)
    fixed: dict = field(default_factory=dict)
    norm: np.ndarray | None = None
    norm_range: tuple | None = None
    whitening: tuple | None = None

    def per_draw_parameters(self, n_draws):
        """Draw mode: ``phi`` (S, R, M) and the fixed parameters (S, R).

        The draw axis is broadcast where they do not depend on the draws.
        """
        phi = np.broadcast_to(self.phi, (n_draws, *self.phi.shape[-2:]))
        fixed = {k: np.broadcast_to(v, phi.shape[:-1]) for k, v in self.fixed.items()}
        return phi, fixed

    def read_rows(self, rows):
        """Parameters (and fixed ones) at ``rows`` of the points, in place.

        Colored derivatives (`pm_sens.graph.compile.derivatives.colored_gradient`)
        belong to the rows `pm_sens.graph.model.dependence.Dependence.rows_read`
        names: the parameters are taken there, so that every output has the
        same (C·N) rows.
        """
        n_rows = self.phi.shape[-2]
        self.phi = self.phi[..., rows, :]
        self.fixed = {
            k: v[..., rows] if np.ndim(v) and np.shape(v)[-1] == n_rows else v
            for k, v in self.fixed.items()
        }

    def spread(self, inverse):
        """Outputs of distinct rows spread over all rows (``inverse``: each row's), in place."""
        if self.phi is not None:  # None where the graph returns statistics only
            self.read_rows(inverse)
        self.statistics = {k: np.take(v, inverse, axis=1) for k, v in self.statistics.items()}
        self.sums = {k: np.take(v, inverse, axis=0) for k, v in self.sums.items()}

    @classmethod
    def joined(cls, parts):
        """The outputs of several sets of rows as one, rows in order."""
        first = parts[0]

        def join(values, axis):
            if isinstance(values[0], list):  # draw mode: one array per parameter
                return [np.concatenate(v, axis) for v in zip(*values, strict=True)]
            return np.concatenate(values, axis)

        joined = cls(
            statistics={k: join([p.statistics[k] for p in parts], -1) for k in first.statistics},
            # the rows first, but a draw's means over each copy's points: sets of
            # rows are then whole copies (a series' copies, one at a time)
            sums={
                k: join([p.sums[k] for p in parts], -1 if k == "point_means" else 0)
                for k in first.sums
            },
            fixed={k: join([p.fixed[k] for p in parts], -1) for k in first.fixed},
        )
        for name, axis in (("phi", -2), ("jac", -2), ("hess", -3)):
            if getattr(first, name) is not None:
                setattr(joined, name, join([getattr(p, name) for p in parts], axis))
        return joined

"""Mean and variance of a likelihood without closed forms, from its leaf parameters."""

import numpy as np

from pm_sens.graph.compile.chunk import ChunkOutputs


def by_rule(likelihood, mode, statistic):
    """Whether the moments come from a generic likelihood's summation or quadrature rule.

    A mean PyMC gives in closed form is a statistic of the graph, as a closed form's.
    """
    if likelihood.generic is None or not (mode == "moment" or statistic in ("mean", "variance")):
        return False
    return not (statistic == "mean" and likelihood.mean is not None)


class GenericStatistics:
    """The mean and variance of a likelihood without closed forms, as a compiled predictive.

    Evaluates the draw-mode graph of the likelihood's leaf parameters (and their
    derivatives in the inputs) and turns it, per draw, into ``E[y]`` and
    ``Var[y]`` and their derivatives by the chain rule through the summation or
    quadrature rule of `GenericLikelihood` (``∂E[f]/∂φ = E[f s]``). Returns
    what `CompiledPredictive` returns for the same settings: chunk moments in
    moment mode, the per-draw statistic in draw mode.
    """

    def __init__(self, draws, generic, *, mode, order, second_moment, statistic):
        self.draws, self.generic = draws, generic
        self.data_variables, self.free_rvs, self.inputs = (
            draws.data_variables,
            draws.free_rvs,
            draws.inputs,
        )
        self.mode, self.order, self.second_moment, self.statistic = (
            mode,
            order,
            second_moment,
            statistic,
        )
        n_components = 2 if mode == "moment" and statistic is None and second_moment else 1
        self.varying = list(range(n_components))
        self.fixed_names = []
        self.settings = dict(
            mode=mode,
            order=order,
            second_moment=second_moment,
            statistic=statistic,
            backend=draws.settings["backend"],
            dependence=draws.settings["dependence"],
            colors=draws.settings["colors"],
        )

    def largest_array(self, data_values, draw_values):
        """The leaf parameters' graph's (`CompiledPredictive.largest_array`)."""
        return self.draws.largest_array(data_values, draw_values)

    def __call__(self, data_values, draw_values):
        """Evaluate on data arrays (in ``data_variables`` order) and draw arrays."""
        n_draws = len(draw_values[0])
        out = self.draws(data_values, draw_values)
        phi, _ = out.per_draw_parameters(n_draws)
        # a mean needs E[y] alone; a variance or a mixture's moments E[y²] too
        powers = 1 if self.statistic == "mean" else 2
        raw = self.generic.raw_moments(phi, self.draws.varying, self.order, powers)
        # per draw: values (S, N, K) of (E y[, E y²]), derivatives (S, N, K, D[, D]) in x
        values, derivatives = raw[0], []
        if self.order >= 1:
            derivatives.append(np.einsum("snkv,vsnd->snkd", raw[1], out.jac))
        if self.order == 2:
            derivatives.append(
                np.einsum("snkv,vsnde->snkde", raw[1], out.hess)
                + np.einsum("snkvw,vsnd,wsne->snkde", raw[2], out.jac, out.jac)
            )
        if self.mode == "moment" and self.statistic is None:
            # mixture over the chunk's draws: mean m and variance E[y²] − m²
            values = values.mean(0)
            derivatives = [d.mean(0) for d in derivatives]
            stats = _mean_and_variance(values, derivatives)
            if not self.second_moment:
                stats = [a[..., :1] for a in stats]
        else:
            if powers == 1:  # E[y] and its derivatives, components last
                stats = [values, *(np.moveaxis(d, 2, -1) for d in derivatives)]
            else:
                stats = _mean_and_variance(values, derivatives)
                stats = [
                    a[..., ["mean", "variance"].index(self.statistic or "mean")][..., None]
                    for a in stats
                ]
            if self.mode == "moment":
                stats = [a.mean(0) for a in stats]
        phi, *derivatives = stats
        # the parameter axis first, as `CompiledPredictive` returns it
        derivatives = [np.moveaxis(d, -1, 0) for d in derivatives]
        return ChunkOutputs(phi, *derivatives)


def _mean_and_variance(raw, derivatives):
    """(E y, E y²) and their derivatives → (mean, variance) and theirs, last axis 2.

    Takes (..., 2), (..., 2, D) and (..., 2, D, D); returns values (..., 2),
    first derivatives (..., D, 2) and second (..., D, D, 2): components last.
    """
    mean, square = raw[..., 0], raw[..., 1]
    out = [np.stack([mean, square - mean**2], -1)]
    if derivatives:
        d_mean, d_square = derivatives[0][..., 0, :], derivatives[0][..., 1, :]
        out.append(np.stack([d_mean, d_square - 2 * mean[..., None] * d_mean], -1))
    if len(derivatives) == 2:
        dd_mean, dd_square = derivatives[1][..., 0, :, :], derivatives[1][..., 1, :, :]
        outer = d_mean[..., :, None] * d_mean[..., None, :]
        dd_var = dd_square - 2 * (outer + mean[..., None, None] * dd_mean)
        out.append(np.stack([dd_mean, dd_var], -1))
    return out

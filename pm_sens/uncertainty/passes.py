"""Passes shared by permutation importance and partial dependence.

The predictive's entropy and log density of the observed y at many rows of
inputs.
"""

from dataclasses import replace

import numpy as np
import xarray as xr

from pm_sens._core.arguments import check_finite_array
from pm_sens._core.context import make_context
from pm_sens._core.points import distinct_rows, values_at
from pm_sens._core.table_rows import sum_over_rows
from pm_sens._run.chunks import draw_pass, moment_pass
from pm_sens._run.compiling import compiled_for, dependence_of, on_an_accelerator
from pm_sens._run.progress import progress_bar
from pm_sens.families._compositions import check_splits
from pm_sens.graph.compile.compiled import OBSERVED_Y
from pm_sens.graph.likelihoods.closed_forms import default_moment_family
from pm_sens.measures.entropy import DRAWS_TOGETHER, EntropyAccumulator, entropy_components
from pm_sens.measures.mixture import MixtureMoments
from pm_sens.measures.mixture_density import MixtureLogDensity, logsumexp_over_draws

#: rows (copies of the points with new inputs) per pass over the draws: a chunk of
#: draws reads its rows' inputs once, and a pass over fewer rows takes more draws
#: per chunk of the cache's size, so it reads them fewer times (measurements:
#: benchmarks/README.md, "Tuned constants")
PASS_ROWS = 30_000


def in_passes(ctx, rows, evaluate, description, across=()):
    """``evaluate(ctx, values, copies)`` over blocks of ``rows``, its arrays joined.

    ``rows`` (R, D) are copies of the N points with new feature values (a
    permutation's, a grid value's): each pass over the draws takes at most
    `PASS_ROWS` of them, in whole copies, under one progress bar
    (``description``); ``values`` are its rows' data (`values_at`), ``copies``
    how many copies they hold. ``evaluate`` returns arrays along the rows, or
    the copies, except those named in ``across``, which are (S, ...) along
    their second axis. One pass where each would read the draws again from a
    cluster (a dask-backed posterior) or compile new shapes (the JAX backends,
    whose chunks take the rows a block at a time on the device).
    """
    n = ctx.points.n_points
    per_pass = max(1, PASS_ROWS // n) * n
    if len(rows) <= per_pass or ctx.draws.lazy or ctx.backend != "cpu":
        return evaluate(ctx, values_at(ctx.points, ctx.inputs, rows), len(rows) // n)
    parts = []
    dependence_of(ctx)  # found once, here: the passes' copies of the context share it
    with progress_bar(description, len(rows), ctx.progressbar, unit="rows") as advance:
        quiet = replace(ctx, progressbar=False)
        for start in range(0, len(rows), per_pass):
            block = rows[start : start + per_pass]
            parts.append(
                evaluate(quiet, values_at(ctx.points, ctx.inputs, block), len(block) // n)
            )
            advance(len(block))
    return {k: np.concatenate([p[k] for p in parts], axis=int(k in across)) for k in parts[0]}


def uncertainty_context(request):
    """The shared context; integer inputs allowed (they can be permuted)."""
    return make_context(request, differentiable=False, lazy_points=False)


def observed_values(idata, ctx, observed):
    """Observed y at the points: ``observed`` or the idata's observed_data."""
    if observed is None:
        group = "observed_data"
        present = (
            list(idata[group].data_vars)
            if isinstance(idata, xr.DataTree) and group in idata.children
            else []
        )
        # a predictive built by hand (a GP's) names no variable: the only one present
        name = ctx.predictive.var_name or (present[0] if len(present) == 1 else None)
        if name not in present:
            wanted = f"observed_data[{name!r}]" if name else "a single observed variable"
            raise ValueError(
                f"observed=None but idata has no {wanted} (observed_data holds {present}); "
                "pass observed= (one value per point)"
            )
        observed = idata[group][name].values
        if ctx.predictive.observation_count is not None:
            observed = np.ravel(observed)  # a wide table: its cells, row by row
    observed = check_finite_array("observed", observed)
    expected = (ctx.points.n_points, *ctx.predictive.outcome_shape)
    if observed.shape != expected:
        raise ValueError(
            f"observed has shape {observed.shape}; expected {expected}, one value per point "
            "(pass observed= for new points)"
        )
    floating = np.issubdtype(observed.dtype, np.floating)
    family = ctx.predictive.likelihood.draw_family
    if family.discrete and floating and (observed != np.round(observed)).any():
        # a pmf is read at whole counts or classes: a fraction has none
        where = np.flatnonzero(np.ravel(observed != np.round(observed)))[0]
        raise ValueError(
            f"observed holds non-integer values ({np.ravel(observed)[where].item()} at value "
            f"{where}), but the model's {family.name} likelihood is discrete: pass its "
            "counts or classes"
        )
    if ctx.dtype == "float32" and floating and not ctx.predictive.outcome_shape:
        # univariate observations as the graphs' data are: one equal to its censoring
        # bound (rounded on the device) stays equal to it; a vector outcome keeps
        # its constraint (a simplex's sum of 1)
        observed = observed.astype(np.float32).astype(np.float64)
    return observed


def check_entropy(idata, ctx, kinds):
    """Entropy measures need the predictive's entropy: refuse a family without one.

    A count vector's entropy sums over every split of its trials: too many of
    them (on the observed data's trials) are refused before any evaluation.
    """
    likelihood = ctx.predictive.likelihood
    family = likelihood.draw_family
    if "entropy" not in kinds:
        return
    if family.discrete or family.entropy is not None:
        stored = idata["observed_data"] if "observed_data" in idata.children else {}
        if likelihood.support == "multinomial" and ctx.predictive.var_name in stored:
            trials = np.sum(stored[ctx.predictive.var_name].values, -1)
            check_splits(trials.max(initial=0), ctx.predictive.outcome_shape[0], family.name)
        return
    raise ValueError(
        f"the {likelihood.name} likelihood's entropy is a sum over every outcome of a point "
        "(every split of its counts), which pm_sens does not compute; pass kind="
        "'likelihood' (permutation_importance) or kind='log_likelihood' (partial_dependence)"
    )


def stacked_copies(observed, copies):
    """``copies`` copies of the observed values one after another (rows, then outcomes)."""
    return np.tile(observed, (copies, *[1] * (np.ndim(observed) - 1)))


def feature_groups(features, labels):
    """Feature groups as (label, column indices); names or lists of names."""
    if features is None:
        return [(label, [i]) for i, label in enumerate(labels)]
    items = [features] if isinstance(features, str) else list(features)
    if not items:
        raise ValueError(f"features={features!r} is empty; give feature names, or None for all")
    groups = []
    for item in items:
        names = [item] if isinstance(item, str) else list(item)
        unknown = [n for n in names if n not in labels]
        if unknown or not names:
            raise ValueError(
                f"features={features!r}: {unknown or 'an empty group'} not among the "
                f"features {list(labels)}"
            )
        groups.append(("+".join(names), [labels.index(n) for n in names]))
    return groups


def parameter_range(ctx, compiled, values):
    """Per row, the per-draw parameters' componentwise minimum and maximum.

    Returns (low, high), each (R, M) over all draws, and the fixed parameters
    of the first draw.
    """
    out = {}

    def consume(draws, chunk):
        phi = chunk.phi
        low, high = phi.min(0), phi.max(0)
        if out:
            low, high = np.minimum(out["low"], low), np.maximum(out["high"], high)
        fixed = {k: np.broadcast_to(v, phi.shape[:-1])[0] for k, v in chunk.fixed.items()}
        out.update(low=low, high=high, fixed=fixed)

    draw_pass(ctx, compiled, values, "support of the predictive", consume)
    return out["low"], out["high"], out["fixed"]


def entropy_accumulator(ctx, compiled, values, n_rows, table_mean=False, inverse=None):
    """The accumulator, with each row's support window when the family has one.

    ``values``: the rows evaluated; ``inverse``: where each of the ``n_rows``
    rows is among them, if they are its distinct rows (`_distinct_evaluation`).
    """
    family = ctx.predictive.likelihood.draw_family
    window = None
    if family.support_window is not None:
        low, high, fixed = parameter_range(ctx, compiled, values)
        if inverse is not None:
            low, high = low[inverse], high[inverse]
            fixed = {k: v[inverse] for k, v in fixed.items()}
        window = family.support_window(low, high, EntropyAccumulator.TAIL, **fixed)
    return EntropyAccumulator(
        family,
        n_rows,
        window=window,
        table_mean=table_mean,
        draws=ctx.draws.count,
        cores=ctx.cores,
    )


def mean_rows(ctx, values, n_rows, add):
    """Call ``add(draws, mean)`` with each chunk's per-draw predictive mean (size, R[, K]).

    A vector outcome's mean has a trailing axis of its K outcomes.
    """
    compiled = compiled_for(ctx, "draw", 0, statistic="mean", rows=n_rows)
    vector = bool(ctx.predictive.outcome_shape)

    def consume(draws, chunk):
        add(draws, chunk.phi if vector else chunk.phi[..., 0])

    draw_pass(ctx, compiled, values, "mean", consume)


def shares_mean(likelihood, entropy):
    """Whether `uncertainty_rows` gives the per-draw mean from its own evaluation.

    A closed form's mean is a statistic of the same graph; a discrete
    likelihood without closed forms has it from the pmf tables of the entropy,
    a continuous one without PyMC's mean from the entropy's rule (`_one_rule`).
    """
    if likelihood.generic is None:
        return True
    if likelihood.draw_family.discrete:
        return bool(entropy)
    return _one_rule(likelihood, entropy) and likelihood.mean is None


def _mean_from_tables(ctx, entropy):
    """Whether the entropy's pmf tables give the per-draw mean ``Σ_y y p(y)``.

    Those of a discrete family over the counts 0..W−1 held whole (no support
    window), with one outcome per point: the Bernoulli's ``(1 − p, p)``, the
    categorical's class probabilities (mean ``Σ k p_k``, as its mean
    statistic), a likelihood without closed forms. The graph then needs no mean
    of its own (the logistic's sigmoid: a quarter of a default PDP's time).
    """
    family = ctx.predictive.likelihood.draw_family
    return (
        entropy
        and family.discrete
        and family.pmf_table is not None
        and family.support_window is None
        and not ctx.predictive.outcome_shape
    )


def uncertainty_rows(
    ctx,
    values,
    n_rows,
    entropy,
    observed_rows,
    add_mean=None,
    by_row=None,
    repeats=True,
    curves=None,
):
    """Per row: entropy components (R, 3) and mixture log density (R,), as requested.

    ``add_mean(draws, mean)``, given where `shares_mean`, is also called with
    each chunk's per-draw predictive mean (S, R), from the same evaluation of
    the predictive; ``curves``, the `pm_sens.measures.permutation.MeanCurves`
    of these rows that ``add_mean`` adds to, if it is: where a device sums the
    entropies, it computes the curves' sums too (`MeanCurves.add_sums`), and
    ``add_mean`` is not called. ``by_row``: a wide table's `row_indicator`,
    for ``log_likelihood_row``, the mixture log density of each table row's
    cells together. Rows that repeat another are evaluated once
    (`_distinct_evaluation`); ``repeats=False``: the caller has already kept
    one of each.
    """
    evaluated, inverse = values, None
    if repeats:
        evaluated, inverse = _distinct_evaluation(ctx, values, by_row)
    log_density_in_graph = (
        observed_rows is not None and inverse is None and _device_log_density(ctx, by_row, entropy)
    )
    if log_density_in_graph:
        # the graph takes each row's y
        evaluated = {**values, OBSERVED_Y: np.asarray(observed_rows, dtype=float)}
    # the curves' sums are of every row: not of rows spread back from distinct ones
    curves = curves if inverse is None else None
    sums = _RowSums(
        ctx, values, n_rows, entropy, observed_rows, add_mean, by_row, curves, log_density_in_graph
    )
    if entropy:
        sums.accumulator = entropy_accumulator(
            ctx, sums.compiled, evaluated, n_rows, sums.table_mean, inverse
        )
    walks = sums.walks_supports
    draw_pass(
        ctx,
        sums.compiled,
        evaluated,
        "predictive draws",
        sums.merge,
        prepare=sums.chunk_sums,
        steps=10 if walks else 1,
        min_draws=DRAWS_TOGETHER if walks and sums.family.pmf_table is None else 1,
        spread=inverse,
    )
    return sums.results()


class _RowSums:
    """What a pass of `uncertainty_rows` computes per row and draw, and its totals.

    Which statistics the graph computes beside the parameters (or instead of
    them: the entropies in the graph), from the likelihood and what was asked;
    on a device, which of their sums over draws it computes too
    (`pm_sens.graph.engine.compile_predictive`'s ``draw_sums``). `chunk_sums`
    runs where a chunk was evaluated, on its own draws; `merge` adds a chunk's
    sums to the totals in the draws' order; `results` gives them.
    ``accumulator``: the entropies' `EntropyAccumulator`, set by the caller
    (its support window is found on the compiled graph), None without
    entropies. ``log_density_in_graph``: whether the graph takes each row's
    observed y and sums its log density over draws (`_device_log_density`).
    """

    def __init__(
        self,
        ctx,
        values,
        n_rows,
        entropy,
        observed_rows,
        add_mean,
        by_row,
        curves,
        log_density_in_graph,
    ):
        self.ctx, self.values, self.n_rows = ctx, values, n_rows
        self.observed_rows, self.add_mean, self.by_row = observed_rows, add_mean, by_row
        self.likelihood = likelihood = ctx.predictive.likelihood
        self.family = likelihood.draw_family
        # on an accelerator, a discrete family's pmf tables summed over each chunk's
        # draws in the graph, and their logs for the observed y's density, where no
        # other measure needs the parameters
        self.log_tables_in_graph = observed_rows is not None and _device_log_tables(ctx, by_row)
        self.log_density_in_graph = log_density_in_graph
        self.tables_in_graph = _device_tables(ctx, entropy) and (
            observed_rows is None or self.log_tables_in_graph
        )
        self.table_mean = (
            add_mean is not None and _mean_from_tables(ctx, entropy) and not self.tables_in_graph
        )
        self.rule = _one_rule(likelihood, entropy)
        self.rule_mean = self.rule and likelihood.mean is None
        own_mean = add_mean is not None and not (self.table_mean or self.rule_mean)
        statistics = ["mean"] if own_mean else []
        self.mixture, self.matched = None, None
        if entropy and not self.family.discrete:
            self.matched = default_moment_family(likelihood)
            if self.matched.second_moment == "variance" and (
                likelihood.generic is None or self.rule
            ):
                # the mixture's moments from the per-draw ones, in the same evaluation
                self.mixture = MixtureMoments(second_moment="variance")
                if not self.rule:
                    statistics = ["mean", "variance"]
        # the entropies computed in the graph, where no other measure needs the parameters
        # (on the CPU backend, where its graph form costs no more than the family's)
        self.entropy_in_graph = (
            entropy
            and likelihood.entropy is not None
            and (observed_rows is None or self.log_density_in_graph)
            and (ctx.backend != "cpu" or likelihood.entropy_on_cpu)
        )
        # on a device, their sums over each chunk's draws too, and the mixture's
        # moments: only arrays of the rows' size come back
        self.entropy_sums_in_graph = self.entropy_in_graph and ctx.backend != "cpu"
        draw_sums = ("table",) if self.tables_in_graph else ()
        if self.entropy_sums_in_graph:
            statistics = ["mean"] if own_mean else []
            draw_sums = ("entropy", "mixture") if self.mixture is not None else ("entropy",)
        elif self.entropy_in_graph:
            statistics.append("entropy")
        if self.log_tables_in_graph:
            draw_sums = (*draw_sums, "log_table")
        elif self.log_density_in_graph:
            draw_sums = (*draw_sums, "log_density")
        # the curves' sums beside the entropies' (their sums screen the same values)
        self.curves = curves if own_mean and draw_sums else None
        if self.curves is not None:
            statistics, draw_sums = [], (*draw_sums, "point_means", "mean_sum")
        self.parameters = not (
            self.entropy_in_graph
            or self.tables_in_graph
            or ((self.log_tables_in_graph or self.log_density_in_graph) and not entropy)
        )
        self.compiled = compiled_for(
            ctx,
            "draw",
            0,
            rows=n_rows,
            statistics=tuple(statistics),
            draw_sums=draw_sums,
            points_per_copy=None if self.curves is None else self.curves.n_points,
            parameters=self.parameters,
        )
        self.accumulator = None
        self.log_density = MixtureLogDensity(n_rows) if observed_rows is not None else None
        self.row_density = None
        if self.log_density is not None and by_row is not None:
            self.row_density = MixtureLogDensity(by_row.shape[1])

    @property
    def log_sums_in_graph(self):
        """Whether the graph sums the observed y's density over draws (tables or at y)."""
        return self.log_tables_in_graph or self.log_density_in_graph

    @property
    def walks_supports(self):
        """Whether the entropies are sums over each row's support, walked draw by draw.

        They are then the long part: the pass shows them move, and gives them
        enough draws at once to walk together.
        """
        family = self.family
        if self.accumulator is None or not family.discrete:
            return False
        return family.pmf_table is None or self.likelihood.generic is not None

    def chunk_sums(self, draws, chunk):
        """The chunk's own sums over its draws, where it was evaluated (`merge` adds them)."""
        sums = {"count": draws.stop - draws.start, "mean": None}
        if self.entropy_sums_in_graph:
            sums["entropy"], sums["mixture"] = chunk.sums["entropy"], chunk.sums.get("mixture")
        elif self.tables_in_graph:
            sums["table"] = chunk.sums["table"]
        elif self.entropy_in_graph:
            sums["entropy"] = chunk.statistics["entropy"]
        elif self.parameters:
            phi, fixed = chunk.per_draw_parameters(sums["count"])
            if self.rule:
                sums["entropy"], sums["mixture_mean"], sums["variance"] = (
                    self.likelihood.generic.entropy_and_moments(phi)
                )
                if self.rule_mean:
                    sums["mean"] = sums["mixture_mean"]
            elif self.accumulator is not None:
                sums["entropy"] = self.accumulator.part()
                sums["mean"] = sums["entropy"].add(phi, **fixed)
            if self.log_density is not None and not self.log_sums_in_graph:
                cells = self.family.log_density(phi, self.observed_rows, **fixed)
                sums["log_density"] = logsumexp_over_draws(cells)
                if self.row_density is not None:
                    by_row = sum_over_rows(cells, self.by_row)
                    sums["row_density"] = logsumexp_over_draws(by_row)
        if self.log_tables_in_graph:
            sums["log_table"] = chunk.sums["log_table"]
        elif self.log_density_in_graph:
            sums["log_density"] = chunk.sums["log_density"]
        if self.curves is not None:
            sums["curves"] = chunk.sums["point_means"], chunk.sums["mean_sum"]
        if not self.table_mean and "mean" in chunk.statistics:
            sums["mean"] = chunk.statistics["mean"]
        if self.mixture is not None and not (self.rule or self.entropy_sums_in_graph):
            sums["mixture_mean"], sums["variance"] = sums["mean"], chunk.statistics["variance"]
        return sums

    def merge(self, draws, sums):
        """Add a chunk's sums to the totals: one chunk after another, in the draws' order."""
        if self.entropy_sums_in_graph:
            self.accumulator.add_entropy_sums(sums["count"], sums["entropy"])
        elif self.tables_in_graph:
            self.accumulator.add_table_sums(sums["count"], sums["table"])
        elif self.entropy_in_graph or self.rule:
            self.accumulator.add_entropies(sums["entropy"])
        elif self.accumulator is not None:
            self.accumulator.merge(sums["entropy"])
        if self.log_tables_in_graph:
            self.log_density.add_count_sums(sums["count"], sums["log_table"], self.observed_rows)
        elif self.log_density is not None:
            self.log_density.add_sums(sums["count"], sums["log_density"])
            if self.row_density is not None:
                self.row_density.add_sums(sums["count"], sums["row_density"])
        if self.curves is not None:
            self.curves.add_sums(draws, *sums["curves"])
        elif self.add_mean is not None:
            self.add_mean(draws, sums["mean"])
        if self.entropy_sums_in_graph and self.mixture is not None:
            self.mixture.add(sums["count"], sums["mixture"])
        elif self.mixture is not None:
            self.mixture.add_draws(sums["mixture_mean"], sums["variance"])

    def results(self):
        """``entropy`` (R, 3), ``log_likelihood`` (R,), ``log_likelihood_row``, as requested."""
        out = {}
        if self.log_density is not None:
            out["log_likelihood"] = self.log_density.value()
        if self.row_density is not None:
            out["log_likelihood_row"] = self.row_density.value()
        if self.accumulator is None:
            return out
        if self.family.discrete:
            total = self.accumulator.mixture_entropy()
        else:
            mixture, second = self.mixture, self.matched.second_moment
            if mixture is None:
                compiled = compiled_for(self.ctx, "moment", 0, second, rows=self.n_rows)
                mixture, _ = moment_pass(self.ctx, compiled, self.values, second, "mixture")
            total = self.matched.entropy(mixture.phi)
        out["entropy"] = entropy_components(total, self.accumulator.aleatoric())
        return out


def _device_tables(ctx, entropy):
    """Whether a device sums the entropies' pmf tables over draws in the graph.

    Those of a discrete family with a table written for any array namespace
    (`Family.graph_pmf_table`: the Bernoulli's and the categorical's) over
    its counts held whole (no support window), one outcome per point, on an
    accelerator (`on_an_accelerator`).
    """
    family = ctx.predictive.likelihood.draw_family
    return (
        _mean_from_tables(ctx, entropy)
        and family.graph_pmf_table is not None
        and on_an_accelerator(ctx)
    )


def _device_log_tables(ctx, by_row):
    """Whether a device sums each count's log pmf over draws in the graph.

    For the observed y's mixture log density, read from them at y: those of a
    family with a log pmf table written for any array namespace
    (`Family.graph_log_pmf_table`: the Bernoulli's and the categorical's),
    one outcome per point, and each point's density alone (not a wide table's
    rows, whose cells' densities are multiplied before the sum over draws), on
    an accelerator (`on_an_accelerator`).
    """
    family = ctx.predictive.likelihood.draw_family
    return (
        family.graph_log_pmf_table is not None
        and not ctx.predictive.outcome_shape
        and by_row is None
        and on_an_accelerator(ctx)
    )


def _device_log_density(ctx, by_row, entropy):
    """Whether a device sums the observed y's log density over draws in the graph.

    Each row's y is then an argument of the graph (`OBSERVED_Y`), for a family
    with a log density written for any array namespace
    (`Family.graph_log_density`: the Normal's, Student-t's, Laplace's,
    logistic's, Gumbel's, exponential's, log-normal's, Gamma's, Beta's,
    truncated and censored Normal's, Wald's, censored Weibull's, the continuous
    hurdles', and the count laws': Bernoulli, binomial, Poisson, negative
    binomial, beta-binomial and their zero-inflated, hurdle and zero-truncated
    forms), one outcome per point, and each point's density alone
    (`_device_log_tables`), on the JAX backend (on its CPU build too, unlike
    the tables: the per-draw parameters NumPy would take cost more to bring
    back than XLA's few operations per value) and the draws in memory (a
    cluster's chunks take the points' data only). Not where the parameters
    come back all the same, for ``entropy`` outside the graph (a count law's
    sums over its support): NumPy then reads the density from them. The
    caller evaluates every row then, not only distinct ones (rows of equal
    inputs differ in y): not where the distinct rows are few.
    """
    likelihood = ctx.predictive.likelihood
    return (
        likelihood.draw_family.graph_log_density is not None
        and not ctx.predictive.outcome_shape
        and by_row is None
        and not ctx.draws.lazy
        and ctx.backend != "cpu"
        and not (entropy and likelihood.entropy is None)
    )


def _one_rule(likelihood, entropy):
    """Whether the entropy and moments come from one quadrature rule per draw and row.

    For a continuous likelihood without closed forms, each draw's entropy and
    the mixture's moments are expectations over the same nodes
    (`GenericLikelihood.entropy_and_moments`): one evaluation instead of one
    for the entropy, one for the moments and one for the mean.
    """
    generic = likelihood.generic
    return bool(entropy) and generic is not None and not generic.discrete


def _distinct_evaluation(ctx, values, by_row):
    """The rows to evaluate and, if fewer than ``values``' rows, where each row is among them.

    In a model whose rows depend on their own inputs only, rows equal in every
    per-point variable have the same predictive (`distinct_rows`): the
    permutations of a model's only input are its points again. Spreading the
    outputs back over the rows costs about what a cheap predictive costs to
    evaluate, so only where at most a quarter of the rows are distinct (a
    one-input GP's permutations, 1/6: its PFI 5.2-6.7 -> 1.1-1.2 s; a
    17-column spline's, 29 %: 0.72 -> 1.45 s, left as they were). A wide
    table's rows are left as they are.
    """
    if by_row is not None or not dependence_of(ctx).local:
        return values, None
    distinct = distinct_rows(ctx.points, values)
    return distinct if few_distinct(ctx, distinct) else (values, None)


def few_distinct(ctx, distinct):
    """Whether at most a quarter of the rows are distinct (`distinct_rows`' ``distinct``)."""
    return distinct is not None and len(distinct[1]) >= 4 * len(
        distinct[0][ctx.points.per_point[0]]
    )

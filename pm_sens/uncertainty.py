"""Uncertainty attribution: entropy/likelihood permutation importance, PDP and ICE (004)."""

import numpy as np
import xarray as xr

from pm_sens._points import feature_matrix, values_at
from pm_sens._results import attach
from pm_sens._runner import (
    DEFAULT_MEMORY_LIMIT,
    compiled_for,
    draw_pass,
    make_context,
    moment_pass,
    per_draw_shape,
    result_attrs,
)
from pm_sens._validate import (
    as_name_list,
    check_bool,
    check_choice,
    check_finite_array,
    check_optional_positive_int,
    check_percentiles,
)
from pm_sens.graph.likelihoods import default_moment_family
from pm_sens.graph.model_queries import is_float
from pm_sens.measures.entropy import (
    COMPONENTS,
    DRAWS_TOGETHER,
    EntropyAccumulator,
    MixtureLogDensity,
    entropy_components,
)
from pm_sens.measures.mixture import MixtureMoments
from pm_sens.measures.permutation import (
    feature_grid,
    grid_features,
    importance,
    permutations,
    permuted_features,
)

PFI_KINDS = ("entropy", "likelihood")
PDP_KINDS = ("mean", "entropy", "log_likelihood")


def _context(idata, model, **kwargs):
    """The shared context; integer inputs allowed (they can be permuted)."""
    return make_context(idata, model, differentiable=False, lazy_points=False, **kwargs)


def _observed(idata, ctx, observed):
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
    observed = check_finite_array("observed", observed)
    if observed.shape != (ctx.points.n_points,):
        raise ValueError(
            f"observed has shape {observed.shape}; expected ({ctx.points.n_points},), one "
            "value per point (pass observed= for new points)"
        )
    return observed


def _feature_groups(features, labels):
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


def _parameter_range(ctx, compiled, values):
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


def _entropy_accumulator(ctx, compiled, values, n_rows):
    """The accumulator, with each row's support window when the family has one."""
    family = ctx.predictive.likelihood.draw_family
    window = None
    if family.support_window is not None:
        low, high, fixed = _parameter_range(ctx, compiled, values)
        window = family.support_window(low, high, EntropyAccumulator.TAIL, **fixed)
    return EntropyAccumulator(family, n_rows, window=window)


def _uncertainty_rows(ctx, values, n_rows, entropy, observed_rows, add_mean=None):
    """Per row: entropy components (R, 3) and mixture log density (R,), as requested.

    ``add_mean(draws, mean)``, given for a closed-form likelihood, is also
    called with each chunk's per-draw predictive mean (S, R), from the same
    evaluation of the predictive.
    """
    likelihood = ctx.predictive.likelihood
    family = likelihood.draw_family
    statistics = ["mean"] if add_mean is not None else []
    mixture, matched = None, None
    if entropy and not family.discrete:
        matched = default_moment_family(likelihood)
        if likelihood.generic is None and matched.second_moment == "variance":
            # the mixture's moments from the per-draw ones, in the same evaluation
            mixture = MixtureMoments(second_moment="variance")
            statistics = ["mean", "variance"]
    # the entropies computed in the graph, where no other measure needs the parameters
    entropy_in_graph = entropy and likelihood.entropy is not None and observed_rows is None
    if entropy_in_graph:
        statistics.append("entropy")
    compiled = compiled_for(
        ctx,
        "draw",
        0,
        rows=n_rows,
        statistics=tuple(statistics),
        parameters=not entropy_in_graph,
    )
    accumulator = _entropy_accumulator(ctx, compiled, values, n_rows) if entropy else None
    log_density = MixtureLogDensity(n_rows) if observed_rows is not None else None

    def consume(draws, chunk):
        if entropy_in_graph:
            accumulator.add_entropies(chunk.statistics["entropy"])
        else:
            phi, fixed = chunk.per_draw_parameters(draws.stop - draws.start)
            if accumulator is not None:
                accumulator.add(phi, **fixed)
            if log_density is not None:
                log_density.add(family.log_density(phi, observed_rows, **fixed))
        if add_mean is not None:
            add_mean(draws, chunk.statistics["mean"])
        if mixture is not None:
            mixture.add_draws(chunk.statistics["mean"], chunk.statistics["variance"])

    # the support sums of a discrete family's entropy are the long part: show them
    # move, and give them enough draws at once to walk together
    sums = accumulator is not None and family.discrete and family.pmf_table is None
    draw_pass(
        ctx,
        compiled,
        values,
        "predictive draws",
        consume,
        steps=10 if sums else 1,
        min_draws=DRAWS_TOGETHER if sums else 1,
    )
    out = {}
    if log_density is not None:
        out["log_likelihood"] = log_density.value()
    if accumulator is not None:
        if family.discrete:
            total = accumulator.mixture_entropy()
        else:
            if mixture is None:
                compiled = compiled_for(ctx, "moment", 0, matched.second_moment, rows=n_rows)
                mixture, _ = moment_pass(ctx, compiled, values, matched.second_moment, "mixture")
            total = matched.entropy(mixture.phi)
        out["entropy"] = entropy_components(total, accumulator.aleatoric())
    return out


def permutation_importance(
    idata,
    model,
    *,
    var_name=None,
    inputs=None,
    points=None,
    observed=None,
    features=None,
    kind=PFI_KINDS,
    n_repeats=5,
    random_seed=None,
    predictive=None,
    num_draws=None,
    progressbar=True,
    extend_inferencedata=True,
    memory_limit=DEFAULT_MEMORY_LIMIT,
):
    """Entropy and likelihood permutation feature importance of the posterior predictive.

    Each feature (or group of features, permuted together) is shuffled across
    the points, and the change is averaged over points:

    - Entropy-PFI: ``mean_i [H(x̃_i) − H(x_i)]`` for the total predictive entropy
      and its aleatoric and epistemic parts — how much the feature's true value
      makes the model confident (zero in expectation for a feature independent of
      the others);
    - Likelihood-PFI: ``mean_i [log q(y_i|x_i) − log q(y_i|x̃_i)]`` with the exact
      mixture ``log q(y|x) = logsumexp_s log p(y|λ_s(x)) − log S`` — how much the
      feature helps predict the observations.

    All permuted copies are evaluated in one pass over the draws.

    Parameters
    ----------
    idata : xarray.DataTree
        Holds the ``posterior`` (and, for the likelihood, ``observed_data``).
    model : pymc.Model or bambi.Model
        The fitted model (a built bambi model is rebuilt on its data columns;
        see the user guide). It is not modified.
    var_name : str, optional
        Observed variable; default the only one.
    inputs : str or list of str, optional
        Containers whose columns are features; default every per-point container
        (float and integer: group indices and flags can be permuted too).
    points : dict or xarray.Dataset, optional
        Points to permute over; default the observed rows.
    observed : array, optional
        y at the points for the likelihood; default ``idata.observed_data[var_name]``.
    features : list, optional
        Feature labels, or lists of labels permuted together (e.g.
        ``[["lat", "lon"], "x3"]``); default each feature alone.
    kind : str or sequence of str
        ``"entropy"`` and/or ``"likelihood"``.
    n_repeats : int
        Independent permutations per feature.
    random_seed : int, optional
        Seed of the permutations (and of ``num_draws`` thinning); results are
        reproducible.
    predictive : pm_sens.Predictive, optional
        The per-draw predictive.
    num_draws : int, optional
        Thin the posterior.
    progressbar : bool
        Show progress bars.
    extend_inferencedata : bool
        Add the group ``permutation_importance`` to ``idata`` or return a new DataTree.
    memory_limit : float
        Bytes of working memory per chunk of draws.

    Returns
    -------
    xarray.DataTree
        Group ``permutation_importance`` with ``entropy_pfi`` (dims ``("repeat",
        "feature", "component")``, component ∈ total / aleatoric / epistemic)
        and ``likelihood_pfi`` (``("repeat", "feature")``), as requested.
    """
    kinds = [check_choice("kind", k, PFI_KINDS) for k in as_name_list("kind", kind)]
    n_repeats = check_optional_positive_int("n_repeats", n_repeats) or 5
    ctx = _context(
        idata,
        model,
        var_name=var_name,
        inputs=inputs,
        points=points,
        predictive=predictive,
        num_draws=num_draws,
        random_seed=random_seed,
        memory_limit=memory_limit,
        progressbar=progressbar,
        extend_inferencedata=extend_inferencedata,
    )
    y = _observed(idata, ctx, observed) if "likelihood" in kinds else None
    groups = _feature_groups(features, ctx.points.features)
    x = feature_matrix(ctx.points.values, ctx.inputs)
    n = len(x)
    order = permutations(n, n_repeats, len(groups), np.random.default_rng(random_seed))
    permuted = permuted_features(x, [cols for _, cols in groups], order)
    rows = np.concatenate([x, permuted.reshape(-1, x.shape[1])])
    copies = len(rows) // n
    out = _uncertainty_rows(
        ctx,
        values_at(ctx.points, ctx.inputs, rows),
        len(rows),
        "entropy" in kinds,
        None if y is None else np.tile(y, copies),
    )
    shape = (n_repeats, len(groups), n)
    data = {}
    if "entropy" in kinds:
        entropy = out["entropy"]
        moved = entropy[n:].reshape(*shape, 3)
        data["entropy_pfi"] = (
            ("repeat", "feature", "component"),
            # points last: (repeat, feature, component, point) minus (component, point)
            importance(entropy[:n].T, np.moveaxis(moved, 2, -1)),
        )
    if "likelihood" in kinds:
        log_q = out["log_likelihood"]
        data["likelihood_pfi"] = (
            ("repeat", "feature"),
            -importance(log_q[:n], log_q[n:].reshape(shape)),
        )
    dataset = xr.Dataset(
        data,
        coords={
            "repeat": np.arange(n_repeats),
            "feature": [label for label, _ in groups],
            "component": list(COMPONENTS),
        },
        attrs={
            "method": "permutation_importance",
            "kind": kinds,
            "n_repeats": n_repeats,
            "random_seed": "none" if random_seed is None else str(random_seed),
            **result_attrs(ctx),
        },
    )
    if "entropy" not in kinds:
        dataset = dataset.drop_vars("component")
    return attach(idata, "permutation_importance", dataset, extend_inferencedata)


def _custom_grids(grid, labels, selected, integer):
    """``grid`` validated: {column index: 1-D array of finite values} for the selected features."""
    if grid is None:
        return {}
    if not isinstance(grid, dict):
        raise TypeError(
            f"grid={grid!r} is not valid; give a dict {{feature: values}}, e.g. "
            f"{{{labels[selected[0]]!r}: [0.0, 1.0, 2.0]}}"
        )
    chosen = [labels[d] for d in selected]
    custom = {}
    for name, values in grid.items():
        if name not in chosen:
            raise ValueError(f"grid has feature {name!r}, not among the features {chosen}")
        values = check_finite_array(f"grid[{name!r}]", values)
        d = labels.index(name)
        if values.ndim != 1 or values.size == 0:
            raise ValueError(
                f"grid[{name!r}] has shape {values.shape}; give a non-empty 1-D list of values"
            )
        if integer[d] and not np.array_equal(values, np.round(values)):
            raise ValueError(
                f"grid[{name!r}]={values.tolist()} holds non-integers; {name!r} is an integer "
                "input (a group index or flag), so its grid values must be its levels"
            )
        custom[d] = values
    return custom


def _integer_columns(ctx):
    """Whether each feature column comes from an integer container."""
    return [
        not is_float(var)
        for var in ctx.inputs
        for _ in range(
            1 if np.ndim(ctx.points.values[var]) == 1 else np.shape(ctx.points.values[var])[1]
        )
    ]


def partial_dependence(  # noqa: D417 (shared parameters documented together)
    idata,
    model,
    *,
    var_name=None,
    inputs=None,
    points=None,
    observed=None,
    features=None,
    kind=("mean", "entropy"),
    grid_resolution=50,
    percentiles=(0.05, 0.95),
    grid=None,
    ice=True,
    predictive=None,
    num_draws=None,
    random_seed=None,
    progressbar=True,
    extend_inferencedata=True,
    memory_limit=DEFAULT_MEMORY_LIMIT,
):
    """Partial dependence (PDP) and individual conditional expectation (ICE) curves.

    For each feature d and grid value g, every point gets ``x_d = g`` (other
    inputs unchanged); ICE is the quantity at each such point, PDP its mean over
    points. Quantities: the predictive mean (PDP per posterior draw, so it has
    posterior bands; ICE as the posterior mean), the entropy (total, aleatoric,
    epistemic) and the mixture log density of the observed y.

    Parameters
    ----------
    idata, model, var_name, inputs, points, observed, predictive, num_draws,
    random_seed, progressbar, extend_inferencedata, memory_limit
        As in :func:`permutation_importance`.
    features : str or list of str, optional
        Features to vary, one at a time; default all.
    kind : str or sequence of str
        Any of ``"mean"``, ``"entropy"``, ``"log_likelihood"``.
    grid_resolution : int
        Quantile grid size per float feature (duplicates removed).
    percentiles : tuple of float
        Range of the quantile grid. Integer inputs use their observed levels.
    grid : dict, optional
        Explicit grid values per feature, ``{"x1": [0.0, 0.5, 1.0]}`` (as
        scikit-learn's ``custom_values``), in the order given; the other
        features get the quantile grid. Values of an integer input must be
        integers (its levels).
    ice : bool
        Also return the per-point curves.

    Returns
    -------
    xarray.DataTree
        Group ``partial_dependence`` with, per kind, ``{kind}_pdp`` and (``ice``)
        ``{kind}_ice``: ``mean_pdp`` ``("chain", "draw", "feature", "grid")``,
        ``mean_ice`` ``("feature", "grid", point_dim)``; ``entropy_pdp``
        ``("feature", "grid", "component")``, ``entropy_ice`` ``("feature",
        "grid", point_dim, "component")``; ``log_likelihood_pdp`` ``("feature",
        "grid")``, ``log_likelihood_ice`` ``("feature", "grid", point_dim)``.
        Coordinate ``grid_value`` ``("feature", "grid")`` holds the grid (NaN
        past a feature's last grid value, where the curves are NaN too).
    """
    kinds = [check_choice("kind", k, PDP_KINDS) for k in as_name_list("kind", kind)]
    grid_resolution = check_optional_positive_int("grid_resolution", grid_resolution) or 50
    ice = check_bool("ice", ice)
    percentiles = check_percentiles(percentiles)
    ctx = _context(
        idata,
        model,
        var_name=var_name,
        inputs=inputs,
        points=points,
        predictive=predictive,
        num_draws=num_draws,
        random_seed=random_seed,
        memory_limit=memory_limit,
        progressbar=progressbar,
        extend_inferencedata=extend_inferencedata,
    )
    y = _observed(idata, ctx, observed) if "log_likelihood" in kinds else None
    labels = ctx.points.features
    selected = [
        cols[0]
        for _, cols in _feature_groups(
            None if features is None else as_name_list("features", features), labels
        )
    ]
    x = feature_matrix(ctx.points.values, ctx.inputs)
    integer = _integer_columns(ctx)
    custom = _custom_grids(grid, labels, selected, integer)
    grids = [
        custom[d]
        if d in custom
        else feature_grid(x[:, d], grid_resolution, percentiles, integer[d])
        for d in selected
    ]
    points_grid = grid_features(x, selected, grids)  # (F, K, N, D)
    n_features, width, n = points_grid.shape[:3]
    rows = points_grid.reshape(-1, x.shape[1])
    values = values_at(ctx.points, ctx.inputs, rows)
    valid = np.array([[k < len(g) for k in range(width)] for g in grids])  # (F, K)
    mask = np.where(valid, 1.0, np.nan)

    uncertainty = "entropy" in kinds or "log_likelihood" in kinds
    # a closed-form likelihood's mean comes from the entropy's evaluation too
    shared = uncertainty and ctx.predictive.likelihood.generic is None
    if "mean" in kinds:
        pdp = np.empty((ctx.draws.count, n_features, width))
        ice_sum = np.zeros((n_features, width, n))

        def add_mean(draws, mean):
            size = draws.stop - draws.start
            mean = np.broadcast_to(mean, (size, len(rows))).reshape(size, n_features, width, n)
            pdp[draws] = mean.mean(-1)
            ice_sum[...] += mean.sum(0)

        if not shared:
            compiled = compiled_for(ctx, "draw", 0, statistic="mean", rows=len(rows))
            draw_pass(ctx, compiled, values, "mean", lambda d, c: add_mean(d, c.phi[..., 0]))
    if uncertainty:
        out = _uncertainty_rows(
            ctx,
            values,
            len(rows),
            "entropy" in kinds,
            None if y is None else np.tile(y, len(rows) // n),
            add_mean if "mean" in kinds and shared else None,
        )

    data = {}
    point_dim = ctx.points.point_dim
    if "mean" in kinds:
        data["mean_pdp"] = (("chain", "draw", "feature", "grid"), per_draw_shape(ctx, pdp) * mask)
        if ice:
            data["mean_ice"] = (
                ("feature", "grid", point_dim),
                ice_sum / ctx.draws.count * mask[..., None],
            )
    if "entropy" in kinds:
        curves = out["entropy"].reshape(n_features, width, n, 3) * mask[..., None, None]
        data["entropy_pdp"] = (("feature", "grid", "component"), curves.mean(2))
        if ice:
            data["entropy_ice"] = (("feature", "grid", point_dim, "component"), curves)
    if "log_likelihood" in kinds:
        curves = out["log_likelihood"].reshape(n_features, width, n) * mask[..., None]
        data["log_likelihood_pdp"] = (("feature", "grid"), curves.mean(2))
        if ice:
            data["log_likelihood_ice"] = (("feature", "grid", point_dim), curves)

    grid_values = np.full((n_features, width), np.nan)
    for f, grid in enumerate(grids):
        grid_values[f, : len(grid)] = grid
    coords = {
        "feature": [labels[d] for d in selected],
        "grid": np.arange(width),
        "grid_value": (("feature", "grid"), grid_values),
    }
    # only the dims some variable has
    if "entropy" in kinds:
        coords["component"] = list(COMPONENTS)
    if ice:
        coords[ctx.points.point_dim] = ctx.points.point_coords
    if "mean" in kinds:
        coords.update(chain=ctx.draws.chain, draw=ctx.draws.draw)
    dataset = xr.Dataset(
        data,
        coords=coords,
        attrs={
            "method": "partial_dependence",
            "kind": kinds,
            "grid_resolution": grid_resolution,
            "custom_grid": sorted(labels[d] for d in custom),
            "percentiles": list(percentiles),
            **result_attrs(ctx),
        },
    )
    return attach(idata, "partial_dependence", dataset, extend_inferencedata)

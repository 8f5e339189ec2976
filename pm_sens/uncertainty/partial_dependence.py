"""`partial_dependence`: PDP and ICE of the predictive mean, entropy and log density.

After Wood et al., "Model-agnostic variable importance for predictive
uncertainty: an entropy-based approach".
"""

import numpy as np
import xarray as xr

from pm_sens._core.arguments import (
    as_name_list,
    check_bool,
    check_choice,
    check_finite_array,
    check_optional_positive_int,
    check_percentiles,
)
from pm_sens._core.points import distinct_rows, feature_matrix
from pm_sens._core.request import DEFAULT_MEMORY_LIMIT, Request
from pm_sens._core.results import (
    attach,
    outcome_coordinates,
    outcome_dims,
    per_draw_shape,
    result_attrs,
)
from pm_sens._core.table_rows import ROW_DIM, row_indicator, table_rows
from pm_sens._run.compiling import dependence_of, on_an_accelerator
from pm_sens.graph.compile.nodes import is_float
from pm_sens.measures.entropy import COMPONENTS
from pm_sens.measures.permutation import MeanCurves, feature_grid, grid_features
from pm_sens.uncertainty.passes import (
    check_entropy,
    feature_groups,
    few_distinct,
    in_passes,
    mean_rows,
    observed_values,
    shares_mean,
    stacked_copies,
    uncertainty_context,
    uncertainty_rows,
)

PDP_KINDS = ("mean", "entropy", "log_likelihood")


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
    cores=None,
    backend=None,
    dtype=None,
):
    """Partial dependence (PDP) and individual conditional expectation (ICE) curves.

    For each feature d and grid value g, every point gets ``x_d = g`` (other
    inputs unchanged); ICE is the quantity at each such point, PDP its mean over
    points. Quantities: the predictive mean (PDP per posterior draw, so it has
    posterior bands; ICE as the posterior mean), the entropy (total, aleatoric,
    epistemic) and the mixture log density of the observed y.

    Parameters
    ----------
    idata, model, var_name, inputs, points, observed, predictive
        As in :func:`permutation_importance`.
    num_draws, random_seed, progressbar, extend_inferencedata, memory_limit, cores
        As in :func:`permutation_importance`.
    backend, dtype
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
        "grid")``, ``log_likelihood_ice`` ``("feature", "grid", point_dim)``. A
        vector outcome adds an ``outcome`` dim to the mean's; a wide table adds
        ``log_likelihood_row_pdp`` / ``_ice`` (``table_row`` for the point dim),
        the log density of each table row's cells together. Coordinate
        ``grid_value`` ``("feature", "grid")`` holds the grid (NaN past a
        feature's last grid value, where the curves are NaN too).

    Examples
    --------
    With the quickstart's ``model`` (``examples/quickstart.py``) and its ``idata``:

    Curves of the mean and the entropy for two inputs, on 20 quantiles each:

    >>> import pm_sens
    >>> idata = pm_sens.partial_dependence(
    ...     idata, model, features=["dose", "noise_driver"], grid_resolution=20
    ... )
    >>> idata["partial_dependence"]["mean_pdp"].dims
    ('chain', 'draw', 'feature', 'grid')
    >>> curves = pm_sens.summary(idata, group="partial_dependence")
    """
    kinds = [check_choice("kind", k, PDP_KINDS) for k in as_name_list("kind", kind)]
    grid_resolution = check_optional_positive_int("grid_resolution", grid_resolution) or 50
    ice = check_bool("ice", ice)
    percentiles = check_percentiles(percentiles)
    request = Request.of(locals())
    ctx = uncertainty_context(request)
    check_entropy(idata, ctx, kinds)
    y = observed_values(idata, ctx, observed) if "log_likelihood" in kinds else None
    labels = ctx.points.features
    selected, grids, custom = _grids(ctx, features, grid, grid_resolution, percentiles)
    x = feature_matrix(ctx.points.values, ctx.inputs)
    points_grid = grid_features(x, selected, grids)  # (F, K, N, D)
    curves = _curves(ctx, kinds, points_grid.reshape(-1, x.shape[1]), y)
    data = _curve_variables(ctx, kinds, curves, points_grid.shape[:3], grids, ice)
    width = points_grid.shape[1]
    grid_values = np.full((len(grids), width), np.nan)
    for f, values in enumerate(grids):
        grid_values[f, : len(values)] = values
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
    if ice and "log_likelihood_row_ice" in data:
        coords[ROW_DIM] = table_rows(ctx)[1]
    if "mean" in kinds:
        coords.update(chain=ctx.draws.chain, draw=ctx.draws.draw, **outcome_coordinates(ctx))
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
    return attach(request.idata, "partial_dependence", dataset, request.extend_inferencedata)


def _grids(ctx, features, grid, grid_resolution, percentiles):
    """The features to vary (column indices), their grids, and the custom ones' columns."""
    labels = ctx.points.features
    chosen = None if features is None else as_name_list("features", features)
    selected = [cols[0] for _, cols in feature_groups(chosen, labels)]
    x = feature_matrix(ctx.points.values, ctx.inputs)
    integer = _integer_columns(ctx)
    custom = _custom_grids(grid, labels, selected, integer)
    grids = [
        custom[d]
        if d in custom
        else feature_grid(x[:, d], grid_resolution, percentiles, integer[d])
        for d in selected
    ]
    return selected, grids, custom


def _curves(ctx, kinds, rows, y):
    """`_pass_curves` at the feature rows ``rows`` (R, D), in passes of whole grid values.

    The rows are every point at every grid value of every feature (`in_passes`).
    """

    def evaluate(ctx, values, copies):
        return _pass_curves(ctx, kinds, values, copies * ctx.points.n_points, y)

    return in_passes(ctx, rows, evaluate, "partial dependence", across=("mean_pdp_rows",))


def _pass_curves(ctx, kinds, values, n_rows, y):
    """The quantities at the R rows of ``values``, in one pass over the draws.

    ``mean_pdp_rows`` (S, R/N): each draw's mean over the points per grid value;
    ``mean_ice_rows`` (R,): the mean summed over draws; ``entropy`` (R, 3),
    ``log_likelihood`` (R,) and, for a wide table, ``log_likelihood_row`` as
    `uncertainty_rows` gives them. Rows that repeat another (`distinct_rows`)
    are evaluated once, in a model whose rows depend on their own inputs only
    (on an accelerator, which sums the curves over draws where it is, only
    where at most a quarter of the rows are distinct).
    """
    n = ctx.points.n_points
    uncertainty = "entropy" in kinds or "log_likelihood" in kinds
    # the mean from the entropy's evaluation, where it gives it
    shared = uncertainty and shares_mean(ctx.predictive.likelihood, "entropy" in kinds)
    outcomes = ctx.predictive.outcome_shape
    curves = MeanCurves(ctx.draws.count, n_rows, n, outcomes) if "mean" in kinds else None
    distinct = None
    if y is None and dependence_of(ctx).local:
        distinct = distinct_rows(ctx.points, values)
    # on an accelerator the rows that repeat another are evaluated too, unless few
    # are distinct, so that the curves' sums over draws are taken there
    # (`uncertainty_rows`' ``curves``): rows spread back from distinct ones would
    # bring each draw's means back instead
    if (
        shared
        and curves is not None
        and on_an_accelerator(ctx)
        and not few_distinct(ctx, distinct)
    ):
        distinct = None
    if distinct is not None:
        values, inverse = distinct
    evaluated = n_rows if distinct is None else len(values[ctx.points.per_point[0]])

    def add_mean(draws, mean):
        curves.add(draws, mean if distinct is None else mean[:, inverse])

    if curves is not None and not shared:
        mean_rows(ctx, values, evaluated, add_mean)
    out = {}
    if uncertainty:
        observed = None if y is None else stacked_copies(y, n_rows // n)
        add = add_mean if curves is not None and shared else None
        table = table_rows(ctx) if y is not None else None  # a wide table: each row's cells
        by_row = None if table is None else row_indicator(table[0], len(table[1]), n_rows // n)
        rows = uncertainty_rows(
            ctx,
            values,
            evaluated,
            "entropy" in kinds,
            observed,
            add,
            by_row,
            repeats=y is not None,
            curves=curves if add is not None and distinct is None else None,
        )
        out.update({k: v if distinct is None else v[inverse] for k, v in rows.items()})
    if curves is not None:
        out.update(mean_pdp_rows=curves.pdp, mean_ice_rows=curves.ice)
    return out


def _curve_variables(ctx, kinds, curves, shape, grids, ice):
    """The result's variables: per kind its PDP and (``ice``) ICE, NaN past a feature's grid."""
    n_features, width, n = shape
    valid = np.array([[k < len(g) for k in range(width)] for g in grids])  # (F, K)
    mask = np.where(valid, 1.0, np.nan)
    point_dim = ctx.points.point_dim
    data = {}
    if "mean" in kinds:
        outcome, shape = outcome_dims(ctx), ctx.predictive.outcome_shape  # each outcome's mean
        on_grid = mask.reshape(mask.shape + (1,) * len(outcome))
        pdp = curves["mean_pdp_rows"].reshape(-1, n_features, width, *shape)
        data["mean_pdp"] = (
            ("chain", "draw", "feature", "grid", *outcome),
            per_draw_shape(ctx, pdp) * on_grid,
        )
        if ice:
            ice_mean = curves["mean_ice_rows"].reshape(n_features, width, n, *shape)
            ice_mean = ice_mean / ctx.draws.count
            data["mean_ice"] = (
                ("feature", "grid", point_dim, *outcome),
                ice_mean * on_grid[:, :, None],
            )
    if "entropy" in kinds:
        values = curves["entropy"].reshape(n_features, width, n, 3) * mask[..., None, None]
        data["entropy_pdp"] = (("feature", "grid", "component"), values.mean(2))
        if ice:
            data["entropy_ice"] = (("feature", "grid", point_dim, "component"), values)
    if "log_likelihood" in kinds:
        values = curves["log_likelihood"].reshape(n_features, width, n) * mask[..., None]
        data["log_likelihood_pdp"] = (("feature", "grid"), values.mean(2))
        if ice:
            data["log_likelihood_ice"] = (("feature", "grid", point_dim), values)
    if "log_likelihood_row" in curves:  # a wide table: each row's cells together
        values = curves["log_likelihood_row"].reshape(n_features, width, -1) * mask[..., None]
        data["log_likelihood_row_pdp"] = (("feature", "grid"), values.mean(2))
        if ice:
            data["log_likelihood_row_ice"] = (("feature", "grid", ROW_DIM), values)
    return data

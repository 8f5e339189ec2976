"""`summary`: global importance per feature (and pair), with intervals and ranks."""

import shutil

import numpy as np
import pandas as pd
import xarray as xr
from arviz_base import rcParams

from pm_sens._core.arguments import (
    check_bool,
    check_choice,
    check_positive_int,
    check_probability,
    check_seed,
    group_dataset,
    warn,
)
from pm_sens._core.draws import SAMPLE_DIMS
from pm_sens.ranking.global_values import (
    KINDS,
    SCALES,
    ci_bounds,
    feature_variables,
    global_samples,
    pair_labels,
    per_sd,
    point_dims,
    skips_degenerate,
    tell_degenerate,
)


def _interval(samples, ci_prob, ci_kind):
    if samples.sizes["sample"] < 2:
        nan = np.full(samples.sizes["feature"], np.nan)
        return nan, nan
    lower, upper = ci_bounds(samples, ci_prob, ci_kind, ["sample"])
    return lower.values, upper.values


def _global_block(name, da, n_bootstrap, rng, skipna, group=None):
    """Labels and global samples of one variable or ``by`` group (``{by: value}``).

    The samples are lazy if the local values are.
    """
    if "feature_bis" in da.dims:
        da = pair_labels(da)
    estimate, samples = global_samples(name, da, n_bootstrap, rng, skipna)
    kinds = da["feature_kind"].values if "feature_kind" in da.coords else None
    labels = {"variable": name, "feature": da["feature"].values, "kind": kinds}
    labels["interactions_from"] = da.attrs.get("interactions_from")
    labels["group"] = group or {}
    return labels, estimate, samples


def _computed(blocks):
    """Blocks with their estimates and samples computed, all in one pass over lazy values."""
    pairs = [(estimate, samples) for _, estimate, samples in blocks]
    if any(bool(estimate.chunks) or bool(samples.chunks) for estimate, samples in pairs):
        import dask

        pairs = dask.compute(*pairs)
    return [(labels, *pair) for (labels, _, _), pair in zip(blocks, pairs, strict=True)]


def _warn_nonfinite(blocks):
    """Name the features with some (not all) local values non-finite."""
    partly = []
    for labels, estimate, _ in blocks:
        total = estimate.attrs["values"]
        for feature, count in zip(labels["feature"], estimate["nonfinite"].values, strict=True):
            if 0 < count < total:
                partly.append(f"{labels['variable']}[{feature}]: {int(count)} of {total}")
    if partly:
        warn(
            "some local values are not finite (nan or inf), so these features get no "
            f"importance and no rank: {', '.join(partly)} non-finite value(s). Find them with "
            "summary(kind='local'); pass skipna=True to rank on the finite values",
        )


def _frame(labels, estimate, samples, ci_prob, ci_kind, top_k):
    lower, upper = _interval(samples, ci_prob, ci_kind)
    # rank of each feature within each sample (1 = most important)
    ranks = np.nan_to_num(-samples.values, nan=np.inf).argsort(1).argsort(1) + 1
    frame = pd.DataFrame(
        {
            "variable": labels["variable"],
            "feature": labels["feature"],
            "importance": estimate["importance"].values,
            "ci_lower": lower,
            "ci_upper": upper,
            f"prob_top_{top_k}": (ranks <= top_k).mean(0),
        }
    )
    if labels["kind"] is not None:
        frame["kind"] = labels["kind"]
    if labels["interactions_from"] is not None:  # R-sens2: which predictive's pairs
        frame["interactions_from"] = labels["interactions_from"]
    frame["nonfinite"] = estimate["nonfinite"].values
    # a feature with no value (a constant design column; a method without a level
    # version) is listed last, unranked
    missing = frame["importance"].isna().to_numpy()
    frame.loc[missing, f"prob_top_{top_k}"] = np.nan
    frame = frame.sort_values("importance", ascending=False, kind="stable", na_position="last")
    ranks = np.arange(1, len(frame) + 1)
    frame["rank"] = pd.array(np.where(missing[frame.index], None, ranks), dtype="Int64")
    return frame.assign(**labels["group"])


def _block(rows):
    """One variable's rows as printed, without the variable's name.

    The ``interactions_from`` column shows only in R-sens2's block.
    """
    rows = rows.drop(columns="variable")
    if "interactions_from" in rows and rows["interactions_from"].isna().all():
        rows = rows.drop(columns="interactions_from")
    return rows


class SummaryTable(pd.DataFrame):
    """The table :func:`summary` returns: a pandas DataFrame that prints in full.

    Printing shows every row, one block per variable under its name, wrapped
    at the terminal's width, with numbers to four significant digits and
    without the index; columns that carry no information in this table
    (``nonfinite`` all 0, ``kind`` all ``"rate"``) are named in a last line
    instead of shown. The data are unchanged.
    """

    @property
    def _constructor(self):
        return SummaryTable

    def __repr__(self):
        shown, notes = pd.DataFrame(self), []
        if "nonfinite" in shown and (shown["nonfinite"] == 0).all():
            shown, notes = shown.drop(columns="nonfinite"), ["nonfinite (all 0)"]
        if "kind" in shown and (shown["kind"].isin(["rate"]) | shown["kind"].isna()).all():
            shown, notes = shown.drop(columns="kind"), [*notes, "kind (all 'rate')"]
        options = {
            "index": False,
            "float_format": lambda v: f"{v:.4g}",
            "line_width": shutil.get_terminal_size((100, 24)).columns,
        }
        if "variable" in shown and len(shown):
            blocks = [
                f"{name}\n{_block(rows).to_string(**options)}"
                for name, rows in shown.groupby("variable", sort=False)
            ]
        else:
            blocks = [shown.to_string(**options)]
        if notes:
            blocks.append(f"[not shown: {', '.join(notes)}]")
        return "\n\n".join(blocks)

    __str__ = __repr__


def _local_table(dataset, names):
    """Local values as a long table: one row per (draw,) point and feature or pair.

    Pairs are the off-diagonal ``a:b`` with ``a`` before ``b``, as in the
    global table; every coordinate along the rows' dims becomes a column.
    """
    frames = []
    for name in names:
        da = dataset[name]
        if "feature_bis" in da.dims:
            da = pair_labels(da)
        frame = da.to_dataframe(name="value").reset_index()
        frames.append(frame.assign(variable=name))
    table = pd.concat(frames, ignore_index=True)
    first = ["variable", *[c for c in SAMPLE_DIMS if c in table], "feature"]
    return table[first + [c for c in table.columns if c not in first]]


def _curve_table(dataset, names, ci_prob, ci_kind):
    """Curves over a grid as a long table, with posterior intervals where there are draws.

    One row per variable, feature, grid point (and entropy component, and
    point for ICE curves); grid positions past a feature's grid are left out.
    """
    frames = []
    for name in names:
        da = dataset[name]
        sample_dims = [d for d in SAMPLE_DIMS if d in da.dims]
        columns = {"value": da.mean(sample_dims)}
        if sample_dims:
            columns["ci_lower"], columns["ci_upper"] = ci_bounds(da, ci_prob, ci_kind, sample_dims)
        frame = xr.Dataset(columns).to_dataframe().reset_index()
        frames.append(frame[frame["grid_value"].notna()].assign(variable=name))
    table = pd.concat(frames, ignore_index=True)
    first = ["variable", "feature", "component", "grid", "grid_value"]
    first = [c for c in first if c in table]
    return table[first + [c for c in table.columns if c not in first]]


def _variable_blocks(name, da, by, scale, **options):
    """Global samples of one variable: per entropy component, and per group of ``by``."""
    if scale == "sd":
        da = per_sd(name, da)
    if "component" in da.dims:
        return [
            block
            for c in da["component"].values
            for block in _variable_blocks(
                f"{name}[{c}]", da.sel(component=c), by, scale, **options
            )
        ]
    if by is None:
        return [_global_block(name, da, **options)]
    if by not in da.coords or len(da[by].dims) != 1 or da[by].dims[0] not in point_dims(da):
        raise ValueError(
            f"by={by!r} is not a coordinate along the point dimension of {name!r}; "
            f"valid: {[c for c in da.coords if da[c].dims and da[c].dims[0] in point_dims(da)]}"
        )
    point_dim = da[by].dims[0]
    return [
        _global_block(
            name, da.isel({point_dim: da[by].values == value}), **options, group={by: value}
        )
        for value in np.unique(da[by].values)
    ]


def summary(
    idata,
    *,
    group="sensitivity",
    var_names=None,
    ci_prob=None,
    by=None,
    kind="global",
    scale="input",
    top_k=1,
    n_bootstrap=1000,
    random_seed=0,
    skipna=False,
):
    """Rank the features (and feature pairs) by global importance, with intervals.

    Global importance is the mean of the local values over the points (of their
    absolute values for signed attributions such as ``ig``). Its uncertainty:

    - draw mode: the posterior over draws (one global value per draw);
    - moment mode: a Bayesian bootstrap over the points (seeded), i.e. the
      uncertainty from having these points and not others;
    - permutation importance: the spread over repeats.

    Parameters
    ----------
    idata : xarray.DataTree
        Holds the group written by a pm_sens function.
    group : str
        ``"sensitivity"``, ``"attribution"``, ``"permutation_importance"`` or
        ``"partial_dependence"`` (its curves; see Returns).
    var_names : str or list of str, optional
        Variables to summarize; default every variable with a feature dim
        (per-point diagnostics are left out).
    ci_prob : float, optional
        Interval probability; default ``arviz_base.rcParams["stats.ci_prob"]``.
        The interval is an ETI or HDI as ``rcParams["stats.ci_kind"]`` says.
    by : str, optional
        A coordinate along the point dimension (e.g. ``"county_idx"``, added to
        results for integer per-point containers): one block of rows per group.
    kind : {"global", "local"}
        ``"local"`` returns the local values as a long table instead (ICE
        curves for the partial-dependence group).
    scale : {"input", "sd"}
        ``"input"``: measures per unit of each input, as computed. ``"sd"``:
        per-unit measures (R-sens, KL, EAD, AED; pairs by the product) times
        the input's standard deviation over the points, i.e. the change of the
        predictive over a typical change of the input. This puts continuous
        inputs on the scale of categorical ones, whose values are for a whole
        level change (see :doc:`/explanation/reading`, "Reading the numbers").
    top_k : int
        The table gives the probability that each feature ranks in the top k.
    n_bootstrap : int
        Bayesian bootstrap replicates (moment mode).
    random_seed : int
        Seed of the bootstrap.
    skipna : bool
        False: a feature with non-finite local values (nan, inf) gets no
        importance and no rank, and a warning names it. True: its importance
        is the mean of its finite values. Either way the column ``nonfinite``
        counts them. (Features with no value at all — a method without a level
        version, a constant column — are NaN and unranked, without a warning.)

    Returns
    -------
    SummaryTable
        A :class:`pandas.DataFrame` that prints every row and fits the terminal.
        Global: one row per feature of each variable (per pair ``"a:b"`` with
        ``a`` before ``b`` for second-order variables, whose diagonal — the
        curvature — is left out; per component for ``entropy_pfi``), sorted by
        importance within each variable (and group), with columns ``variable``,
        ``feature``, ``importance``, ``ci_lower``, ``ci_upper``,
        ``prob_top_{k}``, ``rank`` (1 = most important), ``kind`` (for
        sensitivities: ``"rate"`` per unit of a continuous input, ``"level"``
        for a categorical input, ``"constant"`` for a column that is the same
        in every row of the data, which has no value and no rank), for R-sens2
        ``interactions_from`` (``"moment-matched predictive"``: its pairs include
        those the posterior correlation of the parameters makes; ``"per-draw
        predictives"``: only those the model's expression makes; see the user
        guide) and the ``by`` column.
        Local: one row per point and feature (per point and pair ``"a:b"``, the
        diagonal left out, for second-order variables; per draw too in draw
        mode), with columns ``variable``, the dims, ``value`` and the
        coordinates along them (``input_value``: the feature's value there).
        Partial dependence: global gives the PDP curves, one row per
        variable, feature and grid point (and ``component`` of the entropy),
        with ``grid_value``, ``value`` (posterior mean) and, where the curve
        has draws (``mean_pdp``), ``ci_lower``/``ci_upper``; local gives the
        ICE curves, one row per point too.

    Examples
    --------
    With the quickstart's ``model`` (``examples/quickstart.py``) and its ``idata``:

    >>> import pm_sens
    >>> idata = pm_sens.sensitivity(idata, model, interactions=True)
    >>> table = pm_sens.summary(idata)  # one block per variable: rsens, rsens2
    >>> list(table.columns[:4])
    ['variable', 'feature', 'importance', 'ci_lower']
    >>> per_sd = pm_sens.summary(idata, scale="sd")  # per standard deviation of each input
    >>> local = pm_sens.summary(idata, kind="local")  # one row per point and feature
    """
    check_choice("kind", kind, KINDS)
    ci_prob = (
        rcParams["stats.ci_prob"] if ci_prob is None else check_probability("ci_prob", ci_prob)
    )
    top_k = check_positive_int("top_k", top_k)
    n_bootstrap = check_positive_int("n_bootstrap", n_bootstrap)
    skipna = check_bool("skipna", skipna)
    random_seed = check_seed("random_seed", random_seed)
    check_choice("scale", scale, SCALES)
    dataset = group_dataset(idata, group)
    if "grid" in dataset.dims:
        return _curves_summary(dataset, var_names, kind, ci_prob, by, scale)
    names = feature_variables(dataset, var_names)
    if kind == "local":
        return SummaryTable(_local_table(dataset, names))
    rng = np.random.default_rng(random_seed)
    # pairs of one feature: none to rank (its diagonal is curvature, not a pair)
    names = [
        n for n in names if "feature_bis" not in dataset[n].dims or dataset.sizes["feature"] > 1
    ]
    # a degenerate point (a predictive that is one value) has no value: left out
    degenerate = [name for name in names if skips_degenerate(dataset, name)]
    tell_degenerate(dataset, degenerate)
    skips = {name: skipna or name in degenerate for name in names}
    blocks = [
        block
        for name in names
        for block in _variable_blocks(
            name, dataset[name], by, scale, n_bootstrap=n_bootstrap, rng=rng, skipna=skips[name]
        )
    ]
    interval = {"ci_prob": ci_prob, "ci_kind": rcParams["stats.ci_kind"], "top_k": top_k}
    computed = _computed(blocks)
    # a block's variable may carry its component (``entropy_pfi[total]``)
    shown = [block for block in computed if not skips[block[0]["variable"].split("[")[0]]]
    _warn_nonfinite(shown)
    frames = [_frame(*block, **interval) for block in computed]
    return SummaryTable(pd.concat(frames, ignore_index=True))


def _curves_summary(dataset, var_names, kind, ci_prob, by, scale):
    """``summary`` of the partial-dependence group: PDP curves (global) or ICE curves (local)."""
    for name, value, default in (("by", by, None), ("scale", scale, "input")):
        if value != default:
            raise ValueError(
                f"{name}={value!r} does not apply to partial-dependence curves (they are not "
                "averaged over points and are in the units of the quantity, not per unit of an "
                f"input); leave {name} at its default"
            )
    suffix = "_pdp" if kind == "global" else "_ice"
    names = [n for n in feature_variables(dataset, var_names, curves=True) if n.endswith(suffix)]
    if not names:
        raise ValueError(
            f"kind={kind!r}: the partial_dependence group has no {suffix[1:].upper()} curves "
            f"among var_names={var_names!r} (it holds {list(dataset.data_vars)})"
        )
    return SummaryTable(_curve_table(dataset, names, ci_prob, rcParams["stats.ci_kind"]))

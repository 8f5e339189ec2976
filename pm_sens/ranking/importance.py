"""`importance`: each feature's global importance as a DataArray, the draws kept."""

from pm_sens._core.arguments import check_choice, group_dataset
from pm_sens.ranking.global_values import (
    SCALES,
    SIGNED,
    feature_variables,
    per_sd,
    point_dims,
    skips_degenerate,
    tell_degenerate,
)


def importance(idata, var_name="rsens", *, group="sensitivity", scale="input"):
    """Global importance of each feature (or pair) as a DataArray, the draws kept.

    The mean over the points of the local values (of their absolute values for
    signed attributions such as ``ig``): the number :func:`summary` ranks, before
    any interval, ranking or table — for loops over data sets or models.

    Parameters
    ----------
    idata : xarray.DataTree
        Holds the group written by a pm_sens function.
    var_name : str
        A variable of the group with a feature dim: ``"rsens"``, ``"rsens2"``,
        ``"kl"``, ``"ig"``, ``"entropy_pfi"``, …
    group : str
        ``"sensitivity"``, ``"attribution"`` or ``"permutation_importance"``.
    scale : {"input", "sd"}
        As in :func:`summary`: per unit of each input, or per standard deviation.

    Returns
    -------
    xarray.DataArray
        Dims ``("feature",)`` (moment mode), ``("chain", "draw", "feature")``
        (draw mode, attribution), ``("repeat", "feature"[, "component"])``
        (permutation importance); second-order variables keep ``feature_bis``
        (the diagonal is each feature's curvature). A feature with a non-finite
        local value (nan, inf) gets nan; :func:`summary` counts and names them.
        Points whose predictive is one value (the group's ``degenerate``) are
        left out, with an info message.

    Examples
    --------
    With the quickstart's ``model`` (``examples/quickstart.py``) and its ``idata``:

    >>> import pm_sens
    >>> idata = pm_sens.sensitivity(idata, model, mode="draw")
    >>> values = pm_sens.importance(idata, "rsens")
    >>> values.dims
    ('chain', 'draw', 'feature')
    >>> first = values.mean(("chain", "draw")).idxmax("feature")  # the most important input
    """
    check_choice("scale", scale, SCALES)
    dataset = group_dataset(idata, group)
    valid = feature_variables(dataset, None)
    if var_name not in valid:
        raise ValueError(
            f"var_name={var_name!r} is not a per-feature variable of group {group!r}; "
            f"valid: {valid}"
        )
    da = per_sd(var_name, dataset[var_name]) if scale == "sd" else dataset[var_name]
    da = abs(da) if var_name in SIGNED else da
    # points whose predictive is one value have no value: over the others
    skipna = skips_degenerate(dataset, var_name)
    tell_degenerate(dataset, [var_name] if skipna else [])
    return da.mean(point_dims(da), skipna=skipna).rename(var_name)

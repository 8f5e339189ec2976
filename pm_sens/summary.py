"""`summary`: global importance per feature (and pair), ranked."""

import numpy as np
import pandas as pd
import xarray as xr
from arviz_base import rcParams
from arviz_stats import eti

SAMPLE_DIMS = ("chain", "draw")
FEATURE_DIMS = ("feature", "feature_bis", "component")


#: Signed attributions: their global importance is the mean absolute value.
SIGNED = ("ig",)


def _global_importance(name, da):
    """Mean over the point dim: dims (chain, draw)? + feature (+ feature_bis)."""
    point_dims = [d for d in da.dims if d not in SAMPLE_DIMS + FEATURE_DIMS]
    return (abs(da) if name in SIGNED else da).mean(point_dims)


def _pairs(da):
    """Off-diagonal pairs d < e of a symmetric (feature, feature_bis) array, as dim 'feature'."""
    features = list(da["feature"].values)
    first, second = np.triu_indices(len(features), k=1)
    labels = [f"{features[i]}:{features[j]}" for i, j in zip(first, second, strict=True)]
    picked = da.isel(
        feature=xr.DataArray(first, dims="pair"), feature_bis=xr.DataArray(second, dims="pair")
    )
    return (
        picked.drop_vars(["feature", "feature_bis"])
        .rename(pair="feature")
        .assign_coords(feature=labels)
    )


def _rows(name, da, ci_prob):
    if "feature_bis" in da.dims:
        da = _pairs(da)
    frame = pd.DataFrame({"variable": name, "feature": da["feature"].values})
    if "chain" in da.dims:
        interval = eti(da, prob=ci_prob, dim=list(SAMPLE_DIMS))
        frame["importance"] = da.mean(SAMPLE_DIMS).values
        frame["eti_lower"] = interval.sel(ci_bound="lower").values
        frame["eti_upper"] = interval.sel(ci_bound="upper").values
    else:
        frame["importance"] = da.values
    frame = frame.sort_values("importance", ascending=False, kind="stable")
    frame["rank"] = np.arange(1, len(frame) + 1)
    return frame


def summary(idata, *, group="sensitivity", ci_prob=None):
    """Rank the features (and feature pairs) by global importance.

    Global importance is the mean of the local values over the points (of their
    absolute values for signed attributions such as ``ig``; over the repeats
    for permutation importance, one block per entropy component). In draw mode
    it is a posterior distribution: the table gives its posterior mean and an
    equal-tailed interval (from arviz-stats). Variables without a feature
    dimension (e.g. ``completeness_gap``) and curves over a grid are left out.

    Parameters
    ----------
    idata : xarray.DataTree
        Holds the group written by :func:`pm_sens.sensitivity`.
    group : str
        Group to summarize.
    ci_prob : float, optional
        Interval probability; default ``arviz_base.rcParams["stats.ci_prob"]``.

    Returns
    -------
    pandas.DataFrame
        One row per feature of each variable (per pair ``"a:b"`` with ``a``
        before ``b`` for ``rsens2``; its diagonal, the curvature, is left out),
        sorted by importance within each variable, with columns ``variable``,
        ``feature``, ``importance``, ``eti_lower``/``eti_upper`` (draw mode)
        and ``rank`` (1 = most important).
    """
    if not isinstance(idata, xr.DataTree) or group not in idata.children:
        groups = sorted(idata.children) if isinstance(idata, xr.DataTree) else []
        raise ValueError(
            f"group={group!r} is not in idata (groups: {groups}); run pm_sens.sensitivity first"
        )
    ci_prob = rcParams["stats.ci_prob"] if ci_prob is None else ci_prob
    dataset = idata[group].to_dataset()
    frames = []
    for name in dataset.data_vars:
        da = dataset[name]
        if "feature" not in da.dims or "grid" in da.dims:
            continue
        importance = _global_importance(name, da)
        if "component" in da.dims:
            frames += [
                _rows(f"{name}[{c}]", importance.sel(component=c), ci_prob)
                for c in importance["component"].values
            ]
        else:
            frames.append(_rows(name, importance, ci_prob))
    return pd.concat(frames, ignore_index=True)

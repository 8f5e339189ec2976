"""Global values from local ones, shared by `summary`, `importance` and the plots.

What is averaged, bootstrap samples over points, per-sd scaling, and which
variables of a group have features.
"""

import numpy as np
import xarray as xr
from arviz_stats import eti, hdi

from pm_sens._core.arguments import as_name_list, inform
from pm_sens._core.draws import SAMPLE_DIMS

#: Dims that label what is ranked (not averaged over).
KEEP_DIMS = ("feature", "feature_bis", "component")
#: Signed attributions: their global importance is the mean absolute value.
SIGNED = ("ig",)
KINDS = ("global", "local")
SCALES = ("input", "sd")
#: Local measures per unit of the input (first order), and per unit² (pairs):
#: ``scale="sd"`` multiplies them by the inputs' standard deviations.
PER_UNIT = ("rsens", "kl", "ead", "aed", "rsens_row", "kl_row")
PER_UNIT_PAIR = ("rsens2", "eah", "aeh", "rsens2_row")


def pair_labels(da):
    """Off-diagonal pairs d < e of a symmetric (feature, feature_bis) array, as dim 'feature'.

    Their ``feature_kind``: ``"rate"`` for two continuous inputs, ``"constant"``
    with a constant column, else the two kinds (``"rate:level"``, ``"level:level"``).
    """
    features = list(da["feature"].values)
    first, second = np.triu_indices(len(features), k=1)
    labels = [f"{features[i]}:{features[j]}" for i, j in zip(first, second, strict=True)]
    picked = da.isel(
        feature=xr.DataArray(first, dims="pair"), feature_bis=xr.DataArray(second, dims="pair")
    )
    picked = picked.drop_vars(
        ["feature", "feature_bis", "feature_kind", "input_value", "input_sd"], errors="ignore"
    )
    picked = picked.rename(pair="feature").assign_coords(feature=labels)
    if "feature_kind" not in da.coords:
        return picked
    kinds = da["feature_kind"].values
    pair_kinds = [_pair_kind(kinds[i], kinds[j]) for i, j in zip(first, second, strict=True)]
    return picked.assign_coords(feature_kind=("feature", pair_kinds))


def _pair_kind(first, second):
    if "constant" in (first, second):
        return "constant"
    return "rate" if first == second == "rate" else f"{first}:{second}"


def point_dims(da):
    """The dims of ``da`` that are averaged over: neither samples nor what is ranked."""
    return [d for d in da.dims if d not in SAMPLE_DIMS + KEEP_DIMS + ("repeat",)]


def bootstrap_weights(rng, n_bootstrap, stacked):
    """Gamma(1) weights (sample, point): normalized, Dirichlet(1, …, 1) (Bayesian bootstrap).

    For lazy (dask-backed) local values the weights are lazy too, chunked like
    the points, so the weighted means are reductions over the chunks.
    """
    size = (n_bootstrap, stacked.sizes["point"])
    if stacked.chunks is None:
        return xr.DataArray(rng.standard_gamma(1.0, size), dims=("sample", "point"))
    import dask.array

    chunks = (n_bootstrap, stacked.chunksizes["point"])
    weights = dask.array.random.default_rng(rng).standard_gamma(1.0, size, chunks=chunks)
    return xr.DataArray(weights, dims=("sample", "point"))


def global_samples(name, da, n_bootstrap, rng, skipna):
    """Samples of the global importance, dims ("sample", "feature"), and its point estimate.

    Draw mode: one sample per posterior draw (mean over points). Moment mode:
    Bayesian bootstrap over points (Dirichlet(1, …, 1) weights). Permutation
    importance: one sample per repeat. Without either, a single sample.
    Non-finite local values make the feature's importance NaN, unless
    ``skipna`` (then means over the finite ones). The estimate is a Dataset:
    ``importance`` and ``nonfinite``, the count of non-finite local values out
    of ``attrs["values"]``.
    """
    da = abs(da) if name in SIGNED else da
    points = point_dims(da)
    repeats = [d for d in ("chain", "draw", "repeat") if d in da.dims]
    attrs = {"values": int(np.prod([da.sizes[d] for d in points + repeats]))}
    by_sample = None if da.chunks else da.mean(points, skipna=False)
    if by_sample is not None and np.isfinite(by_sample.values).all():
        # a mean over values with a nan or inf among them is not finite, so every
        # local value is: the estimate follows from one pass over them
        importance = by_sample.mean(repeats)
        nonfinite = xr.zeros_like(importance, dtype=int)
    else:
        nonfinite = ~np.isfinite(da)
        da = da.where(~nonfinite)
        by_sample = da.mean(points, skipna=skipna)
        importance = da.mean(points + repeats, skipna=skipna)
        nonfinite = nonfinite.sum(points + repeats)
    estimate = xr.Dataset({"importance": importance, "nonfinite": nonfinite}, attrs=attrs)
    if "chain" in da.dims:
        samples = by_sample.stack(sample=SAMPLE_DIMS)
    elif "repeat" in da.dims:
        samples = by_sample.rename(repeat="sample")
    elif points:
        stacked = da.stack(point=points) if len(points) > 1 else da.rename({points[0]: "point"})
        weights = bootstrap_weights(rng, n_bootstrap, stacked)
        if skipna:  # the weights of the finite values only
            present = stacked.notnull().astype(float)
            samples = xr.dot(weights, stacked.fillna(0.0), dim="point") / xr.dot(
                weights, present, dim="point"
            )
        else:
            samples = xr.dot(weights, stacked, dim="point") / weights.sum("point")
    else:
        samples = da.expand_dims(sample=1)
    return estimate, samples.transpose("sample", "feature")


def per_sd(name, da):
    """A per-unit measure times the sd of each continuous input over the points.

    The sds are the result's ``input_sd`` coordinate. Categorical inputs (a
    level change) and constant columns keep their values.
    """
    if name not in PER_UNIT + PER_UNIT_PAIR:
        return da
    if "input_sd" not in da.coords:
        raise ValueError(f"scale='sd' needs the inputs' sds, which {name!r} does not carry")
    sd = da.coords["input_sd"]
    if "feature_kind" in da.coords:
        sd = sd.where(da.coords["feature_kind"] == "rate", 1.0)
    sd = sd.drop_vars([c for c in sd.coords if c != "feature"])
    if name in PER_UNIT_PAIR:
        return da * sd * sd.rename(feature="feature_bis")
    return da * sd


def ci_bounds(da, ci_prob, ci_kind, dims):
    """Lower and upper interval bounds over ``dims`` (ETI or HDI)."""
    bounds = (hdi if ci_kind == "hdi" else eti)(da, prob=ci_prob, dim=list(dims))
    return bounds.sel(ci_bound="lower", drop=True), bounds.sel(ci_bound="upper", drop=True)


def feature_variables(dataset, var_names, curves=False):
    """The variables to summarize: per-feature values, or curves over a grid."""
    names = [
        n
        for n in dataset.data_vars
        if "feature" in dataset[n].dims and ("grid" in dataset[n].dims) == curves
    ]
    if var_names is None:
        return names
    wanted = as_name_list("var_names", var_names)
    unknown = [v for v in wanted if v not in names]
    if unknown:
        raise ValueError(f"var_names={unknown} not in the group; valid: {names}")
    return wanted


def skips_degenerate(dataset, name):
    """Whether ``dataset[name]``'s non-finite local values all lie at degenerate points.

    Such points (the result's ``degenerate``: a predictive that is one value)
    have no divergence rate: means and intervals are over the other points
    (`tell_degenerate` says so). Other non-finite values are not skipped (see
    `global_samples`).
    """
    if "degenerate" not in dataset or not point_dims(dataset["degenerate"]):
        return False
    da, degenerate = dataset[name], dataset["degenerate"].astype(bool)
    if not set(point_dims(degenerate)) <= set(da.dims):  # a wide table's row joints
        return False
    # a feature with no value at any point (a categorical input's R-sens2 diagonal)
    # is documented and listed unranked either way
    valueless = da.isnull().all(point_dims(da))
    return not bool(((~np.isfinite(da)) & ~degenerate & ~valueless).any())


def tell_degenerate(dataset, names):
    """Say how many points were left out of ``names``' means as degenerate."""
    if not names:
        return
    degenerate = dataset["degenerate"].astype(bool)
    points = point_dims(degenerate)
    count = int(degenerate.sum(points).max())
    total = int(np.prod([degenerate.sizes[d] for d in points]))
    share = f"{count} of {total} points"
    share = f"up to {share} per draw" if "draw" in degenerate.dims else share
    inform(
        f"{share} have a predictive that is one value (a count law of mean 0, e.g. an "
        f"exposure of 0), where {', '.join(names)} have no value: left out of the means and "
        "intervals (the result's 'degenerate' variable marks them)"
    )

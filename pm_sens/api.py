"""`sensitivity`: R-sens and R-sens2 of a fitted PyMC model, into its DataTree."""

import weakref

import numpy as np
import xarray as xr

from pm_sens import families
from pm_sens._points import resolve_inputs, resolve_points
from pm_sens._posterior import posterior_draws
from pm_sens._progress import progress_bar
from pm_sens._validate import (
    as_name_list,
    check_bool,
    check_choice,
    check_optional_positive_int,
    check_positive,
)
from pm_sens._version import __version__
from pm_sens.graph.engine import compile_predictive, required_free_rvs
from pm_sens.graph.generic_fisher import GenericFisher
from pm_sens.graph.predictive import Predictive
from pm_sens.measures.mixture import MixtureMoments
from pm_sens.measures.rsens import rsens2_local, rsens_local

METHODS = ("rsens",)
MODES = ("moment", "draw")
#: Working memory per chunk of draws, in bytes, unless ``memory_limit`` says otherwise.
DEFAULT_MEMORY_LIMIT = 1e9

_PREDICTIVES = weakref.WeakKeyDictionary()


def _predictive_for(model, var_name):
    """`Predictive.from_observed`, reused across calls so compiled graphs are too."""
    per_model = _PREDICTIVES.setdefault(model, {})
    if var_name not in per_model:
        per_model[var_name] = Predictive.from_observed(model, var_name)
    return per_model[var_name]


def _matched_family(predictive, mode, family):
    likelihood = predictive.likelihood
    if mode == "draw":
        if family is not None:
            raise ValueError(
                f"family={family!r} is not valid with mode='draw': the per-draw family is "
                f"the likelihood's ({likelihood.name}); family= overrides the moment-matched one"
            )
        return None
    if likelihood.moments is None:
        raise ValueError(
            f"mode='moment' needs the mean and variance of the {likelihood.name!r} "
            "likelihood, which pm_sens does not know; use mode='draw' (generic Fisher "
            "information) or describe the predictive with pm_sens.Predictive"
        )
    name = family or families.DEFAULT_MOMENT_FAMILY[likelihood.support]
    matched = families.get_moment_family(name)
    if matched.support != likelihood.support:
        valid = sorted(
            n for n, f in families.MOMENT_FAMILIES.items() if f.support == likelihood.support
        )
        raise ValueError(
            f"family={name!r} does not fit the {likelihood.name} likelihood, whose values "
            f"are {likelihood.support}; valid: {valid}"
        )
    return matched


def _check_methods(method, interactions):
    methods = as_name_list("method", method)
    for m in methods:
        check_choice("method", m, METHODS)
    return methods


def _bytes_per_draw(n_points, n_features, n_components, mode, order):
    """Rough working memory of one draw: parameters, derivatives and temporaries."""
    per_point = (n_components + 1) * (n_features + 4) * (1 + (order - 1) * n_features)
    return 8 * n_points * per_point * (4 if mode == "draw" else 2)


def _compiled(predictive, model, inputs, points, draws, mode, order, uses_variance):
    key = (
        mode,
        order,
        uses_variance,
        tuple(v.name for v in inputs),
        tuple((v.name, np.shape(points.values[v])[1:]) for v in points.values),
        tuple(np.shape(v)[1:] for v in draws.values),
    )
    if key not in predictive.compiled:
        predictive.compiled[key] = compile_predictive(
            predictive,
            model,
            inputs,
            points.values,
            draws.values,
            mode=mode,
            order=order,
            uses_variance=uses_variance,
        )
    return predictive.compiled[key]


def _data_for_chunk(compiled, points, n_draws):
    """Data arrays in the compiled order; differentiated inputs get a draw axis in draw mode."""
    out = []
    for var in compiled.data_variables:
        value = points.values[var]
        if compiled.mode == "draw" and var in compiled.inputs:
            value = np.broadcast_to(value, (n_draws, *np.shape(value)))
        out.append(value)
    return out


def _check_locality(compiled, points, draws):
    """Perturb one row of the inputs; no other point's parameters may move."""
    n = points.n_points
    if n < 2:
        return
    first = [v[:1] for v in draws.values]
    base = compiled(_data_for_chunk(compiled, points, 1), first)["phi"]
    for row in sorted({0, n // 2}):
        data = []
        for var, value in zip(
            compiled.data_variables, _data_for_chunk(compiled, points, 1), strict=True
        ):
            if var in compiled.inputs:
                value = np.array(value, dtype=float)
                index = (
                    (Ellipsis, row)
                    if np.ndim(points.values[var]) == 1
                    else (Ellipsis, row, slice(None))
                )
                value[index] += 1e-3 * (np.abs(value[index]) + 1)
            data.append(value)
        moved = compiled(data, first)["phi"]
        others = np.arange(n) != row
        if not np.allclose(moved[..., others, :], base[..., others, :], rtol=1e-9, atol=1e-12):
            names = [v.name for v in compiled.inputs]
            raise ValueError(
                f"the predictions at one point depend on the inputs {names} of other points "
                f"(changing row {row} moved the parameters at other rows), so per-point "
                "derivatives are not defined. Common causes: inputs standardized or centred "
                "inside the model (do it outside, on the data), or a model coupling rows such "
                "as a GP over the inputs (use a GP predictive, pm_sens.Predictive)."
            )


def _check_matched(phi, family):
    if family.uses_variance and not np.all(np.isfinite(phi[..., 1]) & (phi[..., 1] > 0)):
        raise ValueError(
            "the predictive variance is not finite and positive at some points, so the "
            "moment-matched family is undefined (a Student-t likelihood with nu <= 2?); "
            "use mode='draw'"
        )


def _moment_mode(compiled, points, draws, family, alpha, order, chunk, advance):
    moments = MixtureMoments(family.uses_variance)
    fixed = {}
    for start in range(0, draws.count, chunk):
        values = [v[start : start + chunk] for v in draws.values]
        out = compiled(_data_for_chunk(compiled, points, len(values[0])), values)
        moments.add(len(values[0]), out["phi"], out["jac"], out.get("hess"))
        fixed = {k: v[0] if np.ndim(v) > 1 else v for k, v in out["fixed"].items()}
        advance(len(values[0]))
    _check_matched(moments.phi, family)
    info = family.fisher_information(moments.phi, **fixed)
    result = {"rsens": rsens_local(moments.jac, info, alpha)}
    if order == 2:
        result["rsens2"] = rsens2_local(moments.hess, info, alpha)
    return result


def _draw_information(predictive):
    """The per-draw Fisher information function and how exact it is."""
    family = predictive.likelihood.draw_family
    if family is None:
        generic = GenericFisher(predictive.likelihood.op)
        return generic, f"approximate: {generic.method}"
    return family.fisher_information, "exact"


def _draw_mode(compiled, points, draws, fisher, alpha, order, chunk, advance):
    n, d = points.n_points, len(points.features)
    result = {"rsens": np.empty((draws.count, n, d))}
    if order == 2:
        result["rsens2"] = np.empty((draws.count, n, d, d))
    varying = compiled.varying
    for start in range(0, draws.count, chunk):
        values = [v[start : start + chunk] for v in draws.values]
        size = len(values[0])
        out = compiled(_data_for_chunk(compiled, points, size), values)
        phi = np.broadcast_to(out["phi"], (size, *out["phi"].shape[-2:]))
        fixed = {k: np.broadcast_to(v, phi.shape[:-1]) for k, v in out["fixed"].items()}
        info = fisher(phi, **fixed)[..., varying, :][..., :, varying]
        result["rsens"][start : start + size] = rsens_local(out["jac"], info, alpha)
        if order == 2:
            result["rsens2"][start : start + size] = rsens2_local(out["hess"], info, alpha)
        advance(size)
    shape = (len(draws.chain), len(draws.draw))
    return {k: v.reshape(*shape, *v.shape[1:]) for k, v in result.items()}


def _result_dataset(result, points, draws, mode, attrs):
    dims = ([] if mode == "moment" else ["chain", "draw"]) + [points.point_dim, "feature"]
    coords = {points.point_dim: points.point_coords, "feature": points.features}
    if mode == "draw":
        coords.update(chain=draws.chain, draw=draws.draw)
    data = {"rsens": (dims, result["rsens"])}
    if "rsens2" in result:
        coords["feature_bis"] = points.features
        data["rsens2"] = ([*dims, "feature_bis"], result["rsens2"])
    return xr.Dataset(data, coords=coords, attrs=attrs)


def sensitivity(
    idata,
    model,
    *,
    var_name=None,
    inputs=None,
    points=None,
    predictive=None,
    method="rsens",
    mode="moment",
    alpha=1.0,
    interactions=False,
    family=None,
    num_draws=None,
    random_seed=None,
    progressbar=True,
    extend_inferencedata=True,
    memory_limit=DEFAULT_MEMORY_LIMIT,
):
    """Local sensitivity of the posterior predictive to each input (R-sens, R-sens2).

    R-sens measures how fast the predictive distribution at a point changes
    (in Rényi divergence of order ``alpha``) as one input moves:
    ``sqrt(alpha · Jᵀ I J)`` with ``J`` the derivative of the family's
    mean–variance parameters and ``I`` their Fisher information. Global
    importance is its mean over points (see :func:`pm_sens.summary`).

    Parameters
    ----------
    idata : xarray.DataTree
        Holds the ``posterior`` group of ``model``, as returned by ``pm.sample``.
    model : pymc.Model
        The fitted model. It is not modified.
    var_name : str, optional
        Observed variable to explain; default: the model's only observed variable.
    inputs : str or list of str, optional
        ``pm.Data`` containers to differentiate; default: every float container
        with one row per observation that the observed variable depends on.
        Integer containers (group indices, flags) are held at their values.
    points : dict or xarray.Dataset, optional
        Where to evaluate, as ``{container_name: array}`` (rows = points);
        containers not given keep their current values. Default: the observed rows.
    predictive : pm_sens.Predictive, optional
        Describes the per-draw predictive; default
        ``Predictive.from_observed(model, var_name)``.
    method : str or list of str
        ``"rsens"``.
    mode : {"moment", "draw"}
        ``"moment"``: the posterior predictive mixture, matched by moments to one
        family (SPEC §2). ``"draw"``: the likelihood of each posterior draw,
        giving the posterior distribution of the sensitivities.
    alpha : float
        Rényi order, > 0; the measures scale as ``sqrt(alpha)`` (1: KL).
    interactions : bool
        Also compute R-sens2 for all feature pairs.
    family : str, optional
        Override the moment-matched family (e.g. ``"poisson"`` for a Poisson
        likelihood instead of the negative binomial); must fit the likelihood's support.
    num_draws : int, optional
        Use about this many posterior draws (``num_draws // n_chains`` per chain,
        the same draw positions in every chain), chosen with ``random_seed``.
    random_seed : int or numpy.random.Generator, optional
        Seed for thinning.
    progressbar : bool
        Show a progress bar over the draws.
    extend_inferencedata : bool
        True: add the group ``sensitivity`` to ``idata`` (replacing an existing
        one) and return ``idata``. False: return a new DataTree holding only it.
    memory_limit : float
        Bytes of working memory per chunk of draws (default 1e9).

    Returns
    -------
    xarray.DataTree
        Group ``sensitivity`` with

        - ``rsens``: dims ``(point_dim, "feature")`` in moment mode,
          ``("chain", "draw", point_dim, "feature")`` in draw mode;
        - ``rsens2`` (``interactions=True``): the same plus ``"feature_bis"``;
          symmetric, its diagonal is the curvature of each feature.

        ``point_dim`` is the row dimension of the inputs (``"point"`` if unnamed).
        Attrs record method, mode, alpha, family, likelihood, var_name, fisher
        (``"exact"`` or ``"approximate"``) and ``pm_sens_version``.

    Examples
    --------
    >>> import pm_sens
    >>> idata = pm_sens.sensitivity(idata, model)  # doctest: +SKIP
    >>> pm_sens.summary(idata)  # doctest: +SKIP
    """
    methods = _check_methods(method, interactions)
    check_choice("mode", mode, MODES)
    alpha = check_positive("alpha", alpha)
    order = 2 if check_bool("interactions", interactions) else 1
    progressbar = check_bool("progressbar", progressbar)
    extend_inferencedata = check_bool("extend_inferencedata", extend_inferencedata)
    num_draws = check_optional_positive_int("num_draws", num_draws)
    memory_limit = check_positive("memory_limit", memory_limit)
    if predictive is None:
        predictive = _predictive_for(model, var_name)
    elif not isinstance(predictive, Predictive):
        raise TypeError(
            f"predictive={type(predictive).__name__} is not valid; "
            "give a pm_sens.Predictive or None"
        )
    matched = _matched_family(predictive, mode, family)
    diff_inputs, variables, n_default = resolve_inputs(predictive, model, inputs)
    pts = resolve_points(model, predictive, diff_inputs, variables, n_default, points)
    draws = posterior_draws(
        idata, model, required_free_rvs(predictive, model), num_draws, random_seed
    )
    uses_variance = matched is not None and matched.uses_variance
    compiled = _compiled(predictive, model, diff_inputs, pts, draws, mode, order, uses_variance)
    _check_locality(compiled, pts, draws)

    per_draw = _bytes_per_draw(pts.n_points, len(pts.features), 2, mode, order)
    chunk = int(max(1, min(draws.count, memory_limit // per_draw)))
    with progress_bar(f"R-sens ({mode})", draws.count, progressbar) as advance:
        if mode == "moment":
            result = _moment_mode(compiled, pts, draws, matched, alpha, order, chunk, advance)
            fisher_note = "exact"
        else:
            fisher, fisher_note = _draw_information(predictive)
            result = _draw_mode(compiled, pts, draws, fisher, alpha, order, chunk, advance)

    attrs = {
        "method": methods + (["rsens2"] if order == 2 else []),
        "mode": mode,
        "alpha": alpha,
        "family": matched.name if matched is not None else predictive.family,
        "likelihood": predictive.family,
        "var_name": predictive.var_name or "",
        "parametrization": "mean-variance",
        "fisher": fisher_note,
        "num_draws": draws.count,
        "pm_sens_version": __version__,
    }
    dataset = _result_dataset(result, pts, draws, mode, attrs)
    if not extend_inferencedata:
        return xr.DataTree.from_dict({"sensitivity": dataset})
    idata["sensitivity"] = xr.DataTree(dataset)
    return idata

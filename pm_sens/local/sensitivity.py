"""`sensitivity`: local sensitivity measures of a fitted PyMC model, into its DataTree."""

import warnings

import numpy as np

from pm_sens._core.arguments import (
    check_bool,
    check_choice,
    check_optional_positive_int,
    check_positive,
    inform,
    warn,
)
from pm_sens._core.categorical_inputs import levels_for_alpha
from pm_sens._core.context import make_context
from pm_sens._core.request import DEFAULT_MEMORY_LIMIT, Request
from pm_sens._core.results import attach, feature_kinds, result_attrs, result_dataset
from pm_sens._run.compiling import dependence_of
from pm_sens.graph.model.queries import solves_a_linear_system
from pm_sens.local.methods import (
    DERIVATIVE_METHODS,
    check_differentiable,
    check_methods,
    check_methods_fit,
    check_methods_joint,
    matched_family,
    resolve_step_defaults,
    stepped_inputs,
)
from pm_sens.local.passes import AVERAGED_FIRST, local_bytes, local_results, point_means
from pm_sens.measures.kl import SCHEMES

MODES = ("moment", "draw")


def sensitivity(
    idata,
    model,
    *,
    var_name=None,
    inputs=None,
    categorical=None,
    points=None,
    predictive=None,
    method=None,
    mode="moment",
    alpha=1.0,
    interactions=False,
    family=None,
    delta=None,
    kl_scheme=None,
    var_nodes=11,
    num_draws=None,
    random_seed=None,
    local=None,
    progressbar=True,
    extend_inferencedata=True,
    memory_limit=DEFAULT_MEMORY_LIMIT,
    cores=None,
    backend=None,
    dtype=None,
):
    """Local sensitivity of the posterior predictive to each input.

    R-sens measures how fast the predictive distribution at a point changes
    (in Rényi divergence of order ``alpha``) as one input moves:
    ``sqrt(alpha · Jᵀ I J)`` with ``J`` the derivative of the family's
    mean–variance parameters and ``I`` their Fisher information. Global
    importance is its mean over points (see :func:`pm_sens.summary`). The other
    methods cross-check it (``"kl"``) or leave the uncertainty out (``"var"``,
    ``"ead"``, ``"aed"``).

    Parameters
    ----------
    idata : xarray.DataTree
        Holds the ``posterior`` group of ``model``, as returned by ``pm.sample``.
    model : pymc.Model or bambi.Model
        The fitted model (a built bambi model is rebuilt on its data columns;
        see :doc:`/how_to/bambi`). It is not modified.
    var_name : str, optional
        Observed variable to explain; default: the model's only observed variable.
    inputs : str or list of str, optional
        ``pm.Data`` containers to explain; default: every container with one
        row per observation that the observed variable depends on. Float
        containers are differentiated (a rate per unit of the input). Integer
        containers (group indices, treatment arms, flags) are categorical: each
        point's predictive at its own level is compared with the predictive at
        every other level (``sqrt(2 KL)``; see Returns). Their valid levels are
        ``0 .. n − 1`` for an index into a variable of length n, else the values
        the container holds.
    categorical : dict, optional
        Feature columns that together are one categorical input, as
        ``{name: [feature labels]}``, e.g. the one-hot columns of a design
        matrix, ``{"species": ["X[b]", "X[c]"]}``. Its levels are the distinct
        rows those columns take in the model's data; it gets level sensitivity
        under ``name`` in place of a rate per column.
    points : dict or xarray.Dataset, optional
        Where to evaluate, as ``{container_name: array}`` (rows = points);
        containers not given keep their current values. Default: the observed rows.
        Dask-backed points (e.g. ``ds.chunk({"obs": 10_000})``) give dask-backed
        local results, computed block by block (see :doc:`/how_to/large_data`).
    predictive : pm_sens.Predictive, optional
        Describes the per-draw predictive; default
        ``Predictive.from_observed(model, var_name)``.
    method : str or list of str, optional
        Any of ``"rsens"`` (R-sens), ``"kl"`` (finite-difference KL, 2019 eq. 2),
        ``"var"`` (variance of the predictive mean along each input's Gaussian
        conditional, 2019 eq. 3–5), ``"ead"`` / ``"aed"`` (expected absolute /
        absolute expected derivative of the predictive mean) and, with
        ``interactions=True``, ``"eah"`` / ``"aeh"`` (their cross-derivative
        versions). A list computes several in one call. Default ``"rsens"``;
        ``"kl"`` when the predictions depend on some input only through steps
        (the trees of a BART variable, ``floor``, a comparison): there the
        derivative-based methods are refused, as the derivatives are zero
        almost everywhere (:doc:`/how_to/bart`).
    mode : {"moment", "draw"}
        ``"moment"``: the posterior predictive mixture, matched by moments to one
        family (:doc:`/explanation/modes`); the mean-based methods
        use the mixture mean.
        ``"draw"``: the likelihood of each posterior draw, giving the posterior
        distribution of each measure.
    alpha : float
        Rényi order, > 0; R-sens scales as ``sqrt(alpha)`` (1: KL).
    interactions : bool
        Also compute the second-order measures: R-sens2 with ``"rsens"``, EAH
        with ``"ead"``, AEH with ``"aed"``. (The interaction paper's KL-diff²
        is √2 × R-sens2 with ``alpha=1``: its definition keeps a factor 2 in
        the square root.)
    family : str, optional
        Override the moment-matched family (e.g. ``"poisson"`` for a Poisson
        likelihood instead of the negative binomial); must fit the likelihood's support.
    delta : float, optional
        ``"kl"`` step, relative to each input's standard deviation over the points,
        in (0, 1]. Default 1e-4; 0.1 when some input acts through steps
        (the KL then measures the change over a finite step, not a rate at a
        point).
        Agreement with R-sens is best for 1e-6 ≲ delta ≲ 1e-3; the forward
        scheme's error depends on the model's curvature (up to ~3e-3 on a GP
        at the default), so prefer ``kl_scheme="central"`` for cross-checks
        (see :doc:`/explanation/measures`).
    kl_scheme : {"forward", "central"}, optional
        ``"kl"`` differences: forward (the paper's, error O(delta)) or central
        (error O(delta²), twice the evaluations). Default forward; central
        when some input acts through steps.
    var_nodes : int
        Gauss–Hermite nodes for ``"var"``.
    num_draws : int, optional
        Use about this many posterior draws (``num_draws // n_chains`` per chain,
        the same draw positions in every chain), chosen with ``random_seed``.
    random_seed : int or numpy.random.Generator, optional
        Seed for thinning.
    local : bool, optional
        Draw mode: keep the local values (True), or only each draw's mean
        over the points (False), computed block of points by block of points
        so that memory does not grow with N: ``(chain, draw, "feature"[,
        "feature_bis"])`` per method and ``(chain, draw, "g_level")`` per
        ``levels_g``, which :func:`summary`, :func:`importance` and
        :func:`plot_importance` read. None (default): True unless the local
        values would take more than 1 GB (an info message says so; the
        result's attr ``local_values`` says which). ``memory_limit`` never
        changes this. ``"aed"``/``"aeh"`` need True.
    progressbar : bool
        Show progress bars over the draws; nothing is printed when False.
    extend_inferencedata : bool
        True: add the group ``sensitivity`` to ``idata`` (replacing an existing
        one) and return ``idata``. False: return a new DataTree holding only it.
    memory_limit : float
        Bytes of working memory for the chunks of draws in memory at once
        (default 1e9); more lets more cores work on large chunks.
    cores : int, optional
        CPU cores to use; None (default): :func:`set_options`'s, every core
        unless set there. The results are the same for any number.
    backend : {"cpu", "jax", "gpu"}, optional
        Where the compiled graphs run; None (default): :func:`set_options`'s,
        ``"cpu"`` unless set there. The results are the same to rounding.
    dtype : {"float64", "float32"}, optional
        What the compiled graphs compute in; None (default):
        :func:`set_options`'s, ``"float64"`` unless set there. ``"float32"``
        on the JAX backends only (see :func:`set_options`).

    Returns
    -------
    xarray.DataTree
        Group ``sensitivity``; with ``S = ("chain", "draw")`` in draw mode and
        nothing in moment mode, and ``point_dim`` the inputs' row dimension
        (``"point"`` if unnamed):

        - ``rsens``, ``kl``, ``var``, ``ead``: ``(*S, point_dim, "feature")``;
        - ``rsens2``, ``eah``: ``(*S, point_dim, "feature", "feature_bis")``,
          symmetric, the diagonal being each input's curvature; ``rsens2``'s
          attr ``interactions_from`` says which predictive its pairs describe
          (moment mode's also hold those the posterior correlation of the
          parameters makes; see :doc:`/explanation/reading`);
        - ``aed``: ``(*S, "feature")`` and ``aeh``: ``(*S, "feature",
          "feature_bis")`` — they average the derivative over the points
          before taking its absolute value, so they have no point dimension;
        - for each categorical input ``g``: ``levels_g``: ``(*S, point_dim,
          "g_level")``, the divergence ``sqrt(2 KL(p(·|x) ‖ p(·|x, g = l)))``
          from each point's predictive to the same point at level ``l`` (0 at
          its own level), for the levels present among the points.

        The coordinate ``feature_kind`` says what each feature's values are:
        ``"rate"`` (per unit of a continuous input), ``"level"`` (a categorical
        input: its ``rsens`` and ``kl`` values are the mean of ``levels_g`` over
        the other levels, weighted by the levels' frequency among the points, so
        common levels count more; methods with no level version give NaN) or
        ``"constant"`` (a column that is the same in every row of the data and the points, such
        as a design matrix's intercept column: NaN, as no variation between
        points can come from it).

        Local values are dask arrays when the points, or in draw mode the
        posterior, are dask-backed. Attrs record the methods, mode, alpha,
        family, likelihood, var_name, steps (the inputs that act only through
        steps, and which: the trees of a BART variable, floor, ...; empty if none),
        fisher (``"closed form"``, or the summation or quadrature route of a
        likelihood without one, with ``rule_mass_error``: the largest
        ``|Σ weights − 1|`` of the rules this model's likelihood has used in the
        process, i.e. how well they integrate its density), delta, kl_scheme,
        var_nodes and ``pm_sens_version``.

    Examples
    --------
    With the quickstart's ``model`` (``examples/quickstart.py``) and its ``idata``:

    >>> import pm_sens
    >>> idata = pm_sens.sensitivity(idata, model, interactions=True)
    >>> idata["sensitivity"]["rsens"].dims
    ('obs_id', 'feature')
    >>> table = pm_sens.summary(idata)  # the inputs and pairs ranked

    Per posterior draw, keeping only each draw's mean over the points, with the
    finite-difference KL as a cross-check:

    >>> idata = pm_sens.sensitivity(
    ...     idata, model, mode="draw", method=["rsens", "kl"], local=False
    ... )
    >>> idata["sensitivity"]["kl"].dims
    ('chain', 'draw', 'feature')
    """
    order = 2 if check_bool("interactions", interactions) else 1
    if method is not None:
        check_methods(method, order == 2)
    check_choice("mode", mode, MODES)
    alpha = check_positive("alpha", alpha)
    if delta is not None:
        _check_delta(delta)
    if kl_scheme is not None:
        check_choice("kl_scheme", kl_scheme, SCHEMES)
    var_nodes = check_optional_positive_int("var_nodes", var_nodes) or 11
    request = Request.of(locals())
    ctx = make_context(request, levels=True, categorical=categorical)
    if order > 1 and ctx.backend != "cpu":
        _check_jax_interactions(ctx)
    stepped = stepped_inputs(ctx)
    method, delta, kl_scheme = resolve_step_defaults(method, delta, kl_scheme, stepped)
    delta = _check_delta(delta)
    methods = check_methods(method, order == 2)
    if "kl" in methods and ctx.dtype == "float32":
        _say_kl_rounding(delta)
    derivative = [m for m in methods if m in DERIVATIVE_METHODS]
    asked = ([f"method={derivative}"] if derivative else []) + ["interactions=True"] * (order > 1)
    check_differentiable(" and ".join(asked), stepped)
    check_methods_fit(methods, ctx.predictive.likelihood)
    matched = matched_family(ctx.predictive, mode, family)
    chosen = inputs is not None or categorical is not None
    ctx = levels_for_alpha(ctx, alpha, chosen, matched)
    # the first evaluation (a forward graph), after every check that costs nothing
    check_methods_joint(methods, dependence_of(ctx), ctx)
    settings = dict(
        mode=mode,
        family=matched,
        alpha=alpha,
        order=order,
        delta=delta,
        kl_scheme=kl_scheme,
        var_nodes=var_nodes,
    )
    local = _keep_local(local, ctx, methods, mode, order)
    # one look at the points (a pass over them when they are dask-backed)
    kinds = feature_kinds(ctx)
    compute = local_results if local else point_means
    results, levels = compute(ctx, methods, kinds, **settings)
    attrs = {
        "method": methods,
        "mode": mode,
        "alpha": alpha,
        "family": matched.name,
        "parametrization": "mean-variance",
        # the moment-matched families all have closed forms
        "fisher": "closed form" if mode == "moment" else ctx.predictive.likelihood.route,
        "delta": delta,
        "kl_scheme": kl_scheme,
        "var_nodes": var_nodes,
        "local_values": "kept" if local else "mean over points",
        # inputs the predictions see only through steps: why the default is the KL
        "steps": "; ".join(f"{x}: {', '.join(names)}" for x, names in stepped.items()),
        **result_attrs(ctx),
        **_rule_attrs(ctx.predictive.likelihood.generic),
    }
    return attach(
        idata,
        "sensitivity",
        result_dataset(results, ctx, mode, attrs, kinds, levels, local),
        extend_inferencedata,
    )


#: draw-mode local values larger than this (bytes) are reduced to each draw's mean
#: over the points unless ``local=True``: (chain, draw, point, feature) arrays past
#: it crowd a laptop's memory, while the means are what the rankings read
LOCAL_VALUES_LIMIT = 1e9


def _check_delta(delta):
    delta = check_positive("delta", delta)
    if delta > 1:
        raise ValueError(
            f"delta={delta!r} is not valid; it must be in (0, 1]: it is the finite-difference "
            "step in standard deviations of each input (best 1e-6 to 1e-3)"
        )
    return delta


def _keep_local(local, ctx, methods, mode, order):
    """Whether to keep the local values (``local=``), or only each draw's mean over points.

    None: keep them unless, in draw mode with in-memory points and draws, they
    would take more than `LOCAL_VALUES_LIMIT` (then say so). The result's own
    size decides, never ``memory_limit``: that sets the size of the chunks, and
    must not change what is returned.
    """
    if local is not None:
        local = check_bool("local", local)
    if local is False and mode != "draw":
        raise ValueError(
            "local=False needs mode='draw': moment mode's interval is a Bayesian bootstrap "
            "over the points' local values, so it keeps them (they are N × D numbers)"
        )
    averaged = [m for m in methods if m in AVERAGED_FIRST]
    if local is False and averaged:
        raise ValueError(
            f"local=False cannot give method={averaged}: they average the derivative over "
            "all the points before its absolute value, so they are not means of local "
            "values; ask for them with local=True (or None)"
        )
    # dask-backed points or draws stream their local values already
    streamed = ctx.points.lazy or ctx.draws.lazy
    if local is not None or mode != "draw" or averaged or streamed:
        return True if local is None else local
    size = local_bytes(ctx, methods, order)
    if size <= LOCAL_VALUES_LIMIT:
        return True
    inform(
        f"the local values would take {size / 1e9:.3g} GB, more than the "
        f"{LOCAL_VALUES_LIMIT / 1e9:.3g} GB pm_sens keeps by default: keeping each draw's "
        "mean over the points only (local=False; what summary, importance and "
        "plot_importance read). Pass local=True to keep them, or dask-backed points to "
        "stream them"
    )
    return False


def _rule_attrs(generic):
    """How well a likelihood without closed forms was integrated, with a warning if poorly."""
    if generic is None:
        return {}
    if generic.mass_error > 1e-6:
        warn(
            f"the quadrature of the {generic.name!r} likelihood integrates its density to "
            f"1 only within {generic.mass_error:.2g}, so its results may be as inaccurate "
            "(a density that jumps inside its support, e.g. a pm.CustomDist on a bounded "
            "support with no default transform)",
        )
    return {"rule_mass_error": generic.mass_error}


def _say_kl_rounding(delta):
    """Warn that the finite-difference KL in float32 carries its step's rounding.

    The KL of a step δ is a difference of the parameters at x and x + δ·sd,
    each rounded to float32 (its epsilon, 1.2e-7): relative errors of about
    1.2e-7/δ (measured: 2e-3 at the default 1e-4 on a heteroscedastic Normal).
    """
    warnings.warn(
        f"method='kl' with dtype='float32': the KL of a step delta={delta:g} is a "
        f"difference of parameters rounded to float32, accurate to about "
        f"{np.finfo(np.float32).eps / delta:.0e} of its value. Use dtype='float64' "
        "for the KL (R-sens, its limit, keeps float32's precision)",
        UserWarning,
        stacklevel=3,
    )


def _check_jax_interactions(ctx):
    """Interactions on the JAX backend: refused where the predictive solves a linear system.

    At a GP's training inputs (where the conditional variance has no slope,
    only curvature) PyTensor's JAX graph of its second derivatives is wrong:
    against the closed form of a marginal GP's conditional, R-sens2 there is
    off by up to 5.4× on JAX and right to 1e-12 on the CPU backend (at new
    points both are right), so the CPU backend computes them.
    """
    if solves_a_linear_system(ctx.predictive.parameter_list):
        raise ValueError(
            f"interactions=True with backend={ctx.backend!r} is not supported for a "
            "predictive that solves a linear system (a GP's conditional): PyTensor's JAX "
            "graph of its second derivatives is wrong at the GP's training inputs (the "
            "CPU backend's are checked against the closed form). Use backend='cpu' for "
            "the interactions "
            "(first-order R-sens, KL, permutation importance, PDP and IG run on JAX)"
        )

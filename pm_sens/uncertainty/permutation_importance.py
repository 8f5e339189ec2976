"""`permutation_importance`: entropy and likelihood permutation feature importance.

After Wood et al., "Model-agnostic variable importance for predictive
uncertainty: an entropy-based approach".
"""

import numpy as np
import xarray as xr

from pm_sens._core.arguments import as_name_list, check_choice, check_optional_positive_int
from pm_sens._core.points import feature_matrix
from pm_sens._core.request import DEFAULT_MEMORY_LIMIT, Request
from pm_sens._core.results import attach, result_attrs
from pm_sens._core.table_rows import row_indicator, table_rows
from pm_sens._run.compiling import dependence_of
from pm_sens.measures.entropy import COMPONENTS
from pm_sens.measures.permutation import importance, permutations, permuted_features
from pm_sens.uncertainty.passes import (
    check_entropy,
    feature_groups,
    in_passes,
    observed_values,
    stacked_copies,
    uncertainty_context,
    uncertainty_rows,
)

PFI_KINDS = ("entropy", "likelihood")


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
    block_size=None,
    random_seed=None,
    predictive=None,
    num_draws=None,
    progressbar=True,
    extend_inferencedata=True,
    memory_limit=DEFAULT_MEMORY_LIMIT,
    cores=None,
    backend=None,
    dtype=None,
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

    All permuted copies are evaluated in one pass over the draws; rows that
    repeat another (the permutations of a model's only input are its points
    again, so its entropy PFI is exactly 0) are evaluated once.

    Parameters
    ----------
    idata : xarray.DataTree
        Holds the ``posterior`` (and, for the likelihood, ``observed_data``).
    model : pymc.Model or bambi.Model
        The fitted model (a built bambi model is rebuilt on its data columns;
        see :doc:`/how_to/bambi`). It is not modified.
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
    block_size : int, optional
        Permute blocks of this many consecutive points, each kept in its
        order (a block permutation of a series). Default: 1 (the points one by
        one), or, for a model whose rows depend on a window of other rows'
        inputs (lags, adstock), the window's width, so the permuted series
        keeps its course over that window (:doc:`/how_to/time_series`).
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
        Bytes of working memory for the chunks of draws in memory at once.
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
        Group ``permutation_importance`` with ``entropy_pfi`` (dims ``("repeat",
        "feature", "component")``, component ∈ total / aleatoric / epistemic)
        and ``likelihood_pfi`` (``("repeat", "feature")``), as requested. A
        wide table adds ``likelihood_pfi_row`` (``("repeat", "feature")``): the
        same for the log density of each table row's cells together.

    Examples
    --------
    With the quickstart's ``model`` (``examples/quickstart.py``) and its ``idata``:

    >>> import pm_sens
    >>> idata = pm_sens.permutation_importance(idata, model, n_repeats=3, random_seed=1)
    >>> idata["permutation_importance"]["entropy_pfi"].dims
    ('repeat', 'feature', 'component')
    >>> table = pm_sens.summary(idata, group="permutation_importance")
    """
    kinds = [check_choice("kind", k, PFI_KINDS) for k in as_name_list("kind", kind)]
    n_repeats = check_optional_positive_int("n_repeats", n_repeats) or 5
    block_size = check_optional_positive_int("block_size", block_size)
    request = Request.of(locals())
    ctx = uncertainty_context(request)
    check_entropy(idata, ctx, kinds)
    y = observed_values(idata, ctx, observed) if "likelihood" in kinds else None
    groups = feature_groups(features, ctx.points.features)
    x = feature_matrix(ctx.points.values, ctx.inputs)
    n = len(x)
    block_size = min(block_size or _default_block_size(dependence_of(ctx), n), n)
    rng = np.random.default_rng(random_seed)
    order = permutations(n, n_repeats, len(groups), rng, block_size)
    permuted = permuted_features(x, [cols for _, cols in groups], order)
    rows = np.concatenate([x, permuted.reshape(-1, x.shape[1])])
    table = table_rows(ctx) if y is not None else None  # a wide table: each row's cells

    def evaluate(ctx, values, copies):
        return uncertainty_rows(
            ctx,
            values,
            copies * n,
            "entropy" in kinds,
            None if y is None else stacked_copies(y, copies),
            by_row=None if table is None else row_indicator(table[0], len(table[1]), copies),
        )

    out = in_passes(ctx, rows, evaluate, "permutation importance")
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
    if "log_likelihood_row" in out:
        log_q, n_table = out["log_likelihood_row"], len(table[1])
        moved = log_q[n_table:].reshape(n_repeats, len(groups), n_table)
        data["likelihood_pfi_row"] = (("repeat", "feature"), -importance(log_q[:n_table], moved))
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
            "block_size": block_size,
            "random_seed": "none" if random_seed is None else str(random_seed),
            **result_attrs(ctx),
        },
    )
    if "entropy" not in kinds:
        dataset = dataset.drop_vars("component")
    return attach(request.idata, "permutation_importance", dataset, request.extend_inferencedata)


def _default_block_size(dependence, n_points):
    """The window one input row moves, for a series whose window is shorter than it; else 1."""
    return dependence.width if dependence.width < n_points else 1

"""Every public function on one zoo model, with the checks each result must pass.

``python -m tests.zoo.run [model ...]`` prints each model's outcomes: ok, the
expected error, or what went wrong; ``--table`` prints the zoo's table.
"""

import re
import sys
import time
import traceback
import zlib

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pm_sens
from pm_sens.graph.compile.rewrites import REWRITES, excluding
from tests.zoo._lazy import assert_same, lazy_posterior, model_points

QUIET = dict(progressbar=False)
#: the public functions, in the order they run (later ones read earlier results)
FUNCTIONS = (
    "sensitivity_moment",
    "sensitivity_draw",
    "dask_and_lazy",
    "without_rewrites",
    "summary",
    "importance",
    "permutation_importance",
    "partial_dependence",
    "integrated_gradients",
    "plots",
    "checks",
)


def _documented_nan(var):
    """Where ``var`` may be NaN, as its result documents: feature columns that its
    ``nan`` attr explains (by their feature_kind), and padded grid values."""
    allowed = xr.zeros_like(var, dtype=bool)
    if "grid_value" in var.coords:
        allowed = allowed | var["grid_value"].isnull()
    if var.attrs.get("nan") and "feature_kind" in var.coords:
        kinds = var["feature_kind"].values
        # R-sens2 has pairs with categorical inputs: only their diagonal is NaN
        undefined = kinds == "constant" if var.name == "rsens2" else kinds != "rate"
        allowed = allowed | xr.DataArray(undefined, dims="feature")
        if "feature_bis" in var.dims:
            allowed = allowed | xr.DataArray(undefined, dims="feature_bis")
            if var.name == "rsens2":
                level = xr.DataArray(np.diag(kinds == "level"), dims=("feature", "feature_bis"))
                allowed = allowed | level
    return np.broadcast_to(allowed.transpose(*var.dims).values, var.shape)


def _degenerate(dataset, var):
    """Where ``var`` is NaN at a point whose predictive is one value (``degenerate``)."""
    if "degenerate" not in dataset or not set(dataset["degenerate"].dims) <= set(var.dims):
        return np.zeros(var.shape, bool)
    mask = dataset["degenerate"].astype(bool).broadcast_like(var).transpose(*var.dims)
    return np.asarray(mask.values)


def _check_finite(dataset, where):
    """Every value finite, except the NaN the result documents (and at degenerate points)."""
    for name, var in dataset.data_vars.items():
        values = np.asarray(var.values)
        if values.dtype.kind not in "fc":
            continue
        bad = ~np.isfinite(values) & ~_documented_nan(var) & ~_degenerate(dataset, var)
        if bad.any():
            raise AssertionError(f"{where}: {name} has {int(bad.sum())} non-finite value(s)")


def _check_levels(out, expected, where):
    """Level sensitivity against ``sqrt(2 KL)`` computed independently (SciPy)."""
    for name, values in expected.items():
        got = out[f"levels_{name}"]
        assert np.all(np.isfinite(got.values)), f"{where}: levels_{name} is not finite"
        np.testing.assert_allclose(
            got.values.reshape(values.shape), values, rtol=1e-9, atol=1e-12, err_msg=where
        )


def _check_rsens_against_kl(out, where, rtol):
    """R-sens against the central finite-difference KL of the same call."""
    rsens, kl = out["rsens"].values, out["kl"].values
    # no rate at a point mass, nor for a column of one value (constant): both NaN there
    kept = ~_degenerate(out, out["kl"]) & ~_documented_nan(out["kl"])
    assert np.all(np.isnan(kl[~kept]) & np.isnan(rsens[~kept])), f"{where}: NaN differ"
    rsens, kl = rsens[kept], kl[kept]
    big = np.abs(rsens) > 1e-6 * np.max(np.abs(rsens), initial=0) + 1e-12
    assert np.all(np.isfinite(kl)), f"{where}: kl has non-finite values"
    relative = np.abs(kl[big] / rsens[big] - 1)
    worst = float(np.max(relative, initial=0))
    assert worst < rtol, f"{where}: R-sens and central KL differ by {worst:.2e} (relative)"


def _interactions_mode(case):
    """The mode whose calls take R-sens2 for ``case``: one per model, by its name (so
    each mode takes the interactions of half the zoo; their graphs compile longest),
    the other one where that mode is refused."""
    modes = ["moment", "draw"]
    if zlib.crc32(case.name.encode()) % 2:
        modes.reverse()
    return next((m for m in modes if f"sensitivity_{m}" not in case.errors), modes[0])


def _sensitivity_call(case, idata, mode, interactions=None, method=None, **kwargs):
    if interactions is None:
        interactions = mode == _interactions_mode(case)
    return pm_sens.sensitivity(
        idata,
        case.model,
        mode=mode,
        method=list(method or case.methods),
        kl_scheme="central",
        delta=case.kl_delta,
        interactions=interactions and "rsens" in case.methods,
        **QUIET,
        **case.kwargs,
        **kwargs,
    )


def _sensitivity(case, idata, mode):
    out = _sensitivity_call(case, idata, mode)
    local = out["sensitivity"].to_dataset()
    where = f"sensitivity({mode!r})"
    _check_finite(local, where)
    if "rsens" in case.methods:
        _check_rsens_against_kl(local, where, case.kl_rtol)
    expected = None if case.levels is None else case.levels(case, mode)
    if expected is not None:
        _check_levels(local, expected, where)
    return out


def _check_point_means(case, local):
    """local=False, by blocks of about a third of the points, and for the first method
    alone (R-sens: summed inside the graph): each draw's mean over the points."""
    first = case.methods[0]
    n_points = local[first].shape[2]
    per_point = 8 * local[first].shape[0] * local[first].shape[1] * 40
    out = _sensitivity_call(
        case,
        case.idata,
        "draw",
        local=False,
        memory_limit=per_point * max(1, n_points // 3),
        extend_inferencedata=False,
    )["sensitivity"]
    # R-sens alone: summed inside the graph where no input is categorical
    alone = _sensitivity_call(
        case, case.idata, "draw", False, (first,), local=False, extend_inferencedata=False
    )["sensitivity"]
    for name, means in [*out.data_vars.items(), (first, alone[first])]:
        point_dim = local[name].dims[2]
        if name == "degenerate":  # each draw's count of points left out
            expected = local[name].sum(point_dim)
        else:  # over the points whose predictive is not one value (NaN in the local values)
            expected = local[name].mean(point_dim, skipna="degenerate" in local)
        expected = expected.transpose(*means.dims)
        # equal to rounding; blocks of other shapes sum in other orders, which a
        # GP's ill-conditioned training covariance magnifies (latent GP: 5e-10)
        np.testing.assert_allclose(means.values, expected.values, rtol=1e-8, atol=1e-14)


def _plots(idata):
    for plot in (
        pm_sens.plot_importance,
        pm_sens.plot_local,
        pm_sens.plot_partial_dependence,
        pm_sens.plot_permutation_importance,
    ):
        plot(idata, backend="matplotlib")


def _checked_modes(case, state, parity):
    """The mode a per-model check runs in, or the one mode computed: with ``parity``
    0 the mode of the interactions (`_interactions_mode`), with 1 the other one."""
    computed = [m for m in ("moment", "draw") if m in state]
    if len(computed) < 2:
        return computed
    first = _interactions_mode(case)
    return [first if parity == 0 else next(m for m in computed if m != first)]


def _steps(case, state):
    """Each function as a step on ``state`` (the DataTree the results go into)."""
    kw = case.kwargs
    model = case.model

    def sensitivity_moment():
        state["moment"] = _sensitivity(case, state["tree"], "moment")
        state["tree"] = state["moment"]

    def sensitivity_draw():
        state["draw"] = _sensitivity(case, case.idata.copy(), "draw")
        _check_point_means(case, state["draw"]["sensitivity"])

    def dask_and_lazy():
        """The same calls with a lazy posterior and dask-backed points: the same
        features and values (the compiled graphs are the in-memory calls'). In one
        mode per model, the other one than `without_rewrites` checks: each mode
        meets half the zoo's models here."""
        modes = _checked_modes(case, state, 0)
        if not modes:
            raise _Skipped("no sensitivity to compare with")
        points = model_points(case)
        for mode in modes:
            eager = state[mode]["sensitivity"]
            lazy = _sensitivity_call(case, lazy_posterior(case), mode, extend_inferencedata=False)
            assert_same(lazy["sensitivity"], eager, f"lazy posterior, {mode}")
            if points is not None:
                given = [
                    _sensitivity_call(case, case.idata, mode, points=p, extend_inferencedata=False)
                    for p in (points, points.chunk(obs=7))
                ]
                assert_same(
                    given[1]["sensitivity"], given[0]["sensitivity"], f"dask points, {mode}"
                )

    def without_rewrites():
        """R-sens (or the first method) compiled without pm_sens's rewrites: the same
        values to 1e-10 in both modes (the rewrites change how a graph computes,
        never what). First order only: the interactions' graphs take PyTensor's own
        rewrites long to compile again (`tests/test_rewrites.py` compares R-sens2
        without any rewrite). The NumPy forms of scalar ops stay: without them a
        graph is compiled by Numba instead, a switch `tests/test_rewrites.py` covers.
        In one mode per model, the other one than `dask_and_lazy` checks."""
        modes = _checked_modes(case, state, 1)
        if not modes:
            raise _Skipped("no sensitivity to compare with")
        kept = [n for n in REWRITES if n != "local_numpy_ufunc_forms"]
        for mode in modes:
            eager = state[mode]["sensitivity"].to_dataset()
            with excluding(*kept):
                plain = _sensitivity_call(
                    case,
                    case.idata,
                    mode,
                    interactions=False,
                    method=[case.methods[0]],
                    extend_inferencedata=False,
                )["sensitivity"].to_dataset()
            assert_same(plain, eager[list(plain.data_vars)], f"no rewrites, {mode}", 1e-10)

    def _any_sensitivity():
        if "moment" not in state and "draw" not in state:
            raise _Skipped("no sensitivity to summarize")

    def summary():
        _any_sensitivity()
        for name in ("moment", "draw"):
            if name in state:
                table = pm_sens.summary(state[name])
                assert len(table), "empty summary"

    def importance():
        _any_sensitivity()
        for name in ("moment", "draw"):
            if name in state:
                da = pm_sens.importance(state[name], case.methods[0])
                finite = np.isfinite(da.values) | _documented_nan(da)
                assert np.all(finite), f"importance ({name}) is not finite"

    def permutation_importance():
        tree = state["tree"]
        tree = pm_sens.permutation_importance(
            tree, model, n_repeats=2, random_seed=1, **QUIET, **kw
        )
        _check_finite(tree["permutation_importance"].to_dataset(), "permutation_importance")
        state["tree"] = tree

    def partial_dependence():
        tree = state["tree"]
        tree = pm_sens.partial_dependence(
            tree,
            model,
            kind=("mean", "entropy", "log_likelihood"),
            grid_resolution=4,
            **QUIET,
            **kw,
        )
        _check_finite(tree["partial_dependence"].to_dataset(), "partial_dependence")
        state["tree"] = tree

    def integrated_gradients():
        tree = state["tree"]
        tree = pm_sens.integrated_gradients(tree, model, n_steps=8, **QUIET, **kw)
        _check_finite(tree["attribution"].to_dataset(), "integrated_gradients")
        state["tree"] = tree

    def plots():
        needed = {"sensitivity", "permutation_importance", "partial_dependence"}
        missing = needed - set(state["tree"].children)
        if missing:
            raise _Skipped(f"no {sorted(missing)} to plot")
        _plots(state["tree"])
        with_pairs = state.get(_interactions_mode(case))
        if "rsens" in case.methods and with_pairs is not None:
            pairs = with_pairs["sensitivity"]["rsens2"]
            paired = pairs.mean([d for d in pairs.dims if "feature" not in d]).notnull()
            if paired.any("feature_bis").sum() < 2:  # one input: our error, no empty figure
                with pytest.raises(ValueError, match="two or more inputs"):
                    pm_sens.plot_interactions(with_pairs, backend="matplotlib")
            else:
                pm_sens.plot_interactions(with_pairs, backend="matplotlib")

    def checks():
        if case.check is not None:
            case.check(case, state)

    return {
        f.__name__: f
        for f in (
            sensitivity_moment,
            sensitivity_draw,
            dask_and_lazy,
            without_rewrites,
            summary,
            importance,
            permutation_importance,
            partial_dependence,
            integrated_gradients,
            plots,
            checks,
        )
    }


def _foreign(error):
    """Why ``error`` is not pm_sens's own, or None.

    A user must read our words: the exception is raised by a ``raise`` in
    pm_sens (its innermost frame), and is a built-in type or one of pm_sens's.
    NumPy's, PyTensor's or a dependency's, propagated as they are, are not.
    """
    frames = traceback.extract_tb(error.__traceback__)
    where = frames[-1].filename if frames else "?"
    module = type(error).__module__
    if module not in ("builtins",) and not module.startswith("pm_sens"):
        return f"a {module}.{type(error).__name__} reached the user (raised in {where})"
    if "/pm_sens/" not in where.replace("\\", "/"):
        return f"a {type(error).__name__} raised in {where}, not by pm_sens, reached the user"
    return None


class _Skipped(Exception):
    """A step that cannot run because an earlier one (expected to fail) did not."""


def _pymc_model(case):
    """The PyMC model behind the case's model (a bambi model's backend, an MMM's model)."""
    if isinstance(case.model, pm.Model):
        return case.model
    backend = getattr(case.model, "backend", None)
    return case.model.model if backend is None else backend.model


def _snapshot(case):
    model = _pymc_model(case)
    data = {
        name: np.array(var.get_value(), copy=True)
        for name, var in model.named_vars.items()
        if hasattr(var, "get_value")
    }
    return data, case.idata.copy(deep=True), len(model.named_vars)


def _check_unchanged(case, before):
    data, idata, n_vars = before
    model = _pymc_model(case)
    for name, values in data.items():
        now = model.named_vars[name].get_value()
        assert np.array_equal(now, values), f"the model's container {name} was changed"
    assert len(model.named_vars) == n_vars, "variables were added to the user's model"
    assert set(case.idata.children) == set(idata.children), "groups of the user's idata changed"
    for group in idata.children:
        xr.testing.assert_identical(case.idata[group].to_dataset(), idata[group].to_dataset())


def run_every_function(case):
    """``{function: "ok" | "expected error" | "skipped: …" | "FAILED: …"}`` for one model."""
    before = _snapshot(case)
    # the user's idata stays as it was: results go into a (shallow) copy
    state, outcome = {"tree": case.idata.copy()}, {}
    for name, step in _steps(case, state).items():
        expected = case.errors.get(name)
        try:
            step()
        except _Skipped as why:
            outcome[name] = f"skipped: {why}"
            continue
        except Exception as error:  # noqa: BLE001 (each failure is reported)
            message = f"{type(error).__name__}: {error}"
            foreign = None if isinstance(error, AssertionError) else _foreign(error)
            if foreign is not None:
                outcome[name] = f"FAILED: {foreign}: {message[:300]}"
            elif expected is not None and re.search(expected, message):
                outcome[name] = "expected error"
            else:
                tail = (
                    traceback.format_exception(error)[-3:-1]
                    if not isinstance(error, AssertionError)
                    else []
                )
                outcome[name] = f"FAILED: {message[:400]}{''.join(tail)[-300:]}"
            continue
        outcome[name] = "ok" if expected is None else f"FAILED: no error matching {expected!r}"
    _check_unchanged(case, before)
    return outcome


def _cell(result, known):
    if result == "ok":
        return "ok"
    if known:
        return "**known**"
    if result == "expected error":
        return "error (ours)"
    if result.startswith("skipped"):
        return "–"
    return "**FAILED**"


def main(names, table=False):
    """Print each model's outcomes, or (``--table``) the zoo's table in Markdown."""
    from tests.zoo import ZOO_MODULES  # noqa: F401 (registers the models)
    from tests.zoo._registry import ZOO

    if table:
        print("| model | " + " | ".join(FUNCTIONS) + " | s |")
        print("|---" * (len(FUNCTIONS) + 2) + "|")
    for name in names or ZOO:
        start = time.perf_counter()
        case = ZOO[name]()
        outcome = run_every_function(case)
        seconds = time.perf_counter() - start
        if table:
            cells = [_cell(outcome[f], f in case.known_failures) for f in FUNCTIONS]
            print(f"| {name} | " + " | ".join(cells) + f" | {seconds:.1f} |")
        else:
            print(f"## {name} ({seconds:.1f} s)")
            for function, result in outcome.items():
                print(f"   {function}: {result}")
        sys.stdout.flush()


if __name__ == "__main__":
    arguments = sys.argv[1:]
    main([a for a in arguments if a != "--table"], table="--table" in arguments)

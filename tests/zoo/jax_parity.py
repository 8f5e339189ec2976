"""Every evaluating function on a zoo model with ``backend="jax"`` against the default.

JAX's CPU build runs the same graphs (PyTensor's JAX linker) as the CPU
backend runs with NumPy and Numba: every result equal to 1e-10 in float64
(the finite-difference KL, which divides by δ², to 1e-6), or a clear error
naming the operation JAX cannot run.

``python -m tests.zoo.jax_parity [model ...]`` prints each model's outcome and
time on both backends (every model when none is named); with ``--float32``,
each function's largest relative difference between ``dtype="float32"`` on
the JAX backend and the CPU backend's float64, per variable (the accuracy the
JAX how-to reports); with ``--as-accelerator``, what the JAX backend does on a
GPU only (`pm_sens.graph.compile.jax_functions.on_an_accelerator`) is done on
JAX's CPU build.
"""

import sys
import time
import warnings

import numpy as np
import pymc as pm
import pytest

import pm_sens
from pm_sens.graph.compile import jax_functions
from pm_sens.graph.model import queries
from tests.zoo._registry import EVALUATING
from tests.zoo.run import QUIET, _foreign, _interactions_mode

#: relative tolerance of the JAX backend's values against the CPU backend's
RTOL = 1e-10
#: the finite-difference KL's: rounding of the log densities divided by δ²
KL_RTOL = 1e-6
#: values that are differences of quantities of order 1 or less, equal to rounding
ROUNDING = 1e-12


def solves_a_linear_system(case):
    """Whether ``case``'s predictive solves a linear system (a GP's conditional): the
    JAX backend refuses its interactions (`pm_sens.local.sensitivity`)."""
    predictive = case.kwargs.get("predictive")
    if predictive is None and isinstance(case.model, pm.Model):
        predictive = pm_sens.Predictive.from_observed(case.model)
    return predictive is not None and queries.solves_a_linear_system(predictive.parameter_list)


def _calls(case):
    """``{function: call(backend)}``: each evaluating function, one result node each;
    R-sens2 in one mode, where the JAX backend computes it."""
    kw = dict(QUIET, extend_inferencedata=False, **case.kwargs)
    methods = list(case.methods)
    pairs = "rsens" in methods and not solves_a_linear_system(case)

    def sensitivity(mode):
        def call(backend, dtype=None):
            return pm_sens.sensitivity(
                case.idata,
                case.model,
                mode=mode,
                method=methods,
                kl_scheme="central",
                delta=case.kl_delta,
                interactions=pairs and mode == _interactions_mode(case),
                backend=backend,
                dtype=dtype,
                **kw,
            )["sensitivity"]

        return call

    return {
        "sensitivity_moment": sensitivity("moment"),
        "sensitivity_draw": sensitivity("draw"),
        "permutation_importance": lambda backend, dtype=None: pm_sens.permutation_importance(
            case.idata, case.model, n_repeats=2, random_seed=1, backend=backend, dtype=dtype, **kw
        )["permutation_importance"],
        "partial_dependence": lambda backend, dtype=None: _both_pdp_routes(
            case, backend, dtype, kw
        ),
        "integrated_gradients": lambda backend, dtype=None: pm_sens.integrated_gradients(
            case.idata, case.model, n_steps=4, backend=backend, dtype=dtype, **kw
        )["attribution"],
    }


def _both_pdp_routes(case, backend, dtype, kw):
    """`partial_dependence` of every kind (the entropies from the per-draw parameters,
    beside the log density of y), and of the default kinds (a closed-form entropy
    summed over draws in the graph), the latter's variables named ``*_default``."""

    def pdp(kind):
        return pm_sens.partial_dependence(
            case.idata,
            case.model,
            kind=kind,
            grid_resolution=3,
            backend=backend,
            dtype=dtype,
            **kw,
        )["partial_dependence"]

    every = pdp(("mean", "entropy", "log_likelihood"))
    default = pdp(("mean", "entropy")).to_dataset()
    every.update(default.rename({name: f"{name}_default" for name in default.data_vars}))
    return every


def _assert_equal(got, expected, where):
    """Every variable equal to `RTOL` of its largest value (NaN where NaN).

    Values that are rounding (an entropy's change where a feature has no effect,
    IG's completeness gap: 1e-16 of the quantities they are differences of)
    differ by rounding: `ROUNDING` apart.
    """
    got, expected = got.to_dataset(), expected.to_dataset()
    assert set(got.data_vars) == set(expected.data_vars), where
    for name, var in expected.data_vars.items():
        rtol = KL_RTOL if name.startswith("kl") else RTOL
        scale = np.nanmax(np.abs(var.values), initial=0.0)
        np.testing.assert_allclose(
            got[name].values,
            var.values,
            rtol=rtol,
            atol=rtol * scale + ROUNDING,
            err_msg=f"{where}: {name}",
        )


def compare_backends(case, functions=None):
    """``{function: (outcome, cpu seconds, jax seconds)}`` for one zoo model.

    The outcome is "ok" (equal), "refused" (both backends raise pm_sens's
    error: a form the zoo expects to be refused), "jax: <error>" where only JAX
    fails with our error (an operation JAX cannot run), or "FAILED: …".
    """
    outcome = {}
    for name, call in _calls(case).items():
        if functions is not None and name not in functions:
            continue
        times, results = [], []
        for backend in ("cpu", "jax"):
            start = time.perf_counter()
            try:
                results.append(call(backend))
            except Exception as error:  # noqa: BLE001 (each outcome is reported)
                results.append(error)
            times.append(time.perf_counter() - start)
        cpu, jax = results
        if isinstance(cpu, Exception):
            same = isinstance(jax, Exception) and type(jax) is type(cpu)
            outcome[name] = ("refused" if same else f"FAILED: cpu {cpu!r}, jax {jax!r}", *times)
        elif isinstance(jax, Exception):
            foreign = _foreign(jax)
            kind = "FAILED" if foreign or "JAX" not in str(jax) else "jax"
            outcome[name] = (f"{kind}: {foreign or ''}{str(jax)[:300]}", *times)
        else:
            try:
                _assert_equal(jax, cpu, f"{case.name}: {name}")
            except AssertionError as error:
                outcome[name] = (f"FAILED: {str(error)[:600]}", *times)
            else:
                outcome[name] = ("ok", *times)
    return outcome


def single_precision_errors(case, functions):
    """``{function: {variable: relative difference} or error}``: float32 on JAX
    against float64 on the CPU backend, each variable's largest difference
    over its largest value (IG's completeness gap: over the prediction's)."""
    errors = {}
    for name, call in _calls(case).items():
        if name not in functions:
            continue
        try:
            expected = call("cpu").to_dataset()
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="method='kl' with dtype='float32'")
                got = call("jax", "float32").to_dataset()
        except Exception as error:  # noqa: BLE001 (each outcome is reported)
            errors[name] = f"{type(error).__name__}: {str(error)[:200]}"
            continue
        # IG's completeness gap is rounding in both: against the prediction it is a gap of
        scales = {"completeness_gap": expected.get("value")}
        errors[name] = {
            variable: _relative_difference(got[variable], var, scales.get(variable, var))
            for variable, var in expected.data_vars.items()
        }
    return errors


def _relative_difference(got, expected, scale):
    """The largest difference over ``scale``'s largest value; 0 or inf for flags."""
    if not np.issubdtype(expected.dtype, np.number) or expected.dtype == bool:
        return 0.0 if np.array_equal(got.values, expected.values) else np.inf
    difference = np.nanmax(np.abs(got.values - expected.values), initial=0.0)
    return float(difference / max(np.nanmax(np.abs(scale.values)), ROUNDING))


def compared(case):
    """The functions whose results are compared on ``case``: those the zoo expects
    to work on it."""
    return [f for f in EVALUATING if f not in case.errors and f not in case.known_failures]


def main(names):
    """Print each model's outcome per function, with the time on each backend
    (``--float32``: its float32 differences)."""
    from tests.zoo import ZOO_MODULES  # noqa: F401 (registers the models)
    from tests.zoo._registry import ZOO

    single = "--float32" in names
    if "--as-accelerator" in names:
        # what runs on a GPU only (`jax_functions.on_an_accelerator`), on JAX's CPU build
        jax_functions.on_an_accelerator = lambda: True
    names = [name for name in names if not name.startswith("--")]
    totals = np.zeros(2)
    for name in names or sorted(ZOO):
        try:
            case = ZOO[name]()
        except pytest.skip.Exception as why:  # an optional front end not installed here
            print(f"## {name}: not built ({why})")
            continue
        print(f"## {name}")
        if single:
            for function, errors in single_precision_errors(case, compared(case)).items():
                print(f"   {function}: {errors}")
            sys.stdout.flush()
            continue
        for function, (result, cpu, jax) in compare_backends(case, compared(case)).items():
            totals += (cpu, jax)
            print(f"   {function}: {result} (cpu {cpu:.1f} s, jax {jax:.1f} s)")
        sys.stdout.flush()
    print(f"total: cpu {totals[0]:.0f} s, jax {totals[1]:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1:])

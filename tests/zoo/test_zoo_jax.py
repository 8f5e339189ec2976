"""The JAX backend on zoo models of each kind of graph: every evaluating function gives
the CPU backend's results on JAX's CPU build (`tests.zoo.jax_parity`).

The whole zoo takes about as long again as `test_zoo.py` on two cores:
``python -m tests.zoo.jax_parity`` runs it (the docs give its last outcome); the
test command runs one model of each kind of graph.
"""

import pytest

import pm_sens
from tests.zoo import ZOO_MODULES  # noqa: F401 (registers the models)
from tests.zoo._registry import ZOO
from tests.zoo.jax_parity import compare_backends, compared, single_precision_errors

pytest.importorskip("jax")

#: one model per kind of graph: a lag by joined slices (a split in the gradient),
#: a softmax over categories, a GP's solves, group indices, a bambi formula, a
#: censored likelihood, a hurdle (zero-modified) count law
KINDS = [
    "ar1_errors_shifted_copies",
    "categorical_softmax",
    "gp_marginal",
    "varying_intercepts",
    "bambi_poisson",
    "censored_normal_per_row_bounds",
    "hurdle_poisson",
]


@pytest.mark.parametrize("name", KINDS)
def test_every_function_on_jax_gives_the_cpu_backends_results(name):
    case = ZOO[name]()
    outcome = compare_backends(case, compared(case))
    problems = {f: result for f, (result, *_) in outcome.items() if result != "ok"}
    assert not problems, f"{name}: {problems}"


def test_a_gps_interactions_are_refused_on_jax_with_the_backend_that_computes_them():
    case = ZOO["gp_marginal"]()
    with pytest.raises(ValueError, match=r"interactions=True with backend='jax'.*backend='cpu'"):
        pm_sens.sensitivity(
            case.idata,
            case.model,
            interactions=True,
            backend="jax",
            progressbar=False,
            **case.kwargs,
        )


#: float32 on models of closed-form likelihoods: group indices, a hurdle count law
SINGLE = ["varying_intercepts", "hurdle_poisson"]


@pytest.mark.parametrize("name", SINGLE)
def test_every_function_in_float32_gives_the_float64_results_to_single_precision(name):
    """Everything but the finite-difference KL (its step's rounding, warned of) within
    1e-5 of the values' largest, the entropies' changes under permutation within 1e-4
    (differences of entropies: their float32 rounding), as the JAX how-to reports;
    and not to float64's rounding (computed in float32)."""
    case = ZOO[name]()
    errors = single_precision_errors(case, compared(case))
    worst = 0.0
    for function, by_variable in errors.items():
        assert isinstance(by_variable, dict), f"{name}: {function}: {by_variable}"
        for variable, error in by_variable.items():
            if variable != "kl":
                bound = 1e-4 if variable == "entropy_pfi" else 1e-5
                assert error < bound, f"{name}: {function}: {variable}: {error:.1e}"
                worst = max(worst, error)
    assert worst > 1e-10

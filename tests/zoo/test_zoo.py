"""Every zoo model through every public function (`tests.zoo.run`)."""

import pytest

from tests.zoo import ZOO_MODULES  # noqa: F401 (registers the models)
from tests.zoo._registry import ZOO
from tests.zoo.run import run_every_function


@pytest.mark.parametrize("name", sorted(ZOO))
def test_every_function_on_the_zoo_model(name):
    case = ZOO[name]()
    outcome = run_every_function(case)
    problems = []
    for function, result in outcome.items():
        known = case.known_failures.get(function)
        if known is not None:
            if result == "ok":
                problems.append(f"{function} works now ({result}): remove its known failure")
        elif result.startswith("FAILED") or (
            result.startswith("skipped") and not (case.known_failures or case.errors)
        ):
            problems.append(f"{function}: {result}")
    assert not problems, f"{name} ({case.source}):\n" + "\n".join(problems)

"""Every zoo model's R-sens compiled without pm_sens's rewrites: the same values
to 1e-12 in both modes (the rewrites change how a graph computes, never what).

Not without the NumPy forms of scalar ops (a graph would be compiled by Numba
instead: `tests/test_rewrites.py` covers that switch), and not the
interactions, whose graphs (~1,000 nodes for the ordered probit) take
PyTensor's own rewrites 11 s per mode to compile again: `tests/test_rewrites.py`
compares R-sens2 without any rewrite.
"""

import pytest

from pm_sens.graph.compile.rewrites import REWRITES, excluding
from tests.zoo import ZOO_MODULES  # noqa: F401 (registers the models)
from tests.zoo._lazy import assert_same
from tests.zoo._registry import ZOO
from tests.zoo.run import _sensitivity_call


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_model_without_rewrites(name):
    case = ZOO[name]()
    if "sensitivity_moment" in case.errors:
        pytest.skip("a form pm_sens refuses: the zoo checks its error")
    kw = dict(interactions=False, method=[case.methods[0]], extend_inferencedata=False)
    for mode in ("moment", "draw"):
        rewritten = _sensitivity_call(case, case.idata, mode, **kw)["sensitivity"]
        with excluding(*(n for n in REWRITES if n != "local_numpy_ufunc_forms")):
            plain = _sensitivity_call(case, case.idata, mode, **kw)["sensitivity"]
        assert_same(plain, rewritten, f"{name}: no rewrites, {mode}", 1e-12)

"""Every zoo model with its float containers as float32, and whole numbers as int64
(`tests.zoo.variants`): moment-mode `sensitivity` (R-sens and the KL) gives the
float64 model's results."""

from functools import partial

import numpy as np
import pymc as pm
import pytest

import pm_sens
from tests.zoo import ZOO_MODULES  # noqa: F401 (registers the models)
from tests.zoo._registry import ZOO
from tests.zoo.run import _foreign, _sensitivity_call
from tests.zoo.variants import CASTS, build_variant

#: relative tolerance of each variant against the float64 model
RTOL = {"float32": 1e-5, "int": 1e-9}


@pytest.mark.parametrize("variant", sorted(CASTS))
@pytest.mark.parametrize("name", sorted(ZOO))
def test_sensitivity_of_the_model_with_its_data_in_other_dtypes(name, variant):
    case = ZOO[name]()
    if not isinstance(case.model, pm.Model) or case.errors or case.known_failures:
        pytest.skip("front ends build their own containers; refused forms have their errors")
    if "predictive" in case.kwargs:
        pytest.skip("a predictive built by hand holds the float64 containers")
    if pm_sens.Predictive.from_observed(case.model).likelihood.generic is not None:
        # the summation and quadrature graphs take a minute each to compile again;
        # their dtype handling is the closed forms' (the same inputs and casts)
        pytest.skip("a likelihood without closed forms")
    other, changed = build_variant(name, variant, case)
    if not changed:
        pytest.skip(f"no container to give as {variant}")
    # moment mode, first order: the same inputs, casts and compiled derivatives as
    # draw mode's and the interactions' (each graph compiles again for the new
    # dtypes, the second-order ones longest); the zoo models written with float32,
    # int and bool data (float32_data, integer_used_in_arithmetic, the sneezes
    # models) take every function, interactions included, in their own dtypes
    for mode in ("moment",):
        call = partial(_sensitivity_call, interactions=False, extend_inferencedata=False)
        expected = call(case, case.idata, mode)
        try:
            got = call(other, case.idata, mode)
        except Exception as error:  # only our clear error may refuse a dtype
            assert _foreign(error) is None, _foreign(error)
            raise
        got, expected = got["sensitivity"], expected["sensitivity"]
        assert list(got["feature"].values) == list(expected["feature"].values), changed
        for var in expected.data_vars:
            # float32 inputs move every value by their rounding, relative to the
            # variable's scale (a value near 0 moves as much as a large one)
            scale = np.nanmax(np.abs(expected[var].values), initial=0.0)
            np.testing.assert_allclose(
                got[var].values,
                expected[var].values,
                rtol=RTOL[variant],
                atol=RTOL[variant] * scale + 1e-12,
                err_msg=f"{variant} {changed}, {mode}: {var}",
            )

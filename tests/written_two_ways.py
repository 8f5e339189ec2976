"""One model written two ways must give the same results: helpers for those tests."""

import numpy as np

import pm_sens


def other_functions(idata, **extra):
    """``{result group: call(model)}`` of the public functions besides `sensitivity`.

    ``extra``: keywords every call takes (``predictive=``).
    """
    kw = dict(progressbar=False, extend_inferencedata=False, **extra)
    return {
        "permutation_importance": lambda m: pm_sens.permutation_importance(
            idata, m, n_repeats=2, random_seed=1, **kw
        ),
        "partial_dependence": lambda m: pm_sens.partial_dependence(
            idata, m, kind=("mean", "entropy", "log_likelihood"), grid_resolution=4, **kw
        ),
        "attribution": lambda m: pm_sens.integrated_gradients(idata, m, n_steps=6, **kw),
    }


def assert_same_values(got, expected, rtol=1e-10):
    """Every variable of ``expected`` (a Dataset or DataTree node) equal in ``got``."""
    names = list(expected.data_vars)
    assert list(got.data_vars) == names
    for name in names:
        # IG's completeness gap is rounding (1e-15) of sums the size of the values
        atol = rtol * np.max(np.abs(expected["value"].values)) if name == "completeness_gap" else 0
        np.testing.assert_allclose(
            got[name].values, expected[name].values, rtol=rtol, atol=max(atol, 1e-300)
        )

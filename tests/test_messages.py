"""Error messages name the argument, the value received and what is valid."""

import numpy as np
import pymc as pm
import pytest

import pm_sens
from tests.zoo import ZOO_MODULES  # noqa: F401 (registers the models)
from tests.zoo._registry import ZOO

QUIET = dict(progressbar=False, extend_inferencedata=False)


@pytest.fixture(scope="module")
def grouped():
    case = ZOO["varying_intercepts"]()
    return case, case.model["floor_idx"].get_value()


def test_a_non_integer_level_is_named(grouped):
    case, floor = grouped
    points = {"floor_idx": floor, "county_idx": np.full(len(floor), 1.5)}
    with pytest.raises(ValueError, match=r"non-integer value 1\.5; 'county_idx' is an integer"):
        pm_sens.sensitivity(case.idata, case.model, points=points, **QUIET)


def test_a_level_beyond_the_dtype_names_the_valid_range(grouped):
    case, floor = grouped
    points = {"floor_idx": floor, "county_idx": np.full(len(floor), 10**12)}
    with pytest.raises(ValueError, match=r"dtype int32; valid: -2147483648\.\.2147483647"):
        pm_sens.sensitivity(case.idata, case.model, points=points, **QUIET)


def test_color_by_lists_the_valid_choices(grouped):
    case, _ = grouped
    out = pm_sens.sensitivity(case.idata, case.model, **QUIET)
    with pytest.raises(
        ValueError,
        match=r"valid: \['county_idx', 'floor_idx', 'obs_id'\] or \['floor_idx', 'county_idx'\]",
    ):
        pm_sens.plot_local(out, color_by="nope", backend="matplotlib")


def test_summary_of_a_dataset_says_to_pass_the_datatree(grouped):
    case, _ = grouped
    out = pm_sens.sensitivity(case.idata, case.model, **QUIET)
    with pytest.raises(TypeError, match=r"idata is a Dataset, not an xarray.DataTree"):
        pm_sens.summary(out["sensitivity"].to_dataset())


def test_a_predictive_of_another_model_lists_this_models_containers(grouped):
    case, _ = grouped
    other = pm_sens.Predictive.from_observed(ZOO["varying_slopes"]().model)
    with pytest.raises(ValueError, match=r"its containers: \['county_idx', 'floor_idx'\]"):
        pm_sens.sensitivity(case.idata, case.model, predictive=other, **QUIET)


def test_a_predictive_of_another_models_outcome_lists_this_models_outcomes(grouped):
    case, _ = grouped
    other = pm_sens.Predictive.from_observed(ZOO["normal_linear"]().model)
    with pytest.raises(ValueError, match=r"explains 'y'.*its observed variables: \['y_like'\]"):
        pm_sens.sensitivity(case.idata, case.model, predictive=other, **QUIET)


def test_gp_feature_names_of_the_wrong_length():
    x = np.zeros((5, 2))
    with pm.Model():
        gp = pm.gp.Marginal(cov_func=pm.gp.cov.ExpQuad(2, ls=1.0))
        gp.marginal_likelihood("y", X=x, y=np.zeros(5), sigma=1.0)
    with pytest.raises(ValueError, match=r"feature_names=\['a'\].*2 columns; give 2 names"):
        pm_sens.Predictive.from_gp(gp, feature_names=["a"])


def test_the_backend_model_of_bambi_is_recognized():
    case = ZOO["bambi_numeric_and_categorical"]()
    with pytest.raises(ValueError, match=r"built by bambi.*pass the bmb.Model itself"):
        pm_sens.sensitivity(case.idata, case.model.backend.model, **QUIET)

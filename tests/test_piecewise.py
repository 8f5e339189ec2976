"""Which inputs reach the predictions only through steps (no derivative to measure)."""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pm_sens
from pm_sens.graph.frontends.piecewise import piecewise_constant_inputs
from tests.conftest import posterior

x, z = pt.vector("x"), pt.vector("z")
b = pt.scalar("b")


@pytest.mark.parametrize(
    ("expression", "steps"),
    [
        (b * pt.floor(x), {x: ["floor"]}),
        (b * pt.round(x) + z, {x: ["round"]}),
        (pt.switch(x > 0, b, 2 * b) * z, {x: ["the condition of a switch"]}),
        (pt.switch(x > 0, b * x, 2 * b * x), {}),  # x also in the branches: a kink
        (
            pt.as_tensor(np.arange(5.0))[pt.cast(pt.floor(x), "int64")] + z,
            {x: ["a cast to integers", "floor"]},
        ),
        (pt.floor(x) + x, {}),  # a smooth path beside the step
        (pt.alloc(b, x.shape[0]) + z, {}),  # only x's shape: no step
        (pt.sign(x) * pt.exp(z), {x: ["sign"]}),
    ],
)
def test_inputs_acting_only_through_steps(expression, steps):
    assert piecewise_constant_inputs([expression], [x, z]) == steps


def test_age_bins_inside_the_model_get_the_kl_over_a_step_and_refuse_rsens(rng):
    """mu = a[age // 10]: sensitivity defaults to the central KL over 0.1 sd, which is
    sqrt(KL(+h) + KL(−h)) / h by hand: the rows whose bin changes."""
    age = rng.uniform(20, 60, 40)
    with pm.Model() as model:
        age_ = pm.Data("age", age)
        a = pm.Normal("a", 0, 1, shape=7)
        pm.Normal("y", a[pt.cast(age_ // 10, "int64")], 0.5, observed=rng.normal(size=40))
    draws = rng.normal(size=(1, 4, 7))
    idata = posterior({"a": draws})
    out = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)["sensitivity"]
    h = 0.1 * age.std()
    bins = lambda v: (v // 10).astype(int)  # noqa: E731
    kl = sum(
        (draws[0][:, bins(age + s * h)] - draws[0][:, bins(age)]) ** 2 / (2 * 0.25)
        for s in (1, -1)
    )
    np.testing.assert_allclose(out["kl"].values[0, :, :, 0], np.sqrt(kl) / h, rtol=1e-12)
    with pytest.raises(
        ValueError, match=r"\['age'\] only through // \(floor division\) and a cast to integers"
    ):
        pm_sens.sensitivity(idata, model, method="rsens", progressbar=False)

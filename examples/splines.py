"""
Splines: a model on a patsy B-spline basis, ranked per year instead of per basis column.
========================================================================================

In the style of PyMC's splines notebook (cherry blossoms): the day of year of
first bloom follows a smooth curve in the year, built as 17 B-spline basis
columns with patsy outside the model, plus the March temperature. Generated
data: the curve, the temperature's effect and the noise are set below.

Written as the notebook writes it, the model's inputs are the basis columns
(a NumPy design matrix) and the temperature: pm_sens ranks 17 columns. With
``raw_inputs`` and ``design`` it ranks the year itself, through the basis by
the chain rule, beside the temperature, and draws the year's response curve.

Run: .venv/bin/python examples/splines.py [--quick]
"""

import sys

import numpy as np
import patsy
import pymc as pm
from _figures import save

import pm_sens


def generate(rng, n=300):
    year = np.sort(rng.uniform(850, 2000, n))
    temp = 6 + 0.8 * np.sin((year - 850) / 180) + rng.normal(0, 0.6, n)
    trend = 4 * np.sin((year - 850) / 250) - 3 * ((year - 850) / 1150) ** 2
    doy = 105 + trend - 2.5 * (temp - 6) + rng.normal(0, 3, n)
    return year, temp, doy


def main(quick=False):
    rng = np.random.default_rng(11)
    year, temp, doy = generate(rng)
    inner = np.quantile(year, np.linspace(0, 1, 15)[1:-1])
    basis = np.asarray(
        patsy.dmatrix(
            "bs(year, knots=inner, degree=3, include_intercept=True) - 1",
            {"year": year, "inner": inner},
        )
    )
    with pm.Model(coords={"splines": range(basis.shape[1])}) as model:
        a = pm.Normal("a", 100, 10)
        w = pm.Normal("w", 0, 3, dims="splines")
        b_temp = pm.Normal("b_temp", 0, 3)
        mu = pm.Deterministic("mu", a + pm.math.dot(basis, w) + b_temp * (temp - 6))
        pm.Normal("doy", mu, pm.Exponential("sigma", 1), observed=doy)
        idata = pm.sample(
            draws=200 if quick else 1000,
            tune=300 if quick else 1000,
            chains=2,
            random_seed=11,
            progressbar=not quick,
        )

    columns = pm_sens.sensitivity(idata, model, progressbar=False, extend_inferencedata=False)
    table = pm_sens.summary(columns, scale="sd")
    print(f"As written, pm_sens ranks {len(table)} inputs; the first five (per sd):")
    print(table.head(5).to_string(index=False, float_format="{:.3f}".format))

    knots = np.r_[[year.min()] * 4, inner, [year.max()] * 4]
    predictive = pm_sens.Predictive.from_observed(
        model, raw_inputs={"year": year}, design=lambda year: pm_sens.bspline_basis(year, knots)
    )
    idata = pm_sens.sensitivity(idata, model, predictive=predictive, progressbar=False)
    print("\nPer raw input, year through its 17 basis columns (R-sens per sd, 89% ETI):")
    table = pm_sens.summary(idata, scale="sd")
    print(table.to_string(index=False, float_format="{:.3f}".format))

    idata = pm_sens.partial_dependence(idata, model, predictive=predictive, progressbar=False)
    save(pm_sens.plot_partial_dependence(idata), "splines_partial_dependence")
    save(pm_sens.plot_importance(idata, scale="sd"), "splines_importance")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)

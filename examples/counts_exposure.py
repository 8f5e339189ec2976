"""
Reading the numbers: a Poisson regression of counts with an exposure offset.
============================================================================

Cyclists counted at 400 sites during observation windows of different lengths
(generated data). The rate depends on traffic (thousands of vehicles per hour),
temperature (°C) and rain (a 0/1 flag, stored as an integer); the window length
enters as a log-exposure offset, as PyMC's notebooks write count models:
``mu = exp(linear predictor + log_exposure)``. The linear predictor is
additive — no interaction terms.

The example shows, with the numbers the documentation's "Reading the numbers"
section quotes:

1. the default inputs include the offset (a float ``pm.Data`` container), which
   ranks first; the result's attrs name every container treated as an input,
   and ``inputs=`` leaves the offset out;
2. R-sens is per unit of each input: temperature in degrees gets a small rate
   although its effect over its typical range is a third of traffic's;
   ``summary(scale="sd")`` puts inputs on a per-sd scale;
3. R-sens2 finds a traffic × temperature "interaction" that the exp link
   creates; the cross-derivative of the linear predictor (EAH of a predictive
   built on it) is zero, so the linear predictor has none.

Run: .venv/bin/python examples/counts_exposure.py [--quick]
"""

import sys

import numpy as np
import pymc as pm
from _figures import save

import pm_sens

TRUE = {"intercept": -0.5, "traffic": 0.5, "temp_c": 0.02, "rain": -0.4}


def generate(rng, n=400):
    traffic = rng.gamma(4.0, 0.5, n)  # thousands of vehicles per hour: mean 2, sd 1
    temp_c = rng.normal(10.0, 8.0, n)
    rain = rng.binomial(1, 0.3, n)
    exposure = rng.uniform(0.5, 3.0, n)  # hours observed
    eta = (
        TRUE["intercept"]
        + TRUE["traffic"] * traffic
        + TRUE["temp_c"] * temp_c
        + TRUE["rain"] * rain
    )
    counts = rng.poisson(np.exp(eta + np.log(exposure)))
    return {"traffic": traffic, "temp_c": temp_c, "rain": rain, "exposure": exposure}, counts


def build_model(data, counts):
    with pm.Model(coords={"site": range(len(counts))}) as model:
        traffic = pm.Data("traffic", data["traffic"], dims="site")
        temp_c = pm.Data("temp_c", data["temp_c"], dims="site")
        rain = pm.Data("rain", data["rain"], dims="site")
        log_exposure = pm.Data("log_exposure", np.log(data["exposure"]), dims="site")
        intercept = pm.Normal("intercept", 0, 2)
        b_traffic = pm.Normal("b_traffic", 0, 1)
        b_temp = pm.Normal("b_temp", 0, 0.1)
        b_rain = pm.Normal("b_rain", 0, 1)
        eta = pm.Deterministic(
            "eta", intercept + b_traffic * traffic + b_temp * temp_c + b_rain * rain, dims="site"
        )
        pm.Poisson("cyclists", mu=pm.math.exp(eta + log_exposure), observed=counts, dims="site")
    return model


def table(frame):
    return frame.to_string(index=False, float_format="{:.3f}".format)


def main(quick=False):
    rng = np.random.default_rng(7)
    data, counts = generate(rng)
    model = build_model(data, counts)
    with model:
        idata = pm.sample(
            draws=200 if quick else 1000,
            tune=200 if quick else 1000,
            chains=2,
            random_seed=7,
            progressbar=not quick,
        )

    print("\n1. Default inputs: every float container the rate depends on, the offset too")
    idata = pm_sens.sensitivity(idata, model)
    attrs = idata["sensitivity"].attrs
    print(f"inputs={attrs['inputs']}, categorical_inputs={attrs['categorical_inputs']}")
    print(table(pm_sens.summary(idata)[["feature", "kind", "importance", "rank"]]))

    print("\n2. Leaving the offset out; per unit of each input and per sd")
    inputs = ["traffic", "temp_c", "rain"]
    idata = pm_sens.sensitivity(idata, model, inputs=inputs, interactions=True)
    per_unit = pm_sens.summary(idata, var_names="rsens").set_index("feature")
    per_sd = pm_sens.summary(idata, var_names="rsens", scale="sd").set_index("feature")
    sd = {name: np.std(data[name]) for name in ("traffic", "temp_c")}
    print("feature   kind   per unit  per sd   (sd of input)")
    for name in inputs:
        print(
            f"{name:8s}  {per_unit.loc[name, 'kind']:5s}  {per_unit.loc[name, 'importance']:8.3f}"
            f"  {per_sd.loc[name, 'importance']:6.3f}   ({sd.get(name, float('nan')):.2f})"
        )
    save(pm_sens.plot_importance(idata, var_names="rsens", scale="sd"), "counts_importance_sd")

    print("\n3. R-sens2 of the pairs, against the linear predictor's cross-derivative")
    pair = "traffic:temp_c"
    rsens2 = pm_sens.summary(idata, var_names="rsens2").set_index("feature")
    rsens2_sd = pm_sens.summary(idata, var_names="rsens2", scale="sd").set_index("feature")
    linear = pm_sens.Predictive(
        "normal",
        {"mu": model["eta"], "sigma": 1.0},
        [model["traffic"], model["temp_c"]],
        var_name="cyclists",
    )
    on_eta = pm_sens.sensitivity(
        idata.copy(),
        model,
        predictive=linear,
        method="ead",
        interactions=True,
        progressbar=False,
    )
    eah = pm_sens.summary(on_eta, var_names="eah")
    print(
        f"R-sens2 {pair}: {rsens2.loc[pair, 'importance']:.4f} per unit of each input, "
        f"{rsens2_sd.loc[pair, 'importance']:.3f} per sd of each"
    )
    print(f"EAH of the linear predictor, {pair}: {eah['importance'].iloc[0]:.1e}")
    curvature = idata["sensitivity"]["rsens2"].sel(feature="traffic", feature_bis="traffic")
    print(f"R-sens2 diagonal (curvature), traffic:traffic: {float(curvature.mean()):.3f}")
    save(pm_sens.plot_interactions(idata, scale="sd"), "counts_interactions")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)

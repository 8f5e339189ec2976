"""
Hierarchical model: household radon with a county-level predictor, and importance per county.
=============================================================================================

Generated data in the style of the radon example: households in counties, a
floor flag per household (basement or not) and the county's soil uranium,
which enters the model as ``u[county_idx]``. pm_sens treats the county-level
uranium as a feature of every household (the derivative of a household's
prediction with respect to the value its county contributes), so it ranks
beside the household-level floor flag; ``summary(by="county_idx")`` then gives
the ranking county by county. With ``interactions=True`` the pair floor ×
county_idx answers "does the floor effect differ between counties?" (it does:
the generated effect grows with the county's uranium).

Run: .venv/bin/python examples/hierarchical.py [--quick]
"""

import sys

import numpy as np
import pymc as pm
from _figures import save

import pm_sens


def generate(rng, counties=12, households=400):
    county = rng.integers(0, counties, households)
    uranium = rng.normal(0, 0.5, counties)
    floor = rng.integers(0, 2, households).astype(float)
    county_effect = 0.7 * uranium + rng.normal(0, 0.2, counties)
    # the floor effect is larger in high-uranium counties
    log_radon = 1.5 + county_effect[county] - (0.6 + 0.4 * uranium[county]) * floor
    return county, uranium, floor, log_radon + rng.normal(0, 0.5, households)


def main(quick=False):
    rng = np.random.default_rng(7)
    county, uranium, floor, log_radon = generate(rng)
    coords = {"obs_id": range(len(county)), "county": range(len(uranium))}
    with pm.Model(coords=coords) as model:
        county_idx = pm.Data("county_idx", county, dims="obs_id")
        u = pm.Data("uranium", uranium, dims="county")
        f = pm.Data("floor", floor, dims="obs_id")
        gamma = pm.Normal("gamma", 0, 1, shape=2)
        sd_county = pm.HalfNormal("sd_county", 1)
        alpha = pm.Normal("alpha", gamma[0] + gamma[1] * u, sd_county, dims="county")
        beta = pm.Normal("beta", 0, 1, shape=2)
        mu = alpha[county_idx] - (beta[0] + beta[1] * u[county_idx]) * f
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("log_radon", mu, sigma, observed=log_radon, dims="obs_id")
        idata = pm.sample(
            draws=200 if quick else 500,
            tune=300 if quick else 500,
            chains=4,
            random_seed=7,
            progressbar=False,
        )

    idata = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)
    print("Household and county-level inputs, all households (posterior mean, 89% ETI):")
    print(pm_sens.summary(idata).to_string(index=False, float_format="{:.3f}".format))
    by_county = pm_sens.summary(idata, by="county_idx")
    print("\nRank of uranium, county by county (probability it is the top input):")
    uranium_rows = by_county[by_county.feature == "uranium"]
    print(uranium_rows[["county_idx", "importance", "rank", "prob_top_1"]].to_string(index=False))
    save(pm_sens.plot_importance(idata), "hierarchical_importance")
    save(pm_sens.plot_local(idata, color_by="floor"), "hierarchical_local")

    idata = pm_sens.sensitivity(idata, model, mode="draw", interactions=True, progressbar=False)
    print("\nPairs (R-sens2): does an input act differently in another county?")
    pairs = pm_sens.summary(idata, var_names=["rsens2"])
    columns = ["feature", "kind", "importance", "ci_lower", "ci_upper", "rank"]
    print(pairs[columns].to_string(index=False, float_format="{:.3f}".format))
    save(pm_sens.plot_interactions(idata), "hierarchical_interactions")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)

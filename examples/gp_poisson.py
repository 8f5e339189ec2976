"""
Poisson GP on bike-sharing counts: which inputs and pairs drive hourly rentals?
===============================================================================

The February hours of the UCI Bike Sharing data (shipped in examples/data, with
its citation) with the six inputs the papers use: feeling temperature, humidity,
wind speed, hour, weekday and working day. A latent GP with an ARD
squared-exponential kernel and an exp link models the counts; it is fitted at its
MAP, as in the papers (000 §3.3, 001 §3.2), on a random subset of hours.
pm_sens then ranks the inputs by R-sens and the pairs by R-sens2, using the
papers' Poisson(E[λ]) predictive (``family="poisson"``).

Run: .venv/bin/python examples/gp_poisson.py [--quick]
"""

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pymc as pm
from _figures import save

import pm_sens

INPUTS = ["atemp", "hum", "windspeed", "hr", "weekday", "workingday"]
# the script's folder from sys.argv[0]: the docs' gallery runs it without __file__
DATA = Path(sys.argv[0]).parent / "data" / "bike_sharing" / "hour_february.csv"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="80 hours instead of 300")
    n = 80 if parser.parse_args().quick else 300
    hours = pd.read_csv(DATA).sample(n, random_state=1)
    x = hours[INPUTS].to_numpy(float)
    x = (x - x.mean(0)) / x.std(0)  # standardized outside the model: keeps R-sens local
    counts = hours["cnt"].to_numpy()

    with pm.Model() as model:
        ls = pm.InverseGamma("ls", 3, 3, shape=len(INPUTS))
        eta = pm.HalfNormal("eta", 2)
        mean = pm.gp.mean.Constant(np.log(counts.mean()))
        gp = pm.gp.Latent(mean_func=mean, cov_func=eta**2 * pm.gp.cov.ExpQuad(len(INPUTS), ls=ls))
        f = gp.prior("f", X=x)
        pm.Poisson("cnt", mu=pm.math.exp(f), observed=counts)
        idata = pm.find_MAP(return_inferencedata=True, jitter=False, progressbar=False)

    predictive = pm_sens.Predictive.from_gp(gp, likelihood="poisson", feature_names=INPUTS)
    idata = pm_sens.sensitivity(
        idata, model, predictive=predictive, family="poisson", interactions=True
    )
    table = pm_sens.summary(idata)
    print(f"\nInputs ranked by R-sens (Poisson GP at its MAP, {n} hours):")
    print(table[table.variable == "rsens"].to_string(index=False, float_format="{:.3f}".format))
    print("\nStrongest pairwise interactions (R-sens2):")
    pairs = table[table.variable == "rsens2"].head(5)
    print(pairs.to_string(index=False, float_format="{:.3f}".format))
    save(pm_sens.plot_interactions(idata), "gp_poisson_interactions")
    save(pm_sens.plot_local(idata, color_by="workingday"), "gp_poisson_local")


if __name__ == "__main__":
    main()

"""
bambi workflow: radon in Minnesota homes, from formula to ranked inputs.
========================================================================

The classic multilevel radon model written as a bambi formula: log radon in a
house depends on the floor it was measured on (basement or first floor, a
categorical term), its county's log soil uranium (numeric) and a county
intercept ``(1 | county)``. pm_sens takes the built bambi model as it is; the
county and the floor get a level sensitivity (how far the predictive moves
when the house is put in another county, on another floor), uranium a rate
per unit of log uranium. ``summary(scale="sd")`` puts the rate on the scale
of a typical change (one sd across houses) to compare it with the levels.

Data: examples/data/radon (EPA survey via Gelman & Hill 2007; see its README).

Run: .venv/bin/python examples/bambi_radon.py [--quick]
"""

import sys
from pathlib import Path

import bambi as bmb
import pandas as pd
from _figures import save

import pm_sens

# the script's folder from sys.argv[0]: the docs' gallery runs it without __file__
DATA = Path(sys.argv[0]).parent / "data" / "radon" / "radon_mn.csv"


def main(quick=False):
    data = pd.read_csv(DATA)
    model = bmb.Model("log_radon ~ floor + log_uranium + (1 | county)", data)
    draws = 200 if quick else 1000
    idata = model.fit(draws=draws, tune=draws, chains=2, random_seed=11, progressbar=False)

    idata = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)
    table = pm_sens.summary(idata)
    print("R-sens per posterior draw (posterior mean and 89% interval):")
    print(table.to_string(index=False, float_format="{:.3f}".format))
    print("\nThe same, uranium scaled to a change of one sd across houses:")
    scaled = pm_sens.summary(idata, scale="sd")
    print(scaled.to_string(index=False, float_format="{:.3f}".format))

    levels = idata["sensitivity"]["levels_floor"].mean(["chain", "draw"])
    basement = data["floor"] == "basement"
    print(
        "\nMoving a house between floors moves its predictive by sqrt(2 KL) = "
        f"{float(levels.isel(floor_level=1)[basement.to_numpy()].mean()):.3f} on average"
    )
    save(pm_sens.plot_importance(idata, scale="sd"), "bambi_radon_importance")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)

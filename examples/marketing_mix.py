"""
A marketing-mix model from pymc-marketing: which channels matter, beside its own contributions
==============================================================================================

Generated data (the set-up of pymc-marketing's MMM example): two years of weekly
spend on two channels, carried over by a geometric adstock (x1 decays slowly, x2
fast) and saturated by a logistic curve (x2 saturates early), two one-week
events, a trend and a yearly cycle. pymc-marketing's ``MMM`` is fitted as its
docs fit it. pm_sens then reads the fitted ``MMM`` itself (``pip install
pm_sens[marketing]``):

- ``sensitivity`` (draw mode): each channel's and control's importance for the
  predictive distribution, with a posterior interval. The adstock makes a
  week's spend move the following weeks too, so a week's R-sens is that of the
  joint predictive of all weeks;
- ``permutation_importance``: how much predictive entropy (split into
  aleatoric and epistemic) and fit each input carries, its weeks permuted in
  blocks of the adstock's length;
- ``partial_dependence``: the response curve of each channel, every week's spend
  set to one value (the long-run effect of a steady budget, carry-over
  included);
- ``integrated_gradients`` from zero spend: each channel's total attribution,
  which must equal pymc-marketing's channel contribution summed over the weeks,
  draw by draw (the model is additive over channels).

The likelihood observes the target divided by ``target_scale`` (pymc-marketing
scales it): the mean, the PDP and the attributions are in those units; the
example multiplies them back to sales.

Run: .venv-marketing/bin/python examples/marketing_mix.py [--quick]
(``bash scripts/venv.sh .venv-marketing test,marketing`` makes that environment;
pymc-marketing 1.3 needs PyMC 6.3.)
"""

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from _figures import save
from pymc_marketing.mmm import GeometricAdstock, LogisticSaturation
from pymc_marketing.mmm.mmm import MMM

import pm_sens

CHANNELS = ["x1", "x2"]
CONTROLS = ["event_1", "event_2", "t"]
L_MAX = 8


def _adstock(x, alpha):
    weights = alpha ** np.arange(L_MAX)
    return np.convolve(x, weights / weights.sum())[: len(x)]


def _logistic(x, lam):
    return (1 - np.exp(-lam * x)) / (1 + np.exp(-lam * x))


def generate(n_weeks=104, seed=42):
    """Weekly data and the true contribution of each channel (in sales)."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"date_week": pd.date_range("2022-01-03", periods=n_weeks, freq="W-MON")})
    x1 = rng.uniform(size=n_weeks)
    frame["x1"] = np.where(x1 > 0.9, x1, x1 / 2)
    x2 = rng.uniform(size=n_weeks)
    frame["x2"] = np.where(x2 > 0.8, x2, 0)
    frame["event_1"] = (frame.date_week == "2022-05-09").astype(float)
    frame["event_2"] = (frame.date_week == "2023-09-11").astype(float)
    frame["t"] = np.arange(n_weeks, dtype=float)
    truth = pd.DataFrame(
        {
            "x1": 3.0 * _logistic(_adstock(frame.x1 / frame.x1.max(), 0.4), 4.0),
            "x2": 2.0 * _logistic(_adstock(frame.x2 / frame.x2.max(), 0.2), 3.0),
        }
    )
    season = 0.5 * np.sin(2 * np.pi * frame.date_week.dt.dayofyear / 365.25)
    sales = (
        2.0 + (frame.t + 10) ** 0.3 / 4 + season + truth.sum(1)
        + 1.5 * frame.event_1 + 2.5 * frame.event_2 + rng.normal(0, 0.25, n_weeks)
    )  # fmt: skip
    frame["y"] = 1000 * sales
    return frame, 1000 * truth


def fit(frame, draws):
    """pymc-marketing's MMM, fitted as its docs fit it."""
    mmm = MMM(
        date_column="date_week",
        channel_columns=CHANNELS,
        control_columns=CONTROLS,
        adstock=GeometricAdstock(l_max=L_MAX),
        saturation=LogisticSaturation(),
        yearly_seasonality=2,
    )
    start = time.perf_counter()
    mmm.fit(
        frame.drop(columns="y"), frame["y"], chains=2, cores=2, draws=draws, tune=draws,
        target_accept=0.9, random_seed=7, progressbar=False,
    )  # fmt: skip
    return mmm, time.perf_counter() - start


def interval(values):
    """'mean [5%, 95%]' over the draws."""
    low, high = np.quantile(values, [0.05, 0.95])
    return f"{values.mean():8.1f} [{low:8.1f}, {high:8.1f}]"


def compare_contributions(mmm, truth, scale):
    """pm_sens's IG from zero spend against pymc-marketing's channel contributions."""
    ig = pm_sens.integrated_gradients(
        mmm.idata, mmm, inputs=["channel_data"], baseline=0.0, progressbar=False,
        extend_inferencedata=False,
    )["attribution"]["ig"]  # fmt: skip
    ig = ig.sum("date").stack(sample=("chain", "draw")).transpose("feature", "sample") * scale
    contributions = mmm.idata.posterior["channel_contribution"].sum("date")
    contributions = contributions.stack(sample=("chain", "draw")).transpose("channel", "sample")
    contributions = contributions * scale
    print("\nEach channel's effect on total sales over the two years (mean [90% interval]):")
    print(f"  {'channel':8} {'pm_sens IG from zero spend':>30} {'pymc-marketing contribution':>31}"
          f" {'true':>8}")  # fmt: skip
    for k, channel in enumerate(CHANNELS):
        print(f"  {channel:8} {interval(ig.values[k]):>30} {interval(contributions.values[k]):>31}"
              f" {truth[channel].sum():8.1f}")  # fmt: skip
    gap = np.abs(ig.values - contributions.values).max()
    print(f"  largest difference over draws and channels: {gap:.1e} (sales)")


def print_response_curves(idata, scale):
    """Each channel's mean PDP in sales, at every fifth spend of its grid."""
    curve = idata["partial_dependence"]["mean_pdp"].mean(("chain", "draw")) * scale
    grid = idata["partial_dependence"]["grid_value"]
    print("\nResponse curves: mean weekly sales (posterior mean) with every week's spend at")
    for channel in CHANNELS:
        spend = grid.sel(feature=channel).values[::5]
        sales = curve.sel(feature=channel).values[::5]
        points = ", ".join(f"{s:.2f}: {v:.0f}" for s, v in zip(spend, sales, strict=True))
        print(f"  {channel}: {points}")


def in_sales(idata, scale):
    """A copy of ``idata`` whose response curves are in sales (the model's are scaled)."""
    curves = idata["partial_dependence"].to_dataset()
    for name in ("mean_pdp", "mean_ice"):
        curves[name] = curves[name] * scale
    copy = idata.copy()
    copy["partial_dependence"] = curves
    return copy


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer draws")
    quick = parser.parse_args().quick
    warnings.filterwarnings("ignore", category=UserWarning)
    frame, truth = generate()
    mmm, fit_seconds = fit(frame, 150 if quick else 500)
    scale = float(mmm.model["target_scale"].get_value())

    start = time.perf_counter()
    idata = pm_sens.sensitivity(mmm.idata, mmm, mode="draw", progressbar=False)
    idata = pm_sens.permutation_importance(idata, mmm, random_seed=1, progressbar=False)
    # response curves from no spend to the largest weekly spend (x2 is mostly 0: its
    # quantiles, the default grid, would be one value)
    spends = {channel: np.linspace(0, frame[channel].max(), 21) for channel in CHANNELS}
    idata = pm_sens.partial_dependence(
        idata, mmm, inputs=["channel_data"], grid=spends, progressbar=False
    )
    seconds = time.perf_counter() - start
    print("Importance of each input for the predictive distribution (R-sens, draw mode):")
    table = pm_sens.summary(idata, group="sensitivity", scale="sd")
    print(table.to_string(index=False, float_format="{:.3f}".format))
    print("\nPermutation importance (entropy split, and the fit):")
    pfi = pm_sens.summary(idata, group="permutation_importance")
    print(pfi.to_string(index=False, float_format="{:.4f}".format))

    print_response_curves(idata, scale)
    compare_contributions(mmm, truth, scale)
    print(f"\npm_sens's three calls took {seconds:.1f} s; the fit {fit_seconds:.1f} s")

    save(pm_sens.plot_importance(idata, scale="sd"), "marketing_importance")
    save(pm_sens.plot_permutation_importance(idata), "marketing_permutation_importance")
    save(pm_sens.plot_partial_dependence(in_sales(idata, scale)), "marketing_response_curves")


if __name__ == "__main__":
    main()

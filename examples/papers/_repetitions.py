"""What the reproductions share: the 95 % interval of a mean over repetitions, where
figures go, and the command line."""

import sys
import time
from pathlib import Path

import numpy as np

FIGURES = Path(__file__).parent.parent / "figures"


def interval(values):
    """Mean over the first axis (repetitions) and the half-width of its 95 % interval
    (1.96 standard errors; nan for a single repetition)."""
    values = np.asarray(values)
    if len(values) < 2:  # a single repetition (a quick run) has no interval
        return values.mean(0), np.full(values.shape[1:], np.nan)
    half = 1.96 * values.std(0, ddof=1) / np.sqrt(len(values))
    return values.mean(0), half


def save(fig, name):
    """Save a figure as examples/figures/{name}.png and say where."""
    FIGURES.mkdir(exist_ok=True)
    path = FIGURES / f"{name}.png"
    fig.savefig(path)
    print(f"saved {path}")


def command_line(run, print_table, save_figure, quick, full):
    """Run ``quick`` (with ``--quick``) or ``full`` repetitions, print the table, save
    the figure and the run time; return the results."""
    start = time.perf_counter()
    results = run(quick if "--quick" in sys.argv else full)
    print_table(results)
    save_figure(results)
    print(f"\nfinished in {time.perf_counter() - start:.0f} s")
    return results

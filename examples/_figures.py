"""Where the examples save their figures (examples/figures, not tracked)."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

FIGURES = Path(__file__).parent / "figures"


def save(plot_collection, name):
    """Save a PlotCollection as examples/figures/<name>.png and say where."""
    FIGURES.mkdir(exist_ok=True)
    path = FIGURES / f"{name}.png"
    plot_collection.savefig(path, bbox_inches="tight")
    print(f"saved {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}")

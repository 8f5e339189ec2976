"""Plots of pm_sens results with arviz-plots; each returns a ``PlotCollection``.

Needs the ``plots`` extra (``pip install pm_sens[plots]``).
"""

from pm_sens.plots.importance_plot import plot_importance
from pm_sens.plots.interactions_plot import plot_interactions
from pm_sens.plots.local_plot import plot_local

__all__ = ["plot_importance", "plot_interactions", "plot_local"]

"""Plots of pm_sens results with arviz-plots; each returns a ``PlotCollection``.

Needs the ``plots`` extra (``pip install pm_sens[plots]``).
"""

from pm_sens.plots.importance_plot import plot_importance
from pm_sens.plots.interactions_plot import plot_interactions
from pm_sens.plots.local_plot import plot_local
from pm_sens.plots.partial_dependence_plot import plot_partial_dependence
from pm_sens.plots.permutation_importance_plot import plot_permutation_importance

__all__ = [
    "plot_importance",
    "plot_interactions",
    "plot_local",
    "plot_partial_dependence",
    "plot_permutation_importance",
]

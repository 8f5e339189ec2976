"""pm_sens: which inputs matter to a PyMC model's posterior predictive, and where."""

from pm_sens._version import __version__
from pm_sens.api import sensitivity
from pm_sens.attribution import integrated_gradients
from pm_sens.graph.predictive import Predictive
from pm_sens.summary import importance, summary
from pm_sens.uncertainty import partial_dependence, permutation_importance

#: The plots, loaded (with arviz-plots) on first use.
_PLOTS = (
    "plot_importance",
    "plot_interactions",
    "plot_local",
    "plot_partial_dependence",
    "plot_permutation_importance",
)

__all__ = [
    "Predictive",
    "__version__",
    "importance",
    "integrated_gradients",
    "partial_dependence",
    "permutation_importance",
    "sensitivity",
    "summary",
    *_PLOTS,
]


def __getattr__(name):
    """Load the plots (and arviz-plots) on first use."""
    if name in _PLOTS:
        from pm_sens import plots

        return getattr(plots, name)
    raise AttributeError(f"module 'pm_sens' has no attribute {name!r}")


def __dir__():
    """The module's names with the plots, so tab completion offers them."""
    return sorted(set(globals()) | set(_PLOTS))

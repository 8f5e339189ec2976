"""pm_sens: which inputs matter to a PyMC model's posterior predictive, and where.

Every public name is loaded on first use, so ``import pm_sens`` (and its math
layers, ``pm_sens.families`` and ``pm_sens.measures``) imports no PyMC,
PyTensor, xarray or optional extra.
"""

import logging
from importlib import import_module

from pm_sens._version import __version__

# info messages (e.g. which NumPy arrays were taken as inputs) show by default,
# as PyMC's do, unless the application configured logging itself
_log = logging.getLogger(__name__)
if not logging.root.handlers and not _log.handlers:
    _log.setLevel(logging.INFO)
    _log.addHandler(logging.StreamHandler())

#: public name -> the module that defines it, imported on first use
_PUBLIC = {
    "Predictive": "pm_sens.graph.predictive",
    "bspline_basis": "pm_sens.graph.model.design",
    "get_options": "pm_sens.options",
    "importance": "pm_sens.ranking.importance",
    "integrated_gradients": "pm_sens.local.integrated_gradients",
    "partial_dependence": "pm_sens.uncertainty.partial_dependence",
    "permutation_importance": "pm_sens.uncertainty.permutation_importance",
    "sensitivity": "pm_sens.local.sensitivity",
    "set_options": "pm_sens.options",
    "summary": "pm_sens.ranking.summary",
    # the plots load arviz-plots
    "plot_importance": "pm_sens.plots",
    "plot_interactions": "pm_sens.plots",
    "plot_local": "pm_sens.plots",
    "plot_partial_dependence": "pm_sens.plots",
    "plot_permutation_importance": "pm_sens.plots",
}

__all__ = ["__version__", *sorted(_PUBLIC)]


def __getattr__(name):
    """Load a public name's module on first use."""
    if name in _PUBLIC:
        value = getattr(import_module(_PUBLIC[name]), name)
        globals()[name] = value  # once loaded, a plain attribute
        return value
    raise AttributeError(f"module 'pm_sens' has no attribute {name!r}")


def __dir__():
    """The module's names with the ones not loaded yet, so tab completion offers them."""
    return sorted(set(globals()) | set(_PUBLIC))

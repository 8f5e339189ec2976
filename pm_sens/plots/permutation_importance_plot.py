"""plot_permutation_importance: entropy (by component) and likelihood PFI side by side."""

from pm_sens.plots.importance_plot import plot_importance


def plot_permutation_importance(dt, *, var_names=None, ci_prob=None, **kwargs):
    """Plot entropy-PFI (total, aleatoric, epistemic) and likelihood-PFI side by side.

    The mean over repeats with the spread over repeats as the interval, features
    sorted per panel; a thin front end to :func:`pm_sens.plot_importance` on the
    ``permutation_importance`` group.

    Parameters
    ----------
    dt : xarray.DataTree
        Holds the group written by :func:`pm_sens.permutation_importance`.
    var_names : str or list of str, optional
        ``"entropy_pfi"`` and/or ``"likelihood_pfi"``; default both.
    ci_prob : float, optional
        Probability of the interval over repeats.
    **kwargs
        Passed to :func:`pm_sens.plot_importance` (``backend``, ``visuals``, …).

    Returns
    -------
    arviz_plots.PlotCollection

    Examples
    --------
    With the quickstart's ``model`` (``examples/quickstart.py``) and its ``idata``:

    >>> import pm_sens
    >>> idata = pm_sens.permutation_importance(idata, model)
    >>> pc = pm_sens.plot_permutation_importance(idata)
    """
    return plot_importance(
        dt, group="permutation_importance", var_names=var_names, ci_prob=ci_prob, **kwargs
    )

"""The choice among front ends: the PyMC model behind what the user passed."""

import weakref

import pymc as pm

from pm_sens.graph.frontends.bambi import is_bambi_model, rebuild
from pm_sens.graph.frontends.dims import tensor_model
from pm_sens.graph.frontends.marketing import is_marketing_model, marketing_model

_BAMBI_MODELS = weakref.WeakKeyDictionary()


def pymc_model_for(model):
    """The PyMC model to analyse, and the front end it came from (or None).

    ``model`` itself, or lowered to tensors if written with ``pymc.dims``
    (`pm_sens.graph.frontends.dims`); a bambi model rebuilt on ``pm.Data`` inputs
    (`pm_sens.graph.frontends.bambi`); a pymc-marketing MMM's model
    (`pm_sens.graph.frontends.marketing`). Each is built once per model.
    """
    if is_marketing_model(model):  # its PyMC model is lowered once (`tensor_model`)
        frontend = marketing_model(model)
        return frontend.model, frontend
    if is_bambi_model(model):
        if model not in _BAMBI_MODELS:
            _BAMBI_MODELS[model] = rebuild(model)
        frontend = _BAMBI_MODELS[model]
        return frontend.model, frontend
    if not isinstance(model, pm.Model):
        raise TypeError(
            f"model={type(model).__name__} is not valid: give the fitted pymc.Model (or "
            "bambi.Model, or pymc-marketing MMM); the posterior comes first, as in "
            "pm_sens.sensitivity(idata, model)"
        )
    return tensor_model(model), None

"""A pymc-marketing marketing-mix model (``MMM``) as the PyMC model it builds.

pymc-marketing builds its ``MMM`` with ``pymc.dims``: the media spend is a
``pm.Data`` table ``channel_data`` (date × channel), the controls another
(``control_data``, date × control); inside the model the spend is divided by
``channel_scale``, carried over by the adstock (a convolution over the last
``l_max`` weeks) and saturated, and the likelihood observes the target divided
by ``target_scale``. pm_sens analyses that model as it is (lowered to tensors by
`pm_sens.graph.frontends.dims`): each channel and control is a feature, a date is a
point, and the adstock makes the model's rows depend on earlier rows' inputs,
which pm_sens finds and measures with the joint predictive of all dates.

The predictive is the model's, so its outcome is the *scaled* target: the
predictive mean, PDP and attributions are in units of the model's
``target_scale`` container (multiply by it for sales); divergences, R-sens and
differences of entropies do not depend on it.
"""

from dataclasses import dataclass

import pymc as pm

from pm_sens.graph.frontends.dims import tensor_model

#: the data containers pymc-marketing's MMM builds for the spend and the controls
MARKETING_INPUTS = ("channel_data", "control_data")


@dataclass
class MarketingModel:
    """The PyMC model of a pymc-marketing MMM, and its default inputs."""

    model: pm.Model
    #: the channels' and controls' containers: the inputs by default
    default_inputs: list
    #: a bambi model's renamed posterior variables; an MMM has none
    posterior_names: dict | None = None

    def points(self, points):
        """Points as the user gave them: an MMM's inputs are its own containers."""
        return points


def is_marketing_model(obj) -> bool:
    """Whether ``obj`` is a pymc-marketing model (without importing pymc-marketing)."""
    return any(cls.__module__.startswith("pymc_marketing") for cls in type(obj).__mro__)


def marketing_model(mmm):
    """`MarketingModel` for a built pymc-marketing ``MMM``.

    Parameters
    ----------
    mmm : pymc_marketing.mmm.MMM
        Built (``mmm.build_model(X, y)``) or fitted (``mmm.fit(X, y)``).

    Returns
    -------
    MarketingModel
    """
    model = getattr(mmm, "model", None)
    if not isinstance(model, pm.Model):
        raise ValueError(
            f"model is a pymc-marketing {type(mmm).__name__} that is not built; call "
            "mmm.fit(X, y) (or mmm.build_model(X, y) to use a posterior you have) first"
        )
    if "channel_data" not in model.named_vars:
        raise ValueError(
            f"model is a pymc-marketing {type(mmm).__name__}, which pm_sens does not know: "
            "it reads the MMM class (pymc_marketing.mmm.MMM), whose spend is the container "
            "'channel_data'; pass the PyMC model (the object's .model) instead"
        )
    if getattr(mmm, "dims", ()):
        raise ValueError(
            f"model is a pymc-marketing MMM of a panel (dims={tuple(mmm.dims)}), which "
            "pm_sens does not read yet: its outcome is a (date, "
            f"{', '.join(mmm.dims)}) table whose cells depend on earlier dates; fit one MMM "
            "per panel cell (e.g. per geo) and analyse each"
        )
    lowered = tensor_model(model)
    inputs = [name for name in MARKETING_INPUTS if name in lowered.named_vars]
    return MarketingModel(lowered, inputs)

"""What a local request may ask for: its methods, and the family of each mode.

The family the predictive is matched to in each mode is checked against the
likelihood; inputs that act only through steps get the KL over a finite step.
"""

from pm_sens import families
from pm_sens._core.arguments import as_name_list, check_choice
from pm_sens.graph.frontends.piecewise import piecewise_constant_inputs
from pm_sens.graph.likelihoods.closed_forms import VECTOR_SUPPORTS, default_moment_family

METHODS = ("rsens", "kl", "var", "ead", "aed", "eah", "aeh")


def matched_family(predictive, mode, family):
    """The family of each draw's predictive (draw mode) or the mixture's match (moment).

    ``family=`` overrides the moment-matched one and must fit the likelihood's support.
    """
    likelihood = predictive.likelihood
    if mode == "draw":
        if family is not None:
            raise ValueError(
                f"family={family!r} is not valid with mode='draw': the per-draw family is "
                f"the likelihood's ({likelihood.name}); family= overrides the moment-matched one"
            )
        return likelihood.draw_family
    if family is None:
        return default_moment_family(likelihood)
    matched = families.get_moment_family(family)
    fits = {
        n: f.support == likelihood.support
        and (f.second_moment != "scale2" or likelihood.heavy_tails is not None)
        for n, f in families.MOMENT_FAMILIES.items()
    }
    if not fits[family]:
        raise ValueError(
            f"family={family!r} does not fit the {likelihood.name} likelihood, whose values "
            f"are {likelihood.support}; valid: {sorted(n for n, ok in fits.items() if ok)}"
        )
    return matched


def check_methods(method, interactions):
    """``method=`` as a list, with the second-order methods ``interactions=True`` implies."""
    methods = as_name_list("method", method)
    for m in methods:
        check_choice("method", m, METHODS)
    second = [m for m in methods if m in ("eah", "aeh")]
    if second and not interactions:
        raise ValueError(f"method={second} needs interactions=True (they are second-order)")
    if interactions:
        implied = {"rsens": "rsens2", "ead": "eah", "aed": "aeh"}
        methods += [implied[m] for m in methods if m in implied]
    return list(dict.fromkeys(methods))


#: the methods that read the predictive's mean (one number per point)
MEAN_METHODS = ("var", "ead", "aed", "eah", "aeh")


def check_methods_fit(methods, likelihood):
    """Refuse the mean's methods for a vector outcome, whose mean is a vector per point."""
    of_mean = [m for m in methods if m in MEAN_METHODS]
    if of_mean and likelihood.support in VECTOR_SUPPORTS:
        raise ValueError(
            f"method={of_mean} measure the predictive mean, but the {likelihood.name} "
            "likelihood's outcome is a vector per point; use method='rsens' or 'kl' (the "
            "whole predictive), or integrated_gradients / partial_dependence(kind='mean'), "
            "which give each outcome's mean (an 'outcome' dim)"
        )


def check_methods_joint(methods, dependence, ctx):
    """Refuse what has no joint version yet for a model whose rows depend on other rows.

    R-sens, R-sens2 and the finite-difference KL are defined on the joint
    predictive of the series (`pm_sens.graph.model.dependence`); the measures of the
    mean at each point, categorical inputs and vector outcomes are not yet.
    """
    if dependence.local:
        return
    refused = [m for m in methods if m not in ("rsens", "rsens2", "kl")]
    causes = []
    if refused:
        causes.append(f"method={refused}")
    if ctx.levels:
        causes.append(f"the categorical input(s) {[level.label for level in ctx.levels]}")
    if ctx.predictive.outcome_shape:
        causes.append("a vector outcome per point")
    if causes:
        raise ValueError(
            f"{' and '.join(causes)}: not yet available for a model whose rows depend on "
            f"other rows' inputs ({dependence.describe()}). sensitivity() gives R-sens and "
            "KL of the joint predictive (method=['rsens', 'kl'], with interactions=True "
            "R-sens2; the float inputs named in inputs=); integrated_gradients, "
            "partial_dependence and permutation_importance take every input"
        )


#: the methods that differentiate the predictions
DERIVATIVE_METHODS = ("rsens", "rsens2", "ead", "aed", "eah", "aeh")
#: ``sensitivity``'s defaults on a model whose inputs act through steps
#: (`stepped_inputs`): the KL over a finite step of 0.1 sd, central
STEP_DEFAULTS = {"method": "kl", "delta": 0.1, "kl_scheme": "central"}


def stepped_inputs(ctx):
    """``{input name: [step, ...]}``: the inputs the predictions see only through steps.

    Trees (BART), rounding, comparisons (`pm_sens.graph.frontends.piecewise`): their
    derivatives are zero almost everywhere.
    """
    steps = piecewise_constant_inputs(ctx.predictive.parameter_list, ctx.inputs)
    return {x.name: names for x, names in steps.items()}


def check_differentiable(asked, stepped):
    """Refuse what needs derivatives when some inputs act only through steps.

    ``asked``: its name (a function, ``method=[...]``).
    """
    if not asked or not stepped:
        return
    through = sorted({step for names in stepped.values() for step in names})
    raise ValueError(
        f"{asked} need the derivatives of the predictions, but they depend on "
        f"{sorted(stepped)} only through {' and '.join(through)}, piecewise constant: "
        "the derivatives are zero almost everywhere, so these measures would be zero "
        "wherever defined. Use sensitivity(method='kl') (the default for such a model: "
        "the KL over a step of delta=0.1 sd of each input, central), method='var', "
        "permutation_importance or partial_dependence"
    )


def resolve_step_defaults(method, delta, kl_scheme, stepped):
    """``method``, ``delta`` and ``kl_scheme`` where None.

    The KL over a finite step (`STEP_DEFAULTS`) for a model whose inputs act
    through steps, else R-sens with the forward KL's small step.
    """
    defaults = STEP_DEFAULTS if stepped else {"method": "rsens", "delta": 1e-4}
    defaults = {"kl_scheme": "forward", **defaults}
    given = {"method": method, "delta": delta, "kl_scheme": kl_scheme}
    return [defaults[k] if v is None else v for k, v in given.items()]

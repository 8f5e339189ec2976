"""Predictive families: Fisher information in the mean–variance parametrization.

This layer depends on NumPy and SciPy only (no PyMC, no PyTensor): every
function takes arrays with the family's parameters on the last axis and
returns arrays, batched over any leading axes.
"""

from pm_sens.families import (
    bernoulli,
    beta,
    binomial,
    categorical,
    exponential,
    gamma,
    laplace,
    lognormal,
    negative_binomial,
    normal,
    poisson,
    studentt,
)
from pm_sens.families._base import SUPPORTS, Family

#: Families a moment-matched predictive can take (``family=``), by name.
MOMENT_FAMILIES: dict[str, Family] = {
    module.FAMILY.name: module.FAMILY
    for module in (
        normal,
        laplace,
        lognormal,
        gamma,
        exponential,
        beta,
        bernoulli,
        binomial,
        categorical,
        poisson,
        negative_binomial,
    )
}

#: The moment-matched family chosen for each likelihood support (SPEC §2).
DEFAULT_MOMENT_FAMILY = {
    "real": "normal",
    "positive": "gamma",
    "unit": "beta",
    "count": "negative_binomial",
    "binary": "bernoulli",
    "binomial": "binomial",
    "categorical": "categorical",
}

STUDENTT = studentt.FAMILY
NEGATIVE_BINOMIAL_MEAN_ALPHA = Family(
    "negative_binomial",
    "count",
    ("mean", "alpha"),
    negative_binomial.fisher_information_mean_alpha,
    negative_binomial.kl_divergence_mean_alpha,
    negative_binomial.log_density_mean_alpha,
    support_upper=negative_binomial.support_upper_mean_alpha,
)


def get_moment_family(name: str) -> Family:
    """Look up a moment-matching family by name, listing the valid ones on error."""
    try:
        return MOMENT_FAMILIES[name]
    except KeyError:
        raise ValueError(
            f"family={name!r} is not a known family; valid: {sorted(MOMENT_FAMILIES)}"
        ) from None


__all__ = [
    "DEFAULT_MOMENT_FAMILY",
    "MOMENT_FAMILIES",
    "NEGATIVE_BINOMIAL_MEAN_ALPHA",
    "STUDENTT",
    "SUPPORTS",
    "Family",
    "get_moment_family",
]

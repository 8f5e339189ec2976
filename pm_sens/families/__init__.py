"""Predictive families: Fisher information in the mean–variance parametrization.

This layer depends on NumPy and SciPy only (no PyMC, no PyTensor): every
function takes arrays with the family's parameters on the last axis and
returns arrays, batched over any leading axes. ``scipy.stats`` (0.45 s to
import, ``python -X importtime``; PyMC does not import it) is imported inside
the functions that use it: only a call that needs a family's quantiles or
log density pays for it.
"""

from pm_sens.families import (
    bernoulli,
    beta,
    beta_binomial,
    binomial,
    categorical,
    censored_normal,
    censored_weibull,
    dirichlet,
    dirichlet_multinomial,
    exponential,
    gamma,
    gumbel,
    laplace,
    logistic,
    lognormal,
    multinomial,
    mvnormal,
    negative_binomial,
    normal,
    poisson,
    studentt,
    truncated_normal,
    wald,
    weibull,
    zero_modified,
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
} | {
    "studentt": studentt.FAMILY_MATCHED,
    "mvnormal": mvnormal.FAMILY_MATCHED,
    "multinomial": multinomial.FAMILY,
    "dirichlet": dirichlet.FAMILY_MATCHED,
    "dirichlet_multinomial": dirichlet_multinomial.FAMILY_MATCHED,
}

#: The moment-matched family chosen for each likelihood support (docs: explanation/likelihoods.md).
DEFAULT_MOMENT_FAMILY = {
    "real": "normal",
    "positive": "gamma",
    "unit": "beta",
    "count": "negative_binomial",
    "binary": "bernoulli",
    "binomial": "binomial",
    "categorical": "categorical",
    "multivariate": "mvnormal",
    "multinomial": "multinomial",
    "simplex": "dirichlet",
}

STUDENTT = studentt.FAMILY
BETA_BINOMIAL = beta_binomial.FAMILY
CENSORED_NORMAL = censored_normal.FAMILY
CENSORED_WEIBULL = censored_weibull.FAMILY
NEGATIVE_BINOMIAL_MEAN_ALPHA = negative_binomial.FAMILY_MEAN_ALPHA
NORMAL_MEAN_SD = normal.FAMILY_MEAN_SD
GAMMA_MEAN_SHAPE = gamma.FAMILY_MEAN_SHAPE
BERNOULLI_LOGIT = bernoulli.FAMILY_LOGIT
BINOMIAL_LOGIT = binomial.FAMILY_LOGIT
WEIBULL = weibull.FAMILY
GUMBEL = gumbel.FAMILY
LOGISTIC = logistic.FAMILY
TRUNCATED_NORMAL = truncated_normal.FAMILY
WALD = wald.FAMILY
ZERO_INFLATED_POISSON = zero_modified.zero_modified(
    zero_modified.POISSON, "zero_inflated_poisson", hurdle=False
)
ZERO_INFLATED_NEGATIVE_BINOMIAL = zero_modified.zero_modified(
    zero_modified.NEGATIVE_BINOMIAL, "zero_inflated_negative_binomial", hurdle=False
)
HURDLE_POISSON = zero_modified.zero_modified(zero_modified.POISSON, "hurdle_poisson", hurdle=True)
HURDLE_NEGATIVE_BINOMIAL = zero_modified.zero_modified(
    zero_modified.NEGATIVE_BINOMIAL, "hurdle_negative_binomial", hurdle=True
)
HURDLE_LOGNORMAL = zero_modified.continuous_hurdle(lognormal.FAMILY, "hurdle_lognormal")
HURDLE_GAMMA = zero_modified.continuous_hurdle(gamma.FAMILY_MEAN_SHAPE, "hurdle_gamma")


def get_moment_family(name: str) -> Family:
    """Look up a moment-matching family by name, listing the valid ones on error."""
    try:
        return MOMENT_FAMILIES[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"family={name!r} is not a known family; valid: {sorted(MOMENT_FAMILIES)}"
        ) from None


__all__ = [
    "BERNOULLI_LOGIT",
    "BETA_BINOMIAL",
    "BINOMIAL_LOGIT",
    "CENSORED_NORMAL",
    "CENSORED_WEIBULL",
    "DEFAULT_MOMENT_FAMILY",
    "GAMMA_MEAN_SHAPE",
    "GUMBEL",
    "LOGISTIC",
    "MOMENT_FAMILIES",
    "NEGATIVE_BINOMIAL_MEAN_ALPHA",
    "NORMAL_MEAN_SD",
    "HURDLE_GAMMA",
    "HURDLE_LOGNORMAL",
    "HURDLE_NEGATIVE_BINOMIAL",
    "HURDLE_POISSON",
    "STUDENTT",
    "SUPPORTS",
    "TRUNCATED_NORMAL",
    "WALD",
    "WEIBULL",
    "ZERO_INFLATED_NEGATIVE_BINOMIAL",
    "ZERO_INFLATED_POISSON",
    "Family",
    "get_moment_family",
]

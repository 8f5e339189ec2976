"""How a zoo model is declared: a builder, where its form comes from, and what
pm_sens must do with it (work, or refuse with a named error)."""

import zlib
from dataclasses import dataclass, field
from functools import cache

import numpy as np
import pymc as pm
import xarray as xr

#: every zoo model by name
ZOO = {}
#: each zoo model's builder and what it expects, to build it again (`tests.zoo.variants`)
BUILDERS = {}


@dataclass
class ZooCase:
    """A model with known posterior draws, and what to expect of each function.

    ``errors`` maps a function of `tests.zoo.run.FUNCTIONS` to a regular
    expression its error must match (a form not supported yet).
    """

    model: pm.Model
    idata: xr.DataTree
    source: str
    errors: dict = field(default_factory=dict)
    #: functions that fail today, with the bug's description (the test fails
    #: when one of them starts to work, so that the entry is removed)
    known_failures: dict = field(default_factory=dict)
    #: expected level sensitivity, ``f(case, mode) -> {input: (..., N, L) array}``
    levels: object = None
    kl_rtol: float = 1e-4  # R-sens against the central finite-difference KL
    kl_delta: float = 1e-4  # its step, in standard deviations of each input
    #: sensitivity's methods; with R-sens, interactions=True and R-sens equal to the
    #: KL (a model whose inputs act through steps, e.g. BART, has no R-sens)
    methods: tuple = ("rsens", "kl")
    check: object = None  # more checks of the results, ``f(case, state)``
    kwargs: dict = field(default_factory=dict)  # passed to every function
    name: str = ""  # the builder's name, the model's key in ZOO


#: the functions that evaluate the model (the others read their results)
EVALUATING = (
    "sensitivity_moment",
    "sensitivity_draw",
    "permutation_importance",
    "partial_dependence",
    "integrated_gradients",
)


def every_evaluation(what):
    """``{function: what}`` for every function that evaluates the model."""
    return dict.fromkeys(EVALUATING, what)


def zoo_model(source, **expect):
    """Register a builder ``f(rng) -> (model, idata[, keywords])`` under its name."""

    def register(build):
        @cache
        def case():
            # (model, idata), and for some front ends the keywords every call takes
            model, idata, *kwargs = build(
                np.random.default_rng(zlib.crc32(build.__name__.encode()))
            )
            return ZooCase(
                model,
                idata,
                source,
                **expect,
                kwargs=kwargs[0] if kwargs else {},
                name=build.__name__,
            )

        ZOO[build.__name__] = case
        BUILDERS[build.__name__] = (build, expect)
        return build

    return register


def known_posterior(model, *, chains=2, draws=3, seed=1, fixed=None):
    """Posterior group of ``chains × draws`` prior draws (no MCMC), with observed_data.

    ``fixed`` overrides the draws of some variables, as ``{name: array}`` shaped
    (chains, draws, ...).
    """
    # Deterministics too, as pm.sample stores them
    names = [v.name for v in (*model.free_RVs, *model.deterministics)]
    prior = pm.sample_prior_predictive(
        draws=chains * draws,
        model=model,
        var_names=names,
        random_seed=seed,
        compile_kwargs={"mode": "FAST_COMPILE"},
    )["prior"].to_dataset()
    posterior = xr.Dataset(
        {
            name: (
                ("chain", "draw", *var.dims[2:]),
                var.values.reshape(chains, draws, *var.shape[2:]),
            )
            for name, var in prior.data_vars.items()
        },
        coords={c: prior[c] for c in prior.coords if c not in ("chain", "draw")},
    ).assign_coords(chain=np.arange(chains), draw=np.arange(draws))
    for name, values in (fixed or {}).items():
        posterior[name] = (posterior[name].dims, np.asarray(values))
    observed = {}
    for rv in model.observed_RVs:
        value = model.rvs_to_values[rv]
        # a container, a constant, or an expression of containers (pymc-marketing's scaled target)
        data = value.get_value() if hasattr(value, "get_value") else getattr(value, "data", None)
        data = value.eval() if data is None else data
        dims = model.named_vars_to_dims.get(rv.name) or [
            f"{rv.name}_dim_{i}" for i in range(np.ndim(data))
        ]
        observed[rv.name] = (tuple(dims), np.asarray(data))
    return xr.DataTree.from_dict({"posterior": posterior, "observed_data": xr.Dataset(observed)})

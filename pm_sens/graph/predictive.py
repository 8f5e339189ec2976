"""`Predictive`: a likelihood family, its symbolic parameters and the inputs."""

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Variable
from pytensor.graph.replace import graph_replace

from pm_sens.graph.compile.nodes import is_float
from pm_sens.graph.frontends.dims import tensor_model
from pm_sens.graph.frontends.gp import gp_parameters, training_inputs
from pm_sens.graph.frontends.trees import tree_draw_symbols, trees_at_points
from pm_sens.graph.likelihoods.closed_forms import (
    LIKELIHOODS_BY_NAME,
    Likelihood,
    closed_form_likelihood,
    is_constant,
)
from pm_sens.graph.likelihoods.generic.likelihood import GenericLikelihood
from pm_sens.graph.likelihoods.multivariate import outcome_labels, vector_outcome
from pm_sens.graph.likelihoods.on_a_base import (
    censored_likelihood,
    zero_modified_likelihood,
)
from pm_sens.graph.model.cumulative import cumulative_products_as_chains
from pm_sens.graph.model.data_statistics import hold_data_statistics
from pm_sens.graph.model.design import design_from_raw_inputs
from pm_sens.graph.model.lagged import lagged_series
from pm_sens.graph.model.per_row import (
    column_labels,
    numpy_group_indices,
    per_row_constants,
    per_row_variables,
)
from pm_sens.graph.model.point_reads import per_point_group_inputs, per_point_observation_rows
from pm_sens.graph.model.queries import (
    data_containers,
    data_value,
    free_variables,
    observed_ancestors,
    observed_variable,
    per_point_arithmetic_integers,
)
from pm_sens.graph.model.transposed import transposed_containers
from pm_sens.graph.model.wide_table import cells_of_wide_table, row_coordinate


def _generic_likelihood(rv, model):
    """A likelihood without closed forms: PyMC's logp by summation or quadrature."""
    generic = GenericLikelihood(rv, {*model.free_RVs, *model.observed_RVs})
    return Likelihood(
        name=generic.name,
        support=generic.support,
        parameter_names=generic.labels,
        draw_family=generic.family(),
        draw_parameters=lambda *params: list(params),
        moments=None,
        mean=generic.pymc_mean(),
        route=generic.route,
        generic=generic,
    ), generic.per_point_parameters()


def likelihood_of(rv, model, vector):
    """How pm_sens reads the observed ``rv``, and its parameters (float64): the one dispatch.

    In order: a vector outcome per point (``vector``: `vector_outcome`'s
    ``(likelihood, components)``, else None); the closed forms of the
    distribution's op (`LIKELIHOODS`, where its fixed parameters are
    constants); a zero-modified or censored law
    on a base with closed forms; else PyMC's log density, by summation
    or quadrature (`GenericLikelihood`).
    """
    op = rv.owner.op
    if vector is not None:
        likelihood, components = vector
        params = components(op.dist_params(rv.owner))
    else:
        likelihood, params = (
            closed_form_likelihood(rv)
            or zero_modified_likelihood(rv)
            or censored_likelihood(rv)
            or _generic_likelihood(rv, model)
        )
    # in float64: PyMC keeps a number such as a shape of 2.0 as a float32 constant,
    # and an expression of it alone (the Gamma entropy's ψ(α)) would be computed so
    return likelihood, [p if p.dtype == "float64" else pt.cast(p, "float64") for p in params]


def _in_model_order(model, inputs, copies):
    """Containers and integer containers' float copies in the model's order.

    The float containers among ``inputs`` and the ``copies`` of integer ones
    (`per_point_arithmetic_integers`, ``{copy: (container, rows)}``) in the
    model's order of containers, the other inputs after them as given: a time
    index is the same feature, in the same place, whether it holds ints or floats.
    """
    position = {c: k for k, c in enumerate(model.data_vars)}
    containers = [*(i for i in inputs if i in position), *copies]
    ordered = sorted(containers, key=lambda v: position[copies[v][0] if v in copies else v])
    return ordered + [i for i in inputs if i not in position]


def _checked_parameters(parameters):
    """``{name: expression}`` with every expression a tensor (numbers allowed)."""
    if not isinstance(parameters, dict) or not all(isinstance(k, str) for k in parameters):
        raise TypeError(
            f"parameters={parameters!r} is not valid; give a dict {{name: PyTensor expression}}"
        )
    checked = {}
    for name, value in parameters.items():
        try:
            checked[name] = pt.as_tensor_variable(value)
        except (TypeError, ValueError, NotImplementedError):
            raise TypeError(
                f"parameters[{name!r}]={value!r} is not valid; give a PyTensor expression "
                "of the model's variables and inputs, or a number"
            ) from None
    return checked


def _checked_inputs(inputs):
    """A list of PyTensor variables (pm.Data containers or symbolic tensors)."""
    valid = isinstance(inputs, list | tuple) and all(
        isinstance(x, Variable) and hasattr(x, "dtype") for x in inputs
    )
    if not valid or not inputs:
        raise TypeError(
            f"inputs={inputs!r} is not valid; give a non-empty list of pm.Data containers or "
            "symbolic PyTensor tensors (the variables, not their names)"
        )
    return list(inputs)


def _parameters_in_op_order(likelihood, parameters):
    given = likelihood.defaults | dict(parameters)
    out = {}
    for alias, (target, build) in likelihood.aliases.items():
        if alias in given and target not in given:
            out[target] = build(given)
    consumed = {a for a, (t, _) in likelihood.aliases.items() if t in out}
    out.update({k: v for k, v in given.items() if k not in consumed})
    valid = set(likelihood.parameter_names) | set(likelihood.aliases)
    unknown = sorted(set(given) - valid)
    missing = [n for n in likelihood.parameter_names if n not in out]
    if unknown or missing:
        raise ValueError(
            f"parameters={sorted(parameters)} do not describe a {likelihood.name} likelihood: "
            f"expected {list(likelihood.parameter_names)}"
            + (f" (or the aliases {sorted(likelihood.aliases)})" if likelihood.aliases else "")
        )
    params = {n: pt.as_tensor_variable(out[n]) for n in likelihood.parameter_names}
    for name in likelihood.constant:
        if not is_constant(params[name]):
            raise ValueError(
                f"parameters[{name!r}]={params[name]} is not a constant: a {likelihood.name} "
                f"predictive holds {name!r} fixed (its closed forms); give numbers or a "
                "NumPy array, or leave predictive= out so that the model's own likelihood "
                "is read (through PyMC's logp where such a parameter varies)"
            )
    return list(params.values())


class Predictive:
    """The per-draw predictive distribution that sensitivities are computed from.

    Parameters
    ----------
    family : str
        The likelihood family of one posterior draw, by name: one of
        ``"normal"``, ``"studentt"``, ``"laplace"``, ``"lognormal"``,
        ``"gamma"``, ``"exponential"``, ``"beta"``, ``"bernoulli"``,
        ``"binomial"``, ``"categorical"``, ``"poisson"``, ``"negative_binomial"``,
        ``"beta_binomial"``, ``"weibull"``, ``"gumbel"``, ``"logistic"``,
        ``"truncated_normal"`` (``lower``/``upper``, constants, default
        unbounded), ``"wald"`` (``mu``, ``lam`` or ``phi``; ``alpha``, a
        constant shift, default 0).
    parameters : dict of str to TensorVariable
        The family's parameters as PyTensor expressions of the model's free
        random variables and of the inputs, with PyMC's parameter names
        (e.g. ``{"mu": ..., "sigma": ...}``; also ``logit_p`` for Bernoulli,
        ``alpha``/``beta`` for Gamma, ``lam`` for Exponential, ``mu``/``alpha``
        for the negative binomial). Per point they must have one value (or, for
        the categorical, one probability vector).
    inputs : list of Variable
        The input variables that can be differentiated (``pm.Data`` containers
        or symbolic tensors); rows are points.
    var_name : str, optional
        The observed variable this predictive stands for, if any.
    defaults : dict, optional
        Default values (the points used when ``points`` is not given) of inputs
        that are symbolic tensors rather than ``pm.Data`` containers.
    feature_names : list of str, optional
        Labels of the columns of a single 2-D input.

    Examples
    --------
    >>> import pymc as pm, numpy as np, pm_sens
    >>> with pm.Model() as model:
    ...     x = pm.Data("x", np.linspace(-1, 1, 20))
    ...     b = pm.Normal("b")
    ...     y = pm.Poisson("y", mu=pm.math.exp(b * x), observed=np.ones(20))
    >>> pred = pm_sens.Predictive("poisson", {"mu": pm.math.exp(b * x)}, [x])
    >>> pred.family
    'poisson'
    """

    def __init__(
        self, family, parameters, inputs, *, var_name=None, defaults=None, feature_names=None
    ):
        if not isinstance(family, str) or family not in LIKELIHOODS_BY_NAME:
            raise ValueError(
                f"family={family!r} is not a known likelihood family; "
                f"valid: {sorted(LIKELIHOODS_BY_NAME)}"
            )
        likelihood = LIKELIHOODS_BY_NAME[family]
        self._complete(
            likelihood,
            _parameters_in_op_order(likelihood, _checked_parameters(parameters)),
            _checked_inputs(inputs),
            var_name=var_name,
            defaults=defaults,
            feature_names=feature_names,
        )

    def _complete(
        self,
        likelihood,
        parameter_list,
        inputs,
        *,
        var_name=None,
        defaults=None,
        feature_names=None,
        group_inputs=None,
        data_per_point=True,
        row_constants=(),
        numpy_inputs=(),
        column_labels=None,
        held_statistics=(),
        raw_inputs=(),
        design_replaced=None,
        observation_count=None,
        table_row=None,
        cell_inputs=(),
        outcome_shape=(),
        outcome_labels=(),
    ):
        """Set every attribute, once: a predictive is complete when built."""
        fields = dict(
            likelihood=likelihood,
            parameter_list=list(parameter_list),
            inputs=list(inputs),
            var_name=var_name,
            #: default values of symbolic (non-container) inputs, e.g. a GP's training X
            defaults=dict(defaults or {}),
            #: labels of the input's columns, when given
            feature_names=None if feature_names is None else list(feature_names),
            #: per-point copies of group-level predictors: {input: (container, index)}
            group_inputs=dict(group_inputs or {}),
            #: whether held data containers with one row per observation follow the
            #: points (True for likelihoods over observations; False for a GP, whose
            #: held data are its training set)
            data_per_point=data_per_point,
            #: symbolic stand-ins of NumPy constants with one row per observation:
            #: held at each point's value (their values are in ``defaults``)
            row_constants=list(row_constants),
            #: symbolic stand-ins of float NumPy arrays with one row per observation,
            #: taken as inputs (`pm_sens.graph.model.per_row.per_row_constants`)
            numpy_inputs=list(numpy_inputs),
            #: column labels of 2-D inputs that have no dims of their own
            column_labels=dict(column_labels or {}),
            #: statistics of the data held at their values (`pm_sens.graph.model.data_statistics`)
            held_statistics=list(held_statistics),
            #: raw inputs that build the design columns, and what those replaced
            #: (`pm_sens.graph.model.design`)
            raw_inputs=list(raw_inputs),
            design_replaced=design_replaced,
            #: a wide table's cells as points (`pm_sens.graph.model.wide_table`): their
            #: count, the name of their row index, and the per-cell symbols taken as inputs
            observation_count=observation_count,
            table_row=table_row,
            cell_inputs=list(cell_inputs),
            #: the shape of one point's outcome: () for a scalar, (K,) for a vector,
            #: and a vector's K labels (the coords of the observed variable's last dim)
            outcome_shape=tuple(outcome_shape),
            outcome_labels=list(outcome_labels),
            #: caches, filled as calls need them: compiled chunk functions by
            #: settings (`pm_sens._run.compiling`), the dependence between rows
            #: found on given values (`pm_sens._run.compiling.dependence_of`), and
            #: the lengths of what each integer input indexes (its valid levels)
            compiled={},
            dependences={},
            indexed_lengths={},
        )
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise AttributeError(
            f"a Predictive is complete when built: {name!r} cannot be set; build another "
            "with pm_sens.Predictive(...) or Predictive.from_observed(...)"
        )

    def __getstate__(self):
        # compiled functions stay in the process that built them (see `pm_sens._run.cluster`)
        return {**self.__dict__, "compiled": {}}

    def __setstate__(self, state):
        self.__dict__.update(state)

    @property
    def family(self) -> str:
        """Name of the per-draw likelihood family."""
        return self.likelihood.name

    @property
    def parameters(self) -> dict:
        """The symbolic parameters by PyMC name."""
        names = self.likelihood.parameter_names or [
            f"param_{i}" for i in range(len(self.parameter_list))
        ]
        return dict(zip(names, self.parameter_list, strict=True))

    @classmethod
    def from_observed(
        cls, model, var_name=None, *, hold_statistics=True, raw_inputs=None, design=None
    ):
        """Read the predictive of an observed variable of ``model``.

        The family comes from the observed RV's distribution and the parameters
        from its node (``op.dist_params``): a closed-form family where pm_sens
        has one (incl. zero-inflated and hurdle Poisson / negative binomial and
        the censored Normal and Weibull), else the leaf parameters of the distribution's
        graph, evaluated through PyMC's ``logp`` (mixtures, censored, truncated,
        custom and other univariate likelihoods; see :doc:`/explanation/likelihoods`). The inputs
        are the float ``pm.Data`` containers those parameters depend on; integer
        containers (group indices, flags) are held at their values. Observations
        that pick rows of the data (``mu[mask]``) are computed on those rows.

        Statistics of the data inside the model (an input standardized by its
        own mean and sd) are held at their values on the model's data, so new
        points are transformed as the training data were; with
        ``hold_statistics=False`` they are not, and the locality check refuses
        such a model (pass the result as ``predictive=``).

        A model written on design columns (a spline basis, products of inputs)
        is explained per raw input with ``raw_inputs`` (``{name: values on the
        model's data}``) and ``design``, a function that builds the model's
        design matrix from them with PyTensor operations
        (``design(**raw) -> (rows, C)``): the array holding those columns is
        replaced by it in a copy of the graph, and the raw inputs are the
        inputs (`pm_sens.graph.model.design`; :doc:`/how_to/design_matrices`).

        Parameters
        ----------
        model : pymc.Model or bambi.Model
            The fitted model. It is not modified.
        var_name : str, optional
            The observed variable; default the model's only one.
        hold_statistics : bool
            Hold statistics of the data computed inside the model (a mean, sd,
            quantile of an input) at their values on the model's data.
        raw_inputs : dict of str to array_like, optional
            The raw inputs' values on the model's data, one row per observation.
        design : callable, optional
            Builds the model's design matrix from the raw inputs, given by name.

        Returns
        -------
        Predictive
            Pass it as ``predictive=`` to every function.

        Examples
        --------
        A regression on a B-spline basis of ``year`` built outside the model,
        explained per year rather than per basis column:

        >>> import numpy as np, pymc as pm, pm_sens
        >>> year = np.linspace(800.0, 2000.0, 60)
        >>> knots = np.r_[[800.0] * 4, [1100.0, 1400.0, 1700.0], [2000.0] * 4]
        >>> basis = pm_sens.bspline_basis(year, knots).eval()
        >>> with pm.Model() as model:
        ...     w = pm.Normal("w", size=basis.shape[1])
        ...     y = pm.Normal("doy", mu=basis @ w, sigma=1.0, observed=np.zeros(60))
        >>> pred = pm_sens.Predictive.from_observed(
        ...     model,
        ...     raw_inputs={"year": year},
        ...     design=lambda year: pm_sens.bspline_basis(year, knots),
        ... )
        >>> pred.family
        'normal'
        """
        if (raw_inputs is None) != (design is None):
            raise ValueError(
                "raw_inputs= and design= go together: the raw inputs' values on the model's "
                "data, and the function that builds the design columns from them"
            )
        model = tensor_model(model)
        rv = observed_variable(model, var_name)
        op = rv.owner.op
        vector = vector_outcome(op, rv)
        if getattr(op, "ndim_supp", 0) > 0 and vector is None:
            raise ValueError(
                f"the observed variable {rv.name!r} is multivariate ({op.name}): its values at "
                "different points are coupled, so per-point sensitivities need a predictive per "
                "point; for a GP use pm_sens.Predictive.from_gp(gp), otherwise build a "
                "pm_sens.Predictive"
            )
        if rv.type.ndim > 2 or (rv.type.ndim == 2 and design is not None):
            raise ValueError(
                f"the observed variable {rv.name!r} has {rv.type.ndim} dimensions; pm_sens "
                "explains one observation per point, or the cells of a 2-D table (rows × "
                "columns) without design=. Write the model in long format: one row per "
                "observation, its inputs as pm.Data vectors or matrices with one row per "
                "observation"
            )
        likelihood, params = likelihood_of(rv, model, vector)
        params = cumulative_products_as_chains(params, keep=model.free_RVs)
        # first: a NumPy X of the trees is then found as an input like any other
        params = trees_at_points(model, params)
        # the observed data's length: the variable's own is unknown with dims
        observed = data_value(model.rvs_to_values[rv]) if rv.ndim else None
        n_rows = np.shape(observed)[0] if rv.ndim else 0
        cell_inputs, cell_held = {}, {}
        if rv.type.ndim == 2 and vector is None:  # a wide table: its cells are the points
            params, cell_inputs, cell_held = cells_of_wide_table(model, params, rv)
            observed = np.ravel(observed)
            n_rows = len(observed)
        raw, replaced = {}, None
        if design is not None:
            params, raw, replaced = design_from_raw_inputs(
                model, params, n_rows, raw_inputs, design
            )
        params, row_inputs = per_point_observation_rows(model, params)
        params, numpy_indices = numpy_group_indices(model, params, n_rows)
        params, group_inputs = per_point_group_inputs(model, params, [*row_inputs, *numpy_indices])
        group_inputs = {**row_inputs, **group_inputs}
        params, numeric_integers = per_point_arithmetic_integers(model, params, rv.name)
        group_inputs.update(numeric_integers)
        params, lagged = lagged_series(model, params, n_rows)
        params, transposed, transposed_labels = transposed_containers(model, params, n_rows)
        lagged.update(transposed)  # symbols for the containers' points, with their values
        params, row_constants, numpy_inputs = per_row_constants(
            model, params, n_rows, rv, observed
        )
        numpy_inputs = {**numpy_inputs, **numpy_indices}  # the floats first, as named
        params, observation_rows = per_row_variables(model, params, n_rows)
        row_constants.update(observation_rows)
        row_constants.update(cell_held)
        inputs = [c for c in data_containers(model, params, given_draws=True) if is_float(c)]
        inputs += list(lagged)  # symbols for the containers' points, with their values
        held_statistics = []
        if hold_statistics:
            params, held_statistics = hold_data_statistics(
                model, params, [*inputs, *numpy_inputs, *raw], {**lagged, **numpy_inputs, **raw}
            )
        outcome_shape = np.shape(observed)[1:] if vector is not None else ()
        predictive = cls.__new__(cls)
        predictive._complete(
            likelihood,
            params,
            [
                *_in_model_order(model, inputs, numeric_integers),
                *numpy_inputs,
                *raw,
                *cell_inputs,
                *(g for g in group_inputs if g not in numeric_integers),
            ],
            var_name=rv.name,
            defaults={**row_constants, **lagged, **numpy_inputs, **raw, **cell_inputs},
            group_inputs=group_inputs,
            row_constants=row_constants,
            numpy_inputs=numpy_inputs,
            column_labels={**column_labels(model, params, numpy_inputs), **transposed_labels},
            held_statistics=held_statistics,
            raw_inputs=raw,
            design_replaced=replaced,
            observation_count=n_rows if cell_inputs else None,
            table_row=row_coordinate(model, rv) if cell_inputs else None,
            cell_inputs=cell_inputs,
            outcome_shape=outcome_shape,
            outcome_labels=outcome_labels(model, rv, outcome_shape),
        )
        return predictive

    @classmethod
    def from_gp(cls, gp, *, likelihood=None, link=None, feature_names=None, **parameters):
        """The posterior predictive of a PyMC Gaussian process at new inputs ``X``.

        Use as ``sensitivity(idata, model, predictive=pred, points={"X": X_new})``;
        the one input, ``"X"`` (rows = points, columns = features), defaults to
        the GP's training inputs.

        Parameters
        ----------
        gp : pm.gp.Marginal, pm.gp.MarginalApprox or pm.gp.Latent
            A GP of the fitted model (after ``marginal_likelihood`` or ``prior``).
        likelihood : str, optional
            For a latent GP, the likelihood of y given f: ``"bernoulli"``,
            ``"binomial"``, ``"poisson"``, ``"negative_binomial"`` or ``"normal"``.
            Marginal GPs are Normal.
        link : str or callable, optional
            Inverse link from f to the likelihood's mean: ``"identity"``,
            ``"exp"``, ``"probit"``, ``"logit"``, ``"square"`` or a function
            (Gauss–Hermite). Default: exp for counts, logit for binary, identity
            for Normal.
        feature_names : list of str, optional
            Labels of the columns of X.
        **parameters
            Other likelihood parameters as model variables: ``sigma`` (Normal),
            ``n`` (Binomial), ``alpha`` (negative binomial).

        Returns
        -------
        Predictive
            Per posterior draw, the likelihood with the GP's conditional mean and
            variance at each row of ``X`` (diagonal only).

        Examples
        --------
        >>> import numpy as np, pymc as pm, pm_sens
        >>> X = np.linspace(0.0, 1.0, 20)[:, None]
        >>> with pm.Model() as model:
        ...     ls = pm.Gamma("ls", 2.0, 4.0)
        ...     gp = pm.gp.Marginal(cov_func=pm.gp.cov.ExpQuad(1, ls=ls))
        ...     y = gp.marginal_likelihood("y", X=X, y=np.sin(6 * X[:, 0]), sigma=0.1)
        >>> pred = pm_sens.Predictive.from_gp(gp, feature_names=["x"])
        >>> pred.family
        'normal'

        With ``idata`` the model's posterior, ``pm_sens.sensitivity(idata, model,
        predictive=pred, points={"X": X_new})`` ranks the GP's inputs at ``X_new``.
        """
        x_train = training_inputs(gp, feature_names)
        x_new = pt.matrix("X", shape=(None, x_train.shape[1]))
        family, params = gp_parameters(gp, x_new, likelihood, link, parameters)
        likelihood = LIKELIHOODS_BY_NAME[family]
        predictive = cls.__new__(cls)
        predictive._complete(
            likelihood,
            _parameters_in_op_order(likelihood, _checked_parameters(params)),
            [x_new],
            defaults={x_new: x_train},
            feature_names=feature_names,
            data_per_point=False,  # the GP's data are its training set, not the points
        )
        return predictive

    def __repr__(self):
        names = [getattr(x, "name", None) or repr(x) for x in self.inputs]
        return (
            f"Predictive(family={self.family!r}, parameters={list(self.parameters)}, "
            f"inputs={names})"
        )


def parameters_given_observed(predictive, model):
    """The predictive's parameters with any upstream observed RV set to its data."""
    params = list(predictive.parameter_list)
    observed = observed_ancestors(model, params)
    return graph_replace(params, observed, strict=False) if observed else params


def data_variables_of(predictive, model, inputs):
    """The compiled function's data arguments, in order.

    The inputs, then those held at their values: containers and symbolic inputs
    (a GP's X, per-point group copies) that are not differentiated.
    """
    params = parameters_given_observed(predictive, model)
    candidates = dict.fromkeys(
        [*predictive.inputs, *data_containers(model, params), *predictive.row_constants]
    )
    return list(inputs) + [v for v in candidates if v not in inputs]


def required_free_rvs(predictive, model, params=None):
    """What the predictive needs per draw: free RVs, then BART trees' draw symbols."""
    params = parameters_given_observed(predictive, model) if params is None else params
    return free_variables(model, params) + tree_draw_symbols(params)

"""A bambi model as a PyMC model whose inputs are ``pm.Data`` containers.

bambi builds its design matrices as constants, and samples with mean-centred
numeric columns (its posterior then holds the uncentred intercept). pm_sens
needs inputs it can differentiate, so it rebuilds the linear predictor of every
distributional parameter from bambi's terms, on the user's raw data columns:

- one ``pm.Data`` container per data column the formula reads, named like it:
  float for numeric columns, integer level codes for categorical ones (a
  categorical term, a group factor ``(… | g)``);
- each term's design evaluated symbolically by formulae's own lazy call (so
  ``np.log(z)`` and ``scale(x)`` with its stored mean and sd are functions of
  the raw ``z`` and ``x``), categorical columns through their contrast rows,
  interactions as row-wise products, and checked against the design bambi
  sampled with;
- one free variable per posterior variable the predictor reads (``Intercept``,
  each term's coefficients, group effects ``1|g``, constant parameters);
- the response built by bambi's own `ResponseTerm` (links, family transforms,
  censoring, truncation) on these predictors.

The rebuilt model uses bambi's posterior as it is: raw columns with the
uncentred intercept give the same predictions as the centred columns bambi
sampled with.
"""

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt

from pm_sens.graph.compile.functions import evaluate
from pm_sens.graph.model.design import bspline_basis

#: bambi families whose parameters bambi builds from the observed data itself.
UNSUPPORTED_FAMILIES = ()
#: How far the rebuilt design may differ from bambi's before it is refused.
DESIGN_TOLERANCE = 1e-8


@dataclass
class BambiModel:
    """The rebuilt PyMC model of a bambi model, and how to read points for it."""

    model: pm.Model
    #: the levels of each categorical data column, in code order
    categories: dict
    numeric: list
    #: posterior variable of each free variable whose name is taken by a data column
    posterior_names: dict
    #: every column the formula reads is an input by default
    default_inputs = None

    def points(self, data):
        """``{column: values}`` for the rebuilt model from raw data (levels as codes)."""
        if isinstance(data, pd.DataFrame):
            data = {column: data[column].to_numpy() for column in data.columns}
        if not isinstance(data, dict):
            return data  # validated downstream like any points argument
        out = {}
        for name, values in data.items():
            if name in self.categories:
                out[name] = _codes(name, np.asarray(values), self.categories[name])
            else:
                out[name] = np.asarray(values, dtype=float) if name in self.numeric else values
        return out


def _codes(name, values, levels):
    """Level codes of ``values``; values that are codes already pass through."""
    if np.issubdtype(values.dtype, np.integer) and not np.issubdtype(
        np.asarray(levels).dtype, np.integer
    ):
        return values
    names = [str(level) for level in levels]
    codes = pd.Index(names).get_indexer(values.astype(str)).astype("int64")
    if np.any(codes < 0):
        unknown = sorted({str(v) for v in values[codes < 0]})
        raise ValueError(
            f"points[{name!r}] holds the level(s) {unknown}, which the model does not have; "
            f"valid: {names}"
        )
    return codes


def is_bambi_model(model) -> bool:
    """Whether ``model`` is a ``bambi.Model`` (without importing bambi)."""
    return any(cls.__module__.startswith("bambi") for cls in type(model).__mro__)


def _terms(component):
    return [*component.common_terms.values(), *component.group_specific_terms.values()]


def _categorical_columns(bmb_model):
    """Data columns read as categories (categorical terms, group factors) and their levels."""
    names = set()
    for component in bmb_model.conditional_parameters.values():
        for term in component.common_terms.values():
            names |= {
                next(iter(c.var_names)) for c in term.term.components if c.kind == "categoric"
            }
        for term in getattr(component, "hsgp_terms", {}).values():
            names |= {by.name} if (by := _hsgp_by(term)) is not None else set()
        for term in component.group_specific_terms.values():
            names |= set(term.term.factor.var_names)
            names |= {
                next(iter(c.var_names))
                for c in getattr(term.term.expr, "components", [])
                if c.kind == "categoric"
            }
    data = bmb_model.data
    return {name: _levels(data[name]) for name in sorted(names)}


def _levels(column):
    if isinstance(column.dtype, pd.CategoricalDtype):
        return np.asarray(column.cat.categories)
    return np.unique(column.to_numpy())


def _numeric_columns(bmb_model, categorical):
    names = []
    for component in bmb_model.conditional_parameters.values():
        terms = [
            *_terms(component),
            *component.offset_terms.values(),
            *getattr(component, "hsgp_terms", {}).values(),
        ]
        for term in terms:
            for var in sorted(term.term.var_names):
                if var not in categorical and var not in names and var in bmb_model.data:
                    names.append(var)
    return names


def _component_design(component, columns, categories):
    """The design columns (n, k) of one formulae component, symbolically."""
    name = next(iter(component.var_names))
    if component.kind == "categoric":
        matrix = np.asarray(component.contrast_matrix.matrix, dtype=float)
        rows = [list(map(str, component.levels)).index(str(level)) for level in categories[name]]
        return pt.constant(matrix[rows])[columns[name]]
    if component.kind not in ("numeric", "offset"):
        raise ValueError(
            f"the bambi term component {component.name!r} is of kind {component.kind!r}; "
            "pm_sens rebuilds numeric, offset and categorical components only"
        )
    call = getattr(component, "call", None)
    if component.kind == "offset":
        call = call.args[0]  # offset(e) wraps the values of e
    try:
        if call is None:
            value = columns[name]
        else:
            value = _basis(call, columns, component.env)
            value = call.eval(columns, component.env) if value is None else value
    except (TypeError, ValueError, AttributeError) as error:
        raise ValueError(
            f"the bambi term {component.name!r} applies a transform that works on NumPy "
            "arrays only (a stateful function other than bs() and poly()), so pm_sens "
            "cannot rebuild it on symbolic columns to differentiate it; compute those "
            "columns in the data frame and use them as terms, or pass a pm_sens.Predictive "
            f"(the transform said: {error})"
        ) from None
    value = pt.as_tensor_variable(value)
    return value[:, None] if value.ndim == 1 else value


def _basis(call, columns, env):
    """A ``bs()`` or ``poly()`` term of symbolic columns, or None for another call.

    Built from the state formulae fitted them with: the knots, or the
    orthogonal polynomials' recurrence.
    """
    transform = getattr(call, "stateful_transform", None)
    kind = type(transform).__name__
    if kind not in ("BSpline", "Polynomial"):
        return None
    x = pt.as_tensor_variable(call.args[0].eval(columns, env))
    if kind == "BSpline":
        basis = bspline_basis(x, transform._knots, transform._degree)
        return basis if transform._intercept else basis[:, 1:]
    if transform.raw:
        return pt.stack([x**k for k in range(1, transform.degree + 1)], axis=-1)
    return _orthogonal_polynomials(x, transform.degree, transform.alpha, transform.norms2)


def _orthogonal_polynomials(x, degree, alpha, norms2):
    """The orthogonal polynomials of formulae's ``poly(x, degree)``, (n, degree).

    The three-term recurrence with the data's ``alpha_k`` and squared norms,
    each polynomial divided by its norm.
    """
    polynomials = [pt.ones_like(x)]
    for i in range(1, degree + 1):
        p = (x - alpha[i - 1]) * polynomials[i - 1]
        if i >= 2:
            p = p - (norms2[i - 1] / norms2[i - 2]) * polynomials[i - 2]
        polynomials.append(p)
    return pt.stack([polynomials[k] / np.sqrt(norms2[k]) for k in range(1, degree + 1)], -1)


def _row_product(left, right):
    """Row-wise Kronecker product of (n, a) and (n, b): (n, a·b), formulae's order."""
    return (left[:, :, None] * right[:, None, :]).reshape((left.shape[0], -1))


def _term_design(term, columns, categories):
    design = None
    for component in term.components:
        value = _component_design(component, columns, categories)
        design = value if design is None else _row_product(design, value)
    return design


def _check_design(label, design, expected):
    """The rebuilt design at bambi's data (the containers' values) must be bambi's design."""
    got = evaluate(design)
    expected = np.reshape(np.asarray(expected, dtype=float), np.shape(got))
    if not np.allclose(got, expected, rtol=DESIGN_TOLERANCE, atol=DESIGN_TOLERANCE):
        raise ValueError(
            f"pm_sens could not rebuild the design of the bambi term {label!r} from the data "
            "columns (its columns differ from those bambi sampled with); please report it"
        )


def _posterior_variable(bmb_model, name, shadow, renamed):
    """A free variable standing for the posterior variable ``name`` (dims as bambi stores them).

    Named like it, unless a data column has that name (a categorical term's
    coefficients ``cat`` and the column ``cat``): then ``name__coef``.
    """
    backend = bmb_model.backend.model
    label = f"{name}__coef" if name in shadow.named_vars else name
    if label != name:
        renamed[label] = name
    dims = backend.named_vars_to_dims.get(name) or ()
    # bambi's posterior orders dims as the model's coords, group-factor dims last
    model_order = list(backend.coords)
    ordered = sorted(dims, key=lambda d: (d.endswith("__factor_dim"), model_order.index(d)))
    for dim in ordered:
        if dim not in shadow.coords:
            shadow.add_coord(dim, backend.coords[dim])
    if ordered:
        var = pm.Flat(label, dims=tuple(ordered))
        order = [ordered.index(d) for d in dims]
        return var.transpose(*order) if order != list(range(len(order))) else var
    return pm.Flat(label, shape=backend[name].type.shape or ())


def _hsgp_by(term):
    """The ``by=`` column of an ``hsgp(...)`` term (a formulae variable), or None."""
    return term.term.components[0].call.kwargs.get("by")


def _hsgp_contribution(bmb_model, term, shadow, columns, categories, renamed):
    """An ``hsgp(...)`` term on the raw columns: its basis functions times its weights.

    The columns are centred and scaled as bambi did, then centred at the
    midpoint PyMC's HSGP fixed on the data; the eigenfunctions of the box
    ``[-L, L]`` PyMC built (``calc_eigenvectors``) are then functions of the raw
    columns, and the weights are the posterior's ``<term>_weights``. With
    ``by=``, one GP per level of the ``by`` column (each with its own mean,
    box and midpoint, and its column of the weights), read at each row's level.
    """
    names = [argument.name for argument in term.term.components[0].call.args]
    x = pt.stack([columns[name] for name in names], axis=-1)
    _check_design(f"{term.name} (columns)", x, term.data)
    scale = term.maximum_distance if term.scale_predictors else 1.0
    label = term.alias or term.name
    weights = _posterior_variable(bmb_model, f"{label}_weights", shadow, renamed)
    if term.by_levels is None:
        return _hsgp_basis(term.hsgp, (x - term.mean) / scale) @ weights
    by = _hsgp_by(term).name
    # the by column's codes (pm_sens's levels) as bambi's levels
    lookup = [list(map(str, categories[by])).index(str(level)) for level in term.by_levels]
    contribution = 0
    for i, level in enumerate(term.by_levels):
        # each level's GP: x centred at that level's mean
        basis = _hsgp_basis(term.hsgp[level], (x - term.mean[i]) / scale)
        contribution += pt.eq(columns[by], lookup[i]) * (basis @ weights[:, i])
    return contribution


def _hsgp_basis(hsgp, scaled):
    """PyMC's HSGP eigenfunctions (rows, m) at the scaled columns."""
    # PyMC 6.4 added boundary conditions; before, every HSGP's is Dirichlet's
    boundary = {"boundary": hsgp._boundary} if hasattr(hsgp, "_boundary") else {}
    eigenvalues = pm.gp.hsgp_approx.calc_eigenvalues(hsgp.L, hsgp._m, **boundary)
    phi = pm.gp.hsgp_approx.calc_eigenvectors(
        scaled - hsgp._X_center, hsgp.L, eigenvalues, hsgp._m, **boundary
    )
    return phi[:, int(hsgp._drop_first is True) :]


def _has_response_dims(bmb_model):
    """Whether coefficients carry a response dim (categorical, multivariate families)."""
    from bambi.families.multivariate import MultivariateFamily
    from bambi.families.univariate import Categorical

    return isinstance(bmb_model.family, MultivariateFamily | Categorical)


def _linear_predictor(bmb_model, component, shadow, columns, categories, renamed):
    """η of one distributional parameter: intercept, offsets, common and group terms."""
    eta = 0
    if component.intercept_term is not None:
        term = component.intercept_term
        eta = eta + _posterior_variable(bmb_model, term.alias or term.name, shadow, renamed)
    for term in component.offset_terms.values():
        design = _term_design(term.term, columns, categories)[:, 0]
        _check_design(term.name, design, term.data)
        eta = eta + design
    for term in component.common_terms.values():
        design = _term_design(term.term, columns, categories)
        _check_design(term.name, design, term.data)
        coef = _posterior_variable(bmb_model, term.alias or term.name, shadow, renamed)
        eta = eta + (design @ coef if coef.ndim else design[:, 0] * coef)
    for term in getattr(component, "hsgp_terms", {}).values():
        eta = eta + _hsgp_contribution(bmb_model, term, shadow, columns, categories, renamed)
    for term in component.group_specific_terms.values():
        factor = term.term.factor
        if len(factor.components) != 1:
            raise ValueError(
                f"the bambi group-specific term {term.name!r} groups by an interaction; "
                "pm_sens supports one grouping column per term (make it one column)"
            )
        group = next(iter(factor.var_names))
        lookup = [list(map(str, term.groups)).index(str(level)) for level in categories[group]]
        index = pt.constant(np.asarray(lookup))[columns[group]]
        _check_design(f"{term.name} (groups)", index, term.group_index)
        expr = term.term.expr
        if hasattr(expr, "components"):
            predictor = _term_design(expr, columns, categories)
        else:  # the intercept: a column of ones
            predictor = pt.ones((columns[group].shape[0], 1))
        _check_design(f"{term.name} (predictor)", predictor, term.predictor)
        coef = _posterior_variable(bmb_model, term.alias or term.name, shadow, renamed)
        coef = coef[:, None] if coef.ndim == 1 else coef
        eta = eta + (coef[index] * predictor).sum(axis=1)
    return eta


def rebuild(bmb_model):
    """`BambiModel` for a built ``bambi.Model`` (its PyMC backend is not touched)."""
    if getattr(bmb_model, "backend", None) is None or bmb_model.backend.model is None:
        raise ValueError(
            "model is a bambi.Model that is not built; call model.build() or model.fit() first"
        )
    from bambi.backend.terms import ResponseTerm

    family = type(bmb_model.family).__name__
    if family in UNSUPPORTED_FAMILIES or _has_response_dims(bmb_model):
        raise ValueError(
            f"pm_sens does not rebuild bambi models of the {bmb_model.family.name!r} family: "
            "bambi builds its parameters with one fixed value per observation (binomial "
            "trials, the reference column of a categorical response), so they cannot be "
            "evaluated at other points; write the model in PyMC with pm.Data inputs"
        )
    backend = bmb_model.backend
    categories = _categorical_columns(bmb_model)
    numeric = _numeric_columns(bmb_model, categories)
    data = bmb_model.data
    obs = ("__obs__",)
    shadow = pm.Model(coords={"__obs__": backend.model.coords["__obs__"]})
    renamed = {}
    with shadow:
        columns = {name: pm.Data(name, data[name].to_numpy(float), dims=obs) for name in numeric}
        for name, levels in categories.items():
            codes = _codes(name, data[name].to_numpy(), levels)
            columns[name] = pm.Data(name, codes, dims=obs)
        constants = {
            name: SimpleNamespace(
                output=_posterior_variable(bmb_model, c.alias or c.name, shadow, renamed)
                if not isinstance(c.prior, int | float)
                else c.prior
            )
            for name, c in bmb_model.marginal_parameters.items()
        }
        predictors = {
            name: SimpleNamespace(
                output=_linear_predictor(bmb_model, c, shadow, columns, categories, renamed)
            )
            for name, c in bmb_model.conditional_parameters.items()
        }
        fake_backend = SimpleNamespace(
            model=shadow,
            constant_components=constants,
            distributional_components=predictors,
            INVLINKS=type(backend).INVLINKS,
        )
        ResponseTerm(bmb_model.response_term, bmb_model.family).build(fake_backend, bmb_model)
    return BambiModel(shadow, categories, numeric, renamed)

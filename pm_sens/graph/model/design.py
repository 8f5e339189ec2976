"""Design columns built from raw inputs: rank ``year``, not its 17 spline columns.

A model written on a design matrix (a spline basis of ``year``; ``x1``, ``x2``
and their product ``x1:x2``, built with patsy or by hand) has the columns as
its inputs, while its user asks about ``year``, or ``x1`` and ``x2``. Given
the raw inputs' values on the model's data and a function that builds the
columns from them with PyTensor operations, pm_sens finds the array of the
model that holds those columns (a ``pm.Data`` container or a NumPy array) and,
in a copy of the graph, puts the function of symbolic raw inputs in its place.
Every measure is then per raw input: derivatives go through the columns by
the chain rule, and new points are raw values.
"""

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Constant

from pm_sens.graph.compile.functions import evaluate
from pm_sens.graph.model.queries import data_arrays, replace_rebuilding, symbolic_tensor


def design_from_raw_inputs(model, params, n_rows, raw_inputs, design):
    """``params`` with the design columns replaced by ``design`` of symbolic raw inputs.

    Parameters
    ----------
    model : pymc.Model
        The model (its free random variables end the walk).
    params : list of TensorVariable
        The likelihood's parameters.
    n_rows : int
        The number of observations (rows of the data).
    raw_inputs : dict of str to array_like
        Each raw input's values on the model's data, one row per observation.
    design : callable
        ``design(**raw) -> columns``: the design columns, (rows, C) or (rows,),
        from the raw inputs as PyTensor tensors.

    Returns
    -------
    params : list of TensorVariable
    raw : dict
        ``{symbol: value}`` of the raw inputs, in the order given.
    replaced : str
        What the columns replaced, e.g. ``"X (30, 3)"``.
    """
    values = _checked_raw_inputs(raw_inputs, n_rows)
    symbols = {
        name: symbolic_tensor(name, "float64", (None, *value.shape[1:]))
        for name, value in values.items()
    }
    columns = _symbolic_columns(design, symbols)
    at_data = np.asarray(evaluate(columns, list(symbols.values()), list(values.values())))
    targets, label = _holding(model, params, at_data)
    replacements = {
        t: pt.cast(columns, t.dtype) if columns.dtype != t.dtype else columns for t in targets
    }
    params = replace_rebuilding(params, replacements, keep=model.free_RVs)
    raw = {symbols[name]: value for name, value in values.items()}
    return params, raw, f"{label} {at_data.shape}"


def _checked_raw_inputs(raw_inputs, n_rows):
    if not isinstance(raw_inputs, dict) or not raw_inputs:
        raise TypeError(
            f"raw_inputs={raw_inputs!r} is not valid; give a dict {{name: values on the "
            "model's data}}, one row per observation"
        )
    values = {}
    for name, value in raw_inputs.items():
        array = np.asarray(value)
        if not isinstance(name, str) or array.dtype.kind not in "biuf" or array.ndim not in (1, 2):
            raise ValueError(
                f"raw_inputs[{name!r}] is not valid ({array.dtype}, shape {array.shape}); give "
                "a 1-D or 2-D array of numbers under a string name"
            )
        if len(array) != n_rows:
            raise ValueError(
                f"raw_inputs[{name!r}] has {len(array)} rows; the model has {n_rows} "
                "observations: give its value at each of them"
            )
        values[name] = array.astype(float)
    return values


def _symbolic_columns(design, symbols):
    """``design`` called on the raw inputs as tensors, or an error in our words."""
    if not callable(design):
        raise TypeError(f"design={design!r} is not valid; give a function of the raw inputs")
    try:
        columns = pt.as_tensor_variable(design(**symbols))
    except Exception as error:  # the user's function: any failure is theirs to fix
        raise TypeError(
            f"design could not be built from the raw inputs {list(symbols)} as PyTensor "
            f"tensors ({type(error).__name__}: {error}); write it with pytensor.tensor "
            "operations (pt.stack, pt.exp, pm_sens.bspline_basis, …), which take NumPy-like "
            "arguments, so that pm_sens can differentiate through it"
        ) from None
    if columns.ndim not in (1, 2) or columns.dtype.startswith(("int", "uint", "bool")):
        raise ValueError(
            f"design returns a {columns.ndim}-D {columns.dtype} tensor; it must give float "
            "columns, (rows, C), or one column, (rows,)"
        )
    return columns


def _holding(model, params, at_data):
    """The arrays of the graph that hold ``at_data``: constants with its values, or a container."""
    candidates = list(data_arrays(model, params).items())
    same = [var for var, value in candidates if _same(value, at_data)]
    containers = [v for v in same if not isinstance(v, Constant)]
    if containers:
        return containers[:1], containers[0].name
    if same:
        return same, "a NumPy array"
    shaped = [
        f"{getattr(v, 'name', None) or 'a NumPy array'} {np.shape(value)}"
        for v, value in candidates
        if np.ndim(value) and len(value) == len(at_data)
    ]
    raise ValueError(
        f"design(raw_inputs) gives columns of shape {at_data.shape} that no array of the "
        f"model's likelihood holds; arrays with one row per observation: {shaped}. "
        "design must rebuild the model's design matrix exactly (same columns, same order) "
        "from raw_inputs"
    )


def _same(value, at_data):
    value = np.asarray(value)
    if value.shape != at_data.shape or value.dtype.kind != "f":
        return False
    scale = np.max(np.abs(at_data), initial=0.0)
    return bool(np.allclose(value, at_data, rtol=1e-9, atol=1e-12 * scale))


def bspline_basis(x, knots, degree=3):
    """B-spline basis functions of ``x`` as a PyTensor expression, for ``design=``.

    The columns ``scipy.interpolate.BSpline.design_matrix(x, knots, degree)`` and
    patsy's ``bs(x, knots=inner, degree=degree, include_intercept=True)`` give
    (with ``knots`` the inner knots padded by ``degree + 1`` copies of each
    boundary), written with PyTensor operations so that derivatives go
    through them (Cox–de Boor recursion).

    Parameters
    ----------
    x : TensorVariable or array_like, shape (N,)
        Where to evaluate the basis.
    knots : array_like, shape (K,)
        The full, non-decreasing knot vector.
    degree : int
        Polynomial degree (3: cubic).

    Returns
    -------
    TensorVariable, shape (N, K − degree − 1)
        Beyond the boundary knots, the polynomials of the first and last
        intervals continue (SciPy's ``extrapolate=True``), so that a finite
        difference or a new point just outside the data stays smooth.

    Examples
    --------
    >>> import numpy as np, pm_sens
    >>> knots = np.r_[[0.0] * 4, [0.5], [1.0] * 4]
    >>> basis = pm_sens.bspline_basis(np.linspace(0.0, 1.0, 5), knots).eval()
    >>> basis.shape
    (5, 5)
    >>> bool(np.allclose(basis.sum(axis=1), 1.0))  # a partition of unity
    True
    """
    t = np.asarray(knots, dtype=float)
    if t.ndim != 1 or np.any(np.diff(t) < 0) or len(t) < 2 * degree + 2:
        raise ValueError(
            f"knots={knots!r} is not valid; give a non-decreasing vector of at least "
            f"{2 * degree + 2} knots (degree={degree})"
        )
    x = pt.as_tensor_variable(x)[:, None]
    # each x in one interval; beyond the boundary knots, the first or last one
    nonempty = np.flatnonzero(t[:-1] < t[1:])
    first, last = np.arange(len(t) - 1) == nonempty[0], np.arange(len(t) - 1) == nonempty[-1]
    inside = ((x >= t[:-1]) | first) & ((x < t[1:]) | last) & (t[:-1] < t[1:])
    basis = pt.cast(inside, "float64")
    for k in range(1, degree + 1):
        left = _ratio(x - t[: -k - 1], t[k:-1] - t[: -k - 1])
        right = _ratio(t[k + 1 :] - x, t[k + 1 :] - t[1:-k])
        basis = left * basis[:, :-1] + right * basis[:, 1:]
    return basis


def _ratio(numerator, denominator):
    """``numerator / denominator``, 0 where the denominator is (repeated knots: 0/0 := 0)."""
    safe = np.where(denominator > 0, denominator, 1.0)
    return pt.where(denominator > 0, numerator / safe, 0.0)

"""What belongs to an observation's row and travels with it to every point.

A NumPy constant with one value per observation and a random variable with one
value per observation (an observation-level effect) are read at each point's
own row, following the points into permuted copies, grids and
finite-difference steps. A float NumPy array that varies between rows, or an
integer one that indexes a variable, is an input, as a ``pm.Data`` container
would be; the others are held at each point's value.
"""

import numpy as np
import pytensor.scalar as ps
from pymc.distributions.censored import CensoredRV
from pymc.distributions.continuous import TruncatedNormalRV
from pymc.distributions.truncated import TruncatedRV
from pytensor.graph.basic import Constant
from pytensor.graph.traversal import ancestors, apply_ancestors, toposort
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.math import Dot
from pytensor.tensor.subtensor import AdvancedSubtensor, Subtensor

from pm_sens.graph.model.queries import replace_rebuilding, symbolic_tensor


def per_row_constants(model, params, n_rows, rv=None, observed=None):
    """Give NumPy constants with one row per observation a symbolic row per point.

    Such a constant belongs to its observation as a ``pm.Data`` container
    would, and becomes a symbolic tensor that follows the points (in a copy of
    the graph: the model is not changed):

    - a float array whose values differ between rows is an *input*, as a float
      ``pm.Data`` container is: the NumPy arrays most notebooks pass straight
      into the model (``mu = b0 + b1 * x1``); so is an integer array that
      indexes a variable per observation (``a[county]``), a categorical input
      as an integer ``pm.Data`` group index is, and a flag (`is_flag`: bool,
      or integers 0 and 1: ``b * treated``), compared at its two levels;
    - held at each point's value instead: other integer arrays (counts),
      arrays with one value for every row (a column of zero logits built with
      ``np.zeros((n, 1))``), censoring and truncation bounds of the observed
      ``rv``, and the ``observed`` series shifted (``y[:-1]`` in an AR term:
      the observed past).

    Constants that are only core dimensions of a distribution's parameter (a
    mixture's weights, whose length may equal the number of rows) and those in
    the priors of random variables (pymc-bart's Y) stay. Returns the new
    parameters, the held symbols and the input symbols, each ``{symbol:
    value}``; inputs are named as `numpy_input_names` says.
    """
    if not n_rows or n_rows < 2:
        return params, {}, {}
    blockers = model.free_RVs
    bounds = [] if rv is None else bound_variables(rv, model)
    # what reaches the parameters other than through a censoring or truncation bound
    moving = set(ancestors(params, blockers=[*blockers, *bounds])) - set(bounds)
    core = set() if rv is None else _core_only_constants(rv, model)
    constants = [
        c
        for c in _constants_in_order_of_use(params, blockers)
        if np.ndim(c.data) and c.data.shape[0] == n_rows and c not in core
    ]
    floats = [c for c in constants if _is_input(c, moving) and not _lags(c.data, observed)]
    names = numpy_input_names(model, params, floats)
    names.update(_group_index_names(model, params, [c for c in constants if c in moving]))
    # one symbol per array: PyMC may hold the same values as several constants
    by_values, symbols, input_symbols = {}, {}, set()
    # inputs first, in the order of their names: an array held by several
    # constants takes the name of its first coefficient
    for c in [*names, *(c for c in constants if c not in names)]:
        key = _value_key(c)
        if key not in by_values:
            name = names.get(c) or c.name or f"row_constant_{len(by_values)}"
            by_values[key] = symbolic_tensor(name, c.dtype, (None, *c.type.shape[1:]))
        symbols[c] = by_values[key]
        if c in names:
            input_symbols.add(by_values[key])
    if not symbols:
        return params, {}, {}
    params = replace_rebuilding(params, symbols, keep=blockers)
    values = {symbol: c.data for c, symbol in symbols.items()}
    ordered = [symbols[c] for c in names]  # the inputs in the order of their names
    return (
        params,
        {s: v for s, v in values.items() if s not in input_symbols},
        {s: values[s] for s in dict.fromkeys(ordered)},
    )


def numpy_group_indices(model, params, n_rows):
    """Give integer NumPy arrays that index a variable per observation a symbol per point.

    ``a[county]`` with a NumPy ``county`` is a group index, as an integer
    ``pm.Data`` container read that way is, named as `_group_index_names` says.
    Made symbolic before the group-level reads are found, so that a group-level
    NumPy predictor read through it (``(g0 + g1 * u)[county]``) follows each
    point's level as a container's would. Returns the new parameters and
    ``{symbol: value}``.
    """
    if not n_rows or n_rows < 2:
        return params, {}
    moving = set(ancestors(params, blockers=model.free_RVs))
    rows = [
        c
        for c in _constants_in_order_of_use(params, model.free_RVs)
        if np.ndim(c.data) == 1 and c.data.shape[0] == n_rows and c in moving
    ]
    names = _group_index_names(model, params, rows)
    by_values, symbols = {}, {}
    for c, name in names.items():
        key = _value_key(c)
        if key not in by_values:
            by_values[key] = symbolic_tensor(name, c.dtype, (None,))
        symbols[c] = by_values[key]
    if not symbols:
        return params, {}
    params = replace_rebuilding(params, symbols, keep=model.free_RVs)
    return params, {symbol: c.data for c, symbol in symbols.items()}


def _core_only_constants(rv, model):
    """Constants that are core dimensions of a distribution's parameter, no batch axis.

    A mixture's weights ``w=[0.3, 0.7]`` run along its components: with two
    observations their length only happens to be the number of rows.
    """
    core = set()
    for node in apply_ancestors([rv], blockers=model.free_RVs):
        ndims = getattr(node.op, "ndims_params", None)
        if ndims is None or not hasattr(node.op, "dist_params"):
            continue
        for param, ndim in zip(node.op.dist_params(node), ndims, strict=False):
            if isinstance(param, Constant) and np.ndim(param.data) <= ndim:
                core.add(param)
    return core


def bound_variables(rv, model):
    """The censoring and truncation bounds in the graph of the observed ``rv``."""
    bounds = []
    for node in apply_ancestors([rv], blockers=model.free_RVs):
        if isinstance(node.op, CensoredRV):
            base, lower, upper = node.op.dist_params(node)
            bounds += [b for b in (lower, upper) if b is not base]
        elif isinstance(node.op, TruncatedRV):
            bounds += node.inputs[-2:]
        elif isinstance(node.op, TruncatedNormalRV):  # pm.Truncated of a Normal is one
            bounds += node.op.dist_params(node)[2:]
    return bounds


def arrays_of_other_length(model, params, n_rows):
    """Float NumPy arrays behind ``params`` of about, but not exactly, ``n_rows`` rows.

    Such an array is usually a series read in shifted slices (``x[1:]`` and
    ``x[:-1]`` of an array of N + 1 values): named in the error for
    predictions that depend on no input.
    """
    return [
        c
        for c in _constants_in_order_of_use(params, model.free_RVs)
        if str(getattr(c.type, "dtype", "")).startswith("float")
        and np.ndim(c.data)
        and c.data.shape[0] != n_rows
        and c.data.shape[0] >= n_rows // 2
    ]


def _constants_in_order_of_use(params, blockers):
    """The constants ``params`` are computed from, in the order the graph uses them."""
    used = {}
    for node in toposort(params, blockers=blockers):
        used.update(dict.fromkeys(i for i in node.inputs if isinstance(i, Constant)))
    used.update(dict.fromkeys(p for p in params if isinstance(p, Constant)))  # a bound itself
    return list(used)


def _is_input(constant, moving):
    values = constant.data
    varies = values.shape[0] > 1 and bool(np.any(values != values[:1]))
    return constant in moving and (values.dtype.kind == "f" or is_flag(values)) and varies


def is_flag(values):
    """Whether an array is a two-level flag: bool, or integers that are all 0 or 1.

    A flag multiplied into the model (``b * treated``, ``exp(beta * metastasized)``)
    is a categorical input, compared at its two levels, as a flag container is.
    """
    values = np.asarray(values)
    if values.dtype.kind == "b":
        return True
    return values.dtype.kind in "iu" and bool(np.isin(values, (0, 1)).all())


def _group_index_names(model, params, constants):
    """``{constant: name}`` of integer arrays that index a variable per observation.

    ``a[county]`` with a NumPy ``county`` is a group index, as an integer
    ``pm.Data`` container read that way is (its levels are compared). It is
    named after the indexed variable's dims (``county`` for ``a`` on dims
    ``("county",)``), else ``<variable>_index``.
    """
    names, taken = {}, set(model.named_vars)
    for node in apply_ancestors(params, blockers=model.free_RVs):
        if not isinstance(node.op, AdvancedSubtensor):
            continue
        base, *indices = node.inputs
        for c in indices:
            if c in constants and c not in names and c.dtype.startswith(("int", "uint")):
                dims = model.named_vars_to_dims.get(base.name or "") or ()
                name = dims[0] if dims else f"{base.name or 'group'}_index"
                while name in taken:
                    name += "_"
                names[c] = name
                taken.add(name)
    return names


def _lags(values, observed, max_lag=400):
    """Whether ``values`` are the ``observed`` series shifted by 1 … ``max_lag`` steps.

    Shifts are tried up to half the series, so the two overlap on at least half
    their values.
    """
    if observed is None or np.shape(observed) != values.shape or values.ndim != 1:
        return False
    observed = np.asarray(observed, dtype=float)
    # only a shift that puts the first observation in place can match
    lags = 1 + np.flatnonzero(values[1 : min(max_lag, len(values) // 2) + 1] == observed[0])
    return any(np.array_equal(values[lag:], observed[:-lag]) for lag in lags)


def numpy_input_names(model, params, constants):
    """``{constant: name}``: the constant's own name, else ``x_<coefficient>``.

    The coefficient is the random variable the array multiplies (``b1 * x1``
    gives ``x_b1``, ``b[1] * x`` gives ``x_b[1]``, or ``x_b[label]`` where
    ``b`` has a coordinate; ``X @ beta`` gives ``X_beta``); without one,
    ``numpy_input_<k>``. PyMC may hold one array as several constants (one per
    use): they share a name, that of the first coefficient the model declares.
    Names are unique and do not clash with the model's.
    """
    taken = set(model.named_vars)
    arrays = {}
    for c in constants:
        arrays.setdefault(_value_key(c), []).append(c)
    found = {}
    for key, held_by in arrays.items():
        named = [f for c in held_by if (f := _name_from_coefficient(c, params, model))]
        found[key] = min(named, key=lambda f: f[1:]) if named else None
    # in the order the model declares the coefficients, as its pm.Data would be
    order = sorted(arrays, key=lambda k: found[k][1:] if found[k] else (len(model.free_RVs),))
    names = {}
    for k, key in enumerate(order):
        own = next((c.name for c in arrays[key] if c.name), None)
        name = own or (found[key][0] if found[key] else f"numpy_input_{k}")
        while name in taken:
            name += "_"
        taken.add(name)
        names.update(dict.fromkeys(arrays[key], name))
    return names


def _value_key(constant):
    """What makes two constants one array: dtype, shape and values."""
    return constant.dtype, constant.data.shape, constant.data.tobytes()


def _name_from_coefficient(constant, params, model):
    """``(name, coefficient's position among the free RVs, its index)``, or None.

    Of several coefficients (``b[0] * M + b[2] * M * A``) the first the model
    declares, at its first index, names the array.
    """
    found = []
    for node in apply_ancestors(params, blockers=model.free_RVs):
        if constant not in node.inputs or len(node.inputs) != 2:
            continue
        other = node.inputs[1 - node.inputs.index(constant)]
        coefficient, index = _coefficient(other, model)
        if coefficient is None:
            continue
        if isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op, ps.Mul):
            prefix = "x_"
        elif isinstance(node.op, Dot) or isinstance(getattr(node.op, "core_op", None), Dot):
            prefix = "X_"
        else:
            continue
        name = prefix + coefficient.name + _index_text(coefficient, index, model)
        found.append((name, model.free_RVs.index(coefficient), index))
    return min(found, key=lambda f: f[1:]) if found else None


def _index_text(coefficient, index, model):
    """``b[1]``'s index as text: the label of its coordinate where ``b`` has dims."""
    if not index:
        return ""
    dims = model.named_vars_to_dims.get(coefficient.name) or ()
    labels = [
        model.coords[dim][i] if dim in model.coords and model.coords[dim] is not None else i
        for dim, i in zip(dims, index, strict=False)
    ] + list(index[len(dims) :])
    return "[" + ", ".join(str(label) for label in labels) + "]"


def _coefficient(var, model):
    """The free random variable ``var`` reads, and the constant index it takes.

    Through views and constant indices: ``b[1]`` gives ``(b, (1,))``;
    ``(None, ())`` when ``var`` reads no free random variable that way.
    """
    index = ()
    while var.owner is not None and var not in model.free_RVs:
        op = var.owner.op
        if isinstance(op, DimShuffle):
            var = var.owner.inputs[0]
        elif isinstance(op, Subtensor) and all(
            isinstance(i, Constant) and np.ndim(i.data) == 0 for i in var.owner.inputs[1:]
        ):
            index = tuple(int(i.data) for i in var.owner.inputs[1:])
            var = var.owner.inputs[0]
        else:
            return None, ()
    return (var, index) if var in model.free_RVs else (None, ())


def column_labels(model, params, inputs):
    """``{input: labels}`` of 2-D NumPy inputs multiplied by a coefficient with dims.

    ``X @ beta`` with ``beta`` on dims ``("predictor",)`` labels X's columns by
    the ``predictor`` coordinate, as a ``pm.Data`` container with those dims
    would be labelled.
    """
    labels = {}
    for node in apply_ancestors(params, blockers=model.free_RVs):
        is_dot = isinstance(node.op, Dot) or isinstance(getattr(node.op, "core_op", None), Dot)
        if not is_dot or len(node.inputs) != 2 or node.inputs[0] not in inputs:
            continue
        right = node.inputs[1]
        while right.owner is not None and isinstance(right.owner.op, DimShuffle):
            right = right.owner.inputs[0]
        dims = model.named_vars_to_dims.get(getattr(right, "name", None) or "") or ()
        coords = model.coords.get(dims[0]) if dims else None
        if coords is not None and len(coords) == node.inputs[0].type.shape[-1]:
            labels[node.inputs[0]] = list(coords)
    return labels


#: the per-point index into random variables with one value per observation
OBSERVATION_ROW = "observation_row"


def per_row_variables(model, params, n_rows):
    """Read random variables with one value per observation at each point's row.

    An observation-level effect ``eps`` (dims of the observations, added
    elementwise) belongs to its row as a per-row constant does: it becomes
    ``eps[observation_row]``, with ``observation_row`` held at each point's
    value (0..N−1 for the model's own points). Variables read through an index
    (group effects) or a product are left alone. Returns the new parameters
    and ``{symbol: value}``.
    """
    if not n_rows or n_rows < 2:
        return params, {}
    uses = {}
    for node in apply_ancestors(params):
        for i in node.inputs:
            if i in model.free_RVs and i.ndim >= 1:
                uses.setdefault(i, []).append(node)
    elementwise = [
        rv for rv, nodes in uses.items() if all(isinstance(n.op, Elemwise) for n in nodes)
    ]
    if not elementwise:
        return params, {}
    shapes = model.eval_rv_shapes()
    per_row = [rv for rv in elementwise if shapes[rv.name][:1] == (n_rows,)]
    if not per_row:
        return params, {}
    row = symbolic_tensor(OBSERVATION_ROW, "int64", (None,))
    params = replace_rebuilding(params, {rv: rv[row] for rv in per_row}, keep=model.free_RVs)
    return params, {row: np.arange(n_rows)}

"""Models written with ``pymc.dims``: the same model on plain tensors.

``pymc.dims`` (used by pymc-marketing) builds a model of ``XTensorVariable`` objects,
whose operations name their dimensions; PyTensor lowers them to ordinary tensor
operations only when it compiles. pm_sens reads, rewrites and differentiates the
graph before that, so `tensor_model` lowers the whole model once, with
PyTensor's own ``lower_xtensor`` rewrites, into a `pymc.Model` with the same
names, dims, coords, transforms and data containers. The containers share their
storage with the original ones: ``pm.set_data`` on the user's model is seen.
"""

import weakref

import pytensor.tensor as pt
from pymc.dims.distributions.transforms import DimTransform
from pymc.distributions.transforms import _default_transform
from pymc.model.fgraph import (
    model_deterministic,
    model_free_rv,
    model_from_fgraph,
    model_named,
    model_observed_rv,
    model_potential,
    remove_view_rewrite,
)
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph import FunctionGraph, ancestors, rewrite_graph
from pytensor.graph.replace import clone_replace
from pytensor.tensor.elemwise import DimShuffle
from pytensor.tensor.sharedvar import TensorSharedVariable
from pytensor.tensor.type import TensorType
from pytensor.xtensor import as_xtensor
from pytensor.xtensor.type import XTensorConstant, XTensorVariable

_LOWERED = weakref.WeakKeyDictionary()


def uses_dims(model):
    """Whether any of ``model``'s named variables is a ``pymc.dims`` variable."""
    return any(isinstance(var, XTensorVariable) for var in model.named_vars.values())


def _tensor_container(var):
    """A tensor shared variable on the storage of the dims container ``var``."""
    return TensorSharedVariable(
        type=TensorType(var.type.dtype, shape=var.type.shape),
        value=None,
        strict=None,
        container=var.container,
        name=var.name,
    )


def _tensor_transform(transform, rv):
    """The value transform of the lowered ``rv``.

    A dims transform works on ``XTensorVariable`` objects; PyMC's default
    transform of the tensor distribution is the same map on tensors.
    """
    if isinstance(transform, DimTransform):
        return _default_transform(rv.owner.op, rv)
    return transform


def _check_distribution(var, lowered):
    """Refuse a random variable that lowers to a view of a distribution.

    Its dims are then in another order than the distribution's batch dims, and
    PyMC could not take its logp.
    """
    if lowered.owner is not None and isinstance(lowered.owner.op, DimShuffle):
        raise ValueError(
            f"the pymc.dims variable {var.name!r} (dims {var.type.dims}) lowers to a "
            "transposed distribution, which pm_sens does not read; give its parameters "
            "the dims in the variable's order (e.g. mu.transpose(*dims)) when building it"
        )


def _as_tensor(var):
    return var.values if isinstance(var, XTensorVariable) else var


def _lowered(model, variables):
    """Each of ``variables`` (`_model_variables`) as a lowered tensor graph.

    Returns the lowered graphs, in that order, and the tensor containers that
    replaced the dims ones.
    """
    containers = {
        var: _tensor_container(var)
        for var in model.data_vars
        if isinstance(var, SharedVariable) and isinstance(var, XTensorVariable)
    }
    outputs = [_as_tensor(var) for _, var in variables]
    # containers and constants enter as tensors, so lowering leaves no dims op behind
    replace = {var: as_xtensor(tensor, dims=var.type.dims) for var, tensor in containers.items()}
    replace |= {
        const: as_xtensor(pt.constant(const.data), dims=const.type.dims)
        for const in ancestors(outputs)
        if isinstance(const, XTensorConstant)
    }
    graph = FunctionGraph(outputs=clone_replace(outputs, replace=replace), clone=False)
    remove_view_rewrite.apply(graph)
    rewrite_graph(graph, include=("lower_xtensor",), clone=False)
    return list(graph.outputs), containers


def _model_variables(model):
    """(role, variable) of every variable the model registers, observed values too."""
    observed_values = [model.rvs_to_values[rv] for rv in model.observed_RVs]
    return (
        [("free", rv) for rv in model.free_RVs]
        + [("observed", rv) for rv in model.observed_RVs]
        + [("observed value", value) for value in observed_values]
        + [("deterministic", var) for var in model.deterministics]
        + [("potential", var) for var in model.potentials]
        + [("data", var) for var in model.data_vars]
    )


def tensor_model(model):
    """``model`` with every ``pymc.dims`` variable lowered to a tensor variable.

    Lowered once per model; a model without ``pymc.dims`` variables is
    returned as it is.

    Parameters
    ----------
    model : pymc.Model
        The user's model.

    Returns
    -------
    pymc.Model
        The same model on tensors: same variable names, dims, coords and value
        transforms; its data containers read the storage of ``model``'s.
    """
    if not uses_dims(model):
        return model
    if model not in _LOWERED:
        _LOWERED[model] = _lower(model)
    return _LOWERED[model]


def _lower(model):
    variables = _model_variables(model)
    lowered, containers = _lowered(model, variables)
    by_role = {}
    for (role, var), low in zip(variables, lowered, strict=True):
        if role in ("free", "observed"):
            _check_distribution(var, low)
        by_role.setdefault(role, []).append((var, low))
    observed_values = [low for _, low in by_role.get("observed value", [])]
    wrapped = []
    dims_of = model.named_vars_to_dims
    for var, low in by_role.get("free", []):
        value = low.type(name=model.rvs_to_values[var].name)
        transform = _tensor_transform(model.rvs_to_transforms.get(var), low)
        wrapped.append(model_free_rv(low, value, transform, var.name, *dims_of.get(var.name, ())))
    for (var, low), value in zip(by_role.get("observed", []), observed_values, strict=True):
        wrapped.append(model_observed_rv(low, value, var.name, *dims_of.get(var.name, ())))
    for role, wrap in (
        ("deterministic", model_deterministic),
        ("potential", model_potential),
        ("data", model_named),
    ):
        for var, low in by_role.get(role, []):
            low = containers.get(var, low)
            wrapped.append(wrap(low, var.name, *dims_of.get(var.name, ())))
    graph = FunctionGraph(outputs=wrapped, clone=False)
    graph._coords = model._coords.copy()
    graph._dim_lengths = dict(model._dim_lengths)
    return model_from_fgraph(graph, mutate_fgraph=True)

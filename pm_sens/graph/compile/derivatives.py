"""Per-point derivatives of a vectorized graph, one column per feature.

Locality makes them one backward pass: the parameters at point i depend only
on row i of the inputs, so ``grad(λ.sum(), X)[i] = ∂λ_i/∂x_i`` for all points.
"""

import pytensor
import pytensor.tensor as pt
from pytensor.graph.replace import vectorize_graph


def whitened_norm(grads, scales, one_dimensional):
    """``sqrt(Σ_m (s_m ∂φ_m)²)``, or ``|s ∂φ|`` for one parameter: (S, N, D).

    ``grads[m]`` holds the derivatives of the m-th varying parameter with
    respect to each input ((S, N) for a 1-D input, (S, N, D_x) for a 2-D one),
    ``scales[m]`` (S, N) its scale. The norm is taken per input, then the
    columns are put side by side.
    """
    columns = []
    for i, flat in enumerate(one_dimensional):
        scale = [s if flat else s[..., None] for s in scales]
        u = [g[i] * s for g, s in zip(grads, scale, strict=True)]
        columns.append(pt.abs(u[0]) if len(u) == 1 else pt.sqrt(pt.add(*(x**2 for x in u))))
    return _feature_columns(columns, one_dimensional, features_last=True)


def _point_gradient(expr, wrts, one_dimensional):
    """``∂expr_i/∂x_i`` for every point, one column per feature: shape (..., N, D)."""
    grads = pytensor.grad(expr.sum(), wrts, disconnected_inputs="ignore")
    return _feature_columns(grads, one_dimensional)


def colored_gradient(expr, wrts, one_dimensional, colors, batched=False):
    """``∂expr_i/∂x_s`` of a banded Jacobian, compressed by colour: (..., C·N, D).

    One backward pass per colour r through the rows ``i ≡ r (mod C)``: at
    input row s it gives the derivative of the one row of colour r that s
    moves (`pm_sens.graph.model.dependence`). Colour-major along the point axis;
    ``colors=1`` is `_point_gradient`. ``batched``: the C passes as one pass
    batched over the colours (a graph C times smaller to differentiate again
    and rewrite, for `_colored_hessian`); else C passes, which run faster
    (the sums over draws of moment mode become matrix products).
    """
    if colors == 1:
        return _point_gradient(expr, wrts, one_dimensional)
    rows = pt.arange(expr.shape[-1]) % colors
    if not batched:
        parts = [
            _point_gradient(expr * pt.eq(rows, r), wrts, one_dimensional) for r in range(colors)
        ]
        return pt.concatenate(parts, axis=-2)
    mask = pt.vector("mask", dtype=expr.dtype)
    masks = pt.eq(rows, pt.arange(colors)[:, None]).astype(expr.dtype)  # (C, N)
    grads = pytensor.grad((expr * mask).sum(), wrts, disconnected_inputs="ignore")
    parts = _feature_columns([_over_tangents(g, mask, masks) for g in grads], one_dimensional)
    parts = pt.moveaxis(parts, 0, -3)  # (..., C, N, D)
    return parts.reshape((*parts.shape[:-3], -1, parts.shape[-1]))


def _feature_columns(grads, one_dimensional, features_last=False):
    """Gradients per input as one array (..., N, D).

    A 1-D input's gradient is (..., N), a 2-D one's (..., N, D_x). 1-D inputs'
    columns are stacked in front and viewed as (..., N, D), unless
    ``features_last`` asks for an array laid out as (..., N, D).
    """
    if all(one_dimensional) and not features_last:
        # stacked in front, each column one contiguous block, then viewed as (..., N, D)
        return pt.moveaxis(pt.stack(grads), 0, -1)
    columns = [g[..., None] if flat else g for g, flat in zip(grads, one_dimensional, strict=True)]
    return pt.concatenate(columns, axis=-1) if len(columns) > 1 else columns[0]


#: components from which derivatives of a graph run in NumPy come from one
#: backward pass batched over them (`over_components`): a categorical's classes.
#: Two (a location and a scale) keep a pass each: batching two costs more in the
#: batched graph than the second pass does
BATCHED_COMPONENTS = 3


def over_components(derivative, components, batched):
    """``[derivative(c) for c in components]``, from one pass batched over them.

    ``derivative(expr)`` gives a tensor or a list of tensors. With ``batched``
    and `BATCHED_COMPONENTS` or more components, it is taken once, of
    ``Σ_k w_k λ_k`` for a weight vector w, and evaluated at each row of the
    identity: a graph of one component's size to rewrite, not K (an ordered
    probit's 4 class probabilities: R-sens2's graph 1,405 nodes after
    rewriting in 10.7 s, now 591 nodes in 4.4 s; the call 13.8 s -> 7.8 s).
    """
    if not batched or len(components) < BATCHED_COMPONENTS:
        return [derivative(c) for c in components]
    weight = pt.vector("weight", dtype=components[0].dtype, shape=(len(components),))
    value = derivative(pt.add(*(weight[k] * c for k, c in enumerate(components))))
    identity = pt.eye(len(components), dtype=weight.dtype)
    rows = range(len(components))
    if not isinstance(value, list):
        stacked = _over_tangents(value, weight, identity)
        return [stacked[k] for k in rows]
    per_value = [_over_tangents(v, weight, identity) for v in value]
    return [[v[k] for v in per_value] for k in rows]


def point_derivatives(components, wrts, one_dimensional, n_features, order, batched, colors=1):
    """Per order up to ``order``, the list of each component's derivatives.

    ``colors`` > 1: a model whose rows depend on other rows' inputs; first
    derivatives by `colored_gradient`, second by `_colored_hessian`.

    ``batched``: second derivatives from one backward pass batched over the D
    rows (`_point_hessian`), a graph D times smaller to rewrite, and many
    components' derivatives from one pass (`over_components`), for graphs run
    in NumPy; else from D backward passes, which compiled run faster (the
    batched pass multiplies every row by the whole identity).
    """
    if order == 0:
        return []
    if colors > 1:
        jac = [colored_gradient(c, wrts, one_dimensional, colors) for c in components]
        if order == 1:
            return [jac]
        hess = [
            _colored_hessian(
                colored_gradient(c, wrts, one_dimensional, colors, batched=True),
                wrts,
                one_dimensional,
                n_features,
                colors,
            )
            for c in components
        ]
        return [jac, hess]

    def derivatives(expr):
        jac = _point_gradient(expr, wrts, one_dimensional)
        if order == 1:
            return [jac]
        if batched:
            return [jac, _point_hessian(jac, wrts, one_dimensional, n_features)]
        rows = range(n_features)
        columns = [_point_gradient(jac[..., d], wrts, one_dimensional) for d in rows]
        return [jac, pt.stack(columns, axis=-2)]

    per_component = over_components(derivatives, components, batched)
    return [list(by_order) for by_order in zip(*per_component, strict=True)]


def _colored_hessian(jac, wrts, one_dimensional, n_features, colors):
    """``∂²λ_i/∂x_{s,d}∂x_{s,e}`` of each colour's row i: (..., C·N, D, D).

    From `colored_gradient`'s ``jac`` (..., C·N, D).

    For colour r of the rows, colour q of the input rows and feature d, the
    backward pass of ``Σ_{s ≡ q} jac_r[s, d]``, read at the input rows
    ``s' ≡ q``: two input rows of one colour never move the same row, so only
    ``s = s'`` is left. The C² D passes are one pass batched over its
    tangents by ``vectorize_graph`` (a graph of one pass's size).
    """
    n_rows = jac.shape[-2] // colors
    batch_dims = jac.ndim - 2
    tangent = pt.tensor("tangent", dtype=jac.dtype, shape=(None, n_features))
    grads = pytensor.grad((jac * tangent).sum(), wrts, disconnected_inputs="ignore")
    virtual = pt.arange(jac.shape[-2])
    own_block = pt.eq(virtual // n_rows, pt.arange(colors)[:, None])  # (C, C·N)
    input_color = pt.eq(virtual % n_rows % colors, pt.arange(colors)[:, None])  # (C, C·N)
    selected = own_block[:, None, None, :, None] * input_color[None, :, None, :, None]
    feature = pt.eye(n_features, dtype=jac.dtype)[None, None, :, None, :]
    tangents = (selected * feature).reshape((-1, jac.shape[-2], n_features))
    batched = [_over_tangents(g, tangent, tangents) for g in grads]
    columns = _feature_columns(batched, one_dimensional)  # (C·C·D, ..., N, E)
    columns = columns.reshape((colors, colors, n_features, *columns.shape[1:]))
    columns = pt.moveaxis(columns, 2, -2)  # (C, C, ..., N, D, E)
    at_own_color = pt.eq(pt.arange(n_rows) % colors, pt.arange(colors)[:, None])  # (C, N)
    at_own_color = at_own_color.reshape((1, colors, *[1] * batch_dims, n_rows, 1, 1))
    hess = (columns * at_own_color).sum(axis=1)  # (C, ..., N, D, E)
    hess = pt.moveaxis(hess, 0, batch_dims)  # (..., C, N, D, E)
    return hess.reshape((*hess.shape[:batch_dims], -1, n_features, n_features))


def _point_hessian(jac, wrts, one_dimensional, n_features):
    """``∂jac_d/∂x_e`` for every point: shape (..., N, D, D).

    One backward pass with a tangent over the D rows, batched over the rows by
    ``vectorize_graph`` (a graph of one pass's size, not D passes).
    """
    tangent = pt.vector("tangent", dtype=jac.dtype, shape=(n_features,))
    grads = pytensor.grad((jac * tangent).sum(), wrts, disconnected_inputs="ignore")
    identity = pt.eye(n_features, dtype=jac.dtype)
    rows = [_over_tangents(g, tangent, identity) for g in grads]
    return pt.moveaxis(_feature_columns(rows, one_dimensional), 0, -2)


def _over_tangents(gradient, tangent, tangents):
    """``gradient`` (a function of ``tangent``) for each row of ``tangents``, batched first.

    A gradient that does not depend on the tangent is the same for every one.
    """
    batched = vectorize_graph(gradient, {tangent: tangents})
    if batched.ndim > gradient.ndim:
        return batched
    return pt.broadcast_to(batched, (tangents.shape[0], *gradient.shape))

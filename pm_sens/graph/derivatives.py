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
    ``scales`` (S, N, K) the K varying parameters' scales. The norm is taken
    per input, then the columns are put side by side.
    """
    columns = []
    for i, flat in enumerate(one_dimensional):
        scale = [scales[..., m] if flat else scales[..., m, None] for m in range(len(grads))]
        u = [g[i] * s for g, s in zip(grads, scale, strict=True)]
        columns.append(pt.abs(u[0]) if len(u) == 1 else pt.sqrt(pt.add(*(x**2 for x in u))))
    return _feature_columns(columns, one_dimensional, features_last=True)


def _point_gradient(expr, wrts, one_dimensional):
    """``∂expr_i/∂x_i`` for every point, one column per feature: shape (..., N, D)."""
    grads = pytensor.grad(expr.sum(), wrts, disconnected_inputs="ignore")
    return _feature_columns(grads, one_dimensional)


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


def point_derivatives(components, wrts, one_dimensional, n_features, order, batched):
    """Per order up to ``order``, the list of each component's derivatives.

    ``batched``: second derivatives from one backward pass batched over the D
    rows (`_point_hessian`), a graph D times smaller to rewrite, for graphs run
    in NumPy; else from D backward passes, which compiled run faster (the
    batched pass multiplies every row by the whole identity).
    """
    if order == 0:
        return []
    jac = [_point_gradient(c, wrts, one_dimensional) for c in components]
    if order == 1:
        return [jac]
    if batched:
        return [jac, [_point_hessian(j, wrts, one_dimensional, n_features) for j in jac]]
    rows = range(n_features)
    hess = [
        pt.stack([_point_gradient(j[..., d], wrts, one_dimensional) for d in rows], axis=-2)
        for j in jac
    ]
    return [jac, hess]


def _point_hessian(jac, wrts, one_dimensional, n_features):
    """``∂jac_d/∂x_e`` for every point: shape (..., N, D, D).

    One backward pass with a tangent over the D rows, batched over the rows by
    ``vectorize_graph`` (a graph of one pass's size, not D passes).
    """
    tangent = pt.vector("tangent", dtype=jac.dtype, shape=(n_features,))
    grads = pytensor.grad((jac * tangent).sum(), wrts, disconnected_inputs="ignore")
    rows = []
    for g in grads:
        row = vectorize_graph(g, {tangent: pt.eye(n_features, dtype=jac.dtype)})
        # a gradient that does not depend on the tangent is the same for every row
        rows.append(row if row.ndim > g.ndim else pt.broadcast_to(row, (n_features, *g.shape)))
    return pt.moveaxis(_feature_columns(rows, one_dimensional), 0, -2)

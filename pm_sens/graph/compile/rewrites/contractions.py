"""Rewrites that take sums of broadcast products out of loops over draws × points × features.

Moment-mode derivatives average over draws and second derivatives repeat one
backward pass per feature; written as PyTensor builds them they are sums of
broadcast products, which BLAS runs several times faster as matrix products.
Draw-mode R-sens summed over the points is a sum of absolute products or of
quotients, whose factors the sum does not run over leave it.
"""

import weakref
from itertools import accumulate

import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.graph.rewriting.basic import GraphRewriter, node_rewriter
from pytensor.tensor.blas import Dot22
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.math import Dot, Sum
from pytensor.tensor.rewriting.basic import get_simplified_shape
from pytensor.tensor.rewriting.math import local_sum_prod_of_mul_or_div

from pm_sens.graph.compile.nodes import depends_on, is_elemwise, is_float
from pm_sens.graph.compile.rewrites._along import split_off_constant_along, variadic

#: per graph being rewritten, `constant_along`'s answers (dropped with the graph)
_MEMOS = weakref.WeakKeyDictionary()


@node_rewriter([Sum])
def local_draw_sums_as_products(fgraph, node):
    """``Σ_s r[s, n] c[s, d]``, a sum over draws of broadcast products, as ``rᵀ c``.

    Moment-mode derivatives average over the draws, and the derivative of a
    per-draw matrix–vector product (``X @ b``) with respect to the shared X is
    such a sum, which PyTensor runs as a loop over S × N × D products; a matrix
    product (BLAS) runs it several times faster. A sum of such terms is taken
    term by term. In a second derivative, each feature's backward pass brings a
    per-draw column repeated for every point (`_outer_factors`): it moves to
    the small (S, D) side, and every feature's product has the same (N, S) side.
    """
    (x,) = node.inputs
    if node.op.axis is None or tuple(node.op.axis) != (0,) or x.ndim != 3:
        return None
    if node.outputs[0].dtype != x.dtype:
        return None
    if any(x.type.broadcastable[1:]):
        return None  # no loop over S × N × D products
    memo = _MEMOS.setdefault(fgraph, {})
    terms = [_outer_factors(term, memo) for term in _added_terms(x)]
    if any(term is None for term in terms):
        return None
    # x's shape from its inputs': x itself is not computed anymore
    n_draws, n_points, n_features = get_simplified_shape(x, fgraph=fgraph)
    total = variadic(pt.add, [_sum_over_draws(rows, cols, n_draws) for rows, cols in terms])
    if total.type.broadcastable[0] and not node.outputs[0].type.broadcastable[0]:
        # every term the same for each point
        total = pt.broadcast_to(total, (n_points, n_features))
    try:
        return [node.outputs[0].type.filter_variable(total.astype(x.dtype))]
    except TypeError:
        return None


class DotsSharingTheirLeft(GraphRewriter):
    """``A @ C_1, …, A @ C_k`` as column blocks of one product ``A @ [C_1 … C_k]``.

    A second derivative's backward passes, one per feature, end in products
    of the same (N, S) weights with a different (S, D) matrix each
    (`_outer_factors`); one product with D·D columns runs about three times
    faster than D with D columns each.
    """

    def apply(self, fgraph):
        """Group the graph's 2-D products by their left side; join each group's right sides."""
        groups = {}
        for node in fgraph.toposort():
            if isinstance(node.op, Dot | Dot22) and all(v.ndim == 2 for v in node.inputs):
                groups.setdefault(node.inputs[0], []).append(node)
        for left, nodes in groups.items():
            outputs = [node.outputs[0] for node in nodes]
            rights = [node.inputs[1] for node in nodes]
            if len(nodes) < 2 or any(depends_on(right, outputs) for right in rights):
                continue
            product = pt.dot(left, pt.concatenate(rights, axis=1))
            widths = [
                r.type.shape[1] if r.type.shape[1] is not None else r.shape[1] for r in rights
            ]
            ends = list(accumulate(widths, initial=0))
            blocks = [product[:, ends[k] : ends[k + 1]] for k in range(len(nodes))]
            fgraph.replace_all_validate(
                list(zip(outputs, blocks, strict=True)), reason="dots_sharing_their_left"
            )


@node_rewriter([Sum])
def local_sum_of_an_absolute_product(fgraph, node):
    """``Σ |a · x|`` with ``a`` the same along the summed axes as ``|a| Σ |x|``, and ``Σ |a / x|``.

    The draw-mode R-sens of one parameter linear in the inputs (``μ = X b``) is
    ``|b_d s_n|`` per draw, point and feature: its sum over the points runs
    over S × N × D values, and factored over S × N. PyTensor takes such factors
    out of ``Σ a · x`` (``local_sum_prod_of_mul_or_div``), not out of an
    absolute value. A quotient's absolute value is the quotient of theirs
    (`local_sum_of_a_quotient`).
    """
    (x,) = node.inputs
    if x.owner is None or not is_elemwise(x.owner, ps.Abs):
        return None
    product = x.owner.inputs[0]
    if product.owner is not None and is_elemwise(product.owner, ps.TrueDiv):
        a, b = product.owner.inputs
        return local_sum_of_a_quotient.transform(None, node.op(pt.abs(a) / pt.abs(b)).owner)
    if product.owner is None or not is_elemwise(product.owner, ps.Mul):
        return None
    axes = range(x.ndim) if node.op.axis is None else node.op.axis
    factors = product.owner.inputs
    if not any(all(f.type.broadcastable[a] for a in axes) for f in factors):
        return None
    total = node.op(pt.mul(*(pt.abs(f) for f in factors)))
    return local_sum_prod_of_mul_or_div.transform(None, total.owner)


@node_rewriter([Sum])
def local_sum_of_a_quotient(fgraph, node):
    """``Σ a / x`` with ``a`` the same along the summed axes as ``a Σ 1/x``, ``x`` being smaller.

    The draw-mode R-sens of a Bernoulli logit linear in the inputs is
    ``|b_d| / (2 cosh(η_n / 2))`` per draw, point and feature: its sum over
    the points divides S × N × D times, and factored S × N times. PyTensor
    keeps a quotient's numerator in the sum (``local_sum_prod_of_mul_or_div``):
    ``1/x`` costs as much as ``a / x`` where ``x`` is as large as the quotient,
    so here ``x`` must be the same along an axis the quotient is not.
    """
    (quotient,) = node.inputs
    if quotient.owner is None or not is_elemwise(quotient.owner, ps.TrueDiv):
        return None
    a, x = quotient.owner.inputs
    axes = range(quotient.ndim) if node.op.axis is None else node.op.axis
    whole = quotient.type.broadcastable
    if not all(a.type.broadcastable[i] for i in axes):
        return None
    # x runs over every summed axis the quotient runs over: each term is counted
    if any(x.type.broadcastable[i] != whole[i] for i in axes):
        return None
    if not any(b and not w for b, w in zip(x.type.broadcastable, whole, strict=True)):
        return None
    total = node.op(pt.mul(a, pt.reciprocal(x)))
    return local_sum_prod_of_mul_or_div.transform(None, total.owner)


@node_rewriter([Elemwise])
def local_outer_products_as_a_matrix_product(fgraph, node):
    """``a + Σ_j c_j r_j`` as ``a + [c_1 … c_J] @ [r_1; …; r_J]``.

    ``c_j`` are columns (S, 1), ``r_j`` rows (1, N). A linear predictor written
    one input at a time (``b0 * x0 + b1 * x1 + …``, as bambi builds it) becomes
    such a sum once vectorized over draws: one (S, N) array per term in NumPy,
    where one matrix product (BLAS) does it all.
    """
    out = node.outputs[0]
    if not is_elemwise(node, ps.Add) or out.ndim != 2 or any(out.type.broadcastable):
        return None
    pairs = [_column_times_row(term) for term in node.inputs]
    if sum(pair is not None for pair in pairs) < 2:
        return None
    columns = pt.concatenate([c for c, _ in filter(None, pairs)], axis=1)
    rows = pt.concatenate([r for _, r in filter(None, pairs)], axis=0)
    rest = [term for term, pair in zip(node.inputs, pairs, strict=True) if pair is None]
    total = variadic(pt.add, [pt.dot(columns, rows), *rest])
    try:
        return [out.type.filter_variable(total.astype(out.dtype))]
    except TypeError:
        return None


def _column_times_row(term):
    """``(c, r)`` if ``term`` is ``c * r`` with ``c`` (S, 1) and ``r`` (1, N) floats, else None."""
    if term.owner is None or not is_elemwise(term.owner, ps.Mul) or len(term.owner.inputs) != 2:
        return None
    a, b = term.owner.inputs
    if not all(is_float(v) and v.dtype == term.dtype for v in (a, b)):
        return None
    for column, row in ((a, b), (b, a)):
        if column.type.broadcastable == (False, True) and row.type.broadcastable == (True, False):
            return column, row
    return None


def _added_terms(x):
    """The terms of ``x`` as a sum (``[x]`` if it is no sum)."""
    if x.owner is not None and is_elemwise(x.owner, ps.Add):
        return [t for i in x.owner.inputs for t in _added_terms(i)]
    return [x]


def _multiplied_factors(x):
    """The factors of ``x`` as a product.

    A division by a value broadcast on every axis (the number of draws) is a
    product with its reciprocal.
    """
    if x.owner is not None and is_elemwise(x.owner, ps.Mul):
        return [f for i in x.owner.inputs for f in _multiplied_factors(i)]
    if x.owner is not None and is_elemwise(x.owner, ps.TrueDiv):
        numerator, denominator = x.owner.inputs
        if all(denominator.type.broadcastable):
            # in the term's dtype: Numba's reciprocal of an integer is float32
            return [*_multiplied_factors(numerator), pt.reciprocal(denominator.astype(x.dtype))]
    return [x]


def _outer_factors(term, memo):
    """A (S, N, D) term's factors: those constant along D (rows), along N (columns).

    A factor constant along N in value but not in type (a feature's column of
    a per-draw matrix, broadcast over the points) is a column, of length 1
    along N; a factor proportional to one is split into the two. None if a
    factor varies along both.
    """
    rows, cols = [], []
    for factor in _multiplied_factors(term):
        along_n, along_d = (not b for b in factor.type.broadcastable[1:])
        if along_n and along_d:
            return None
        if along_d:
            cols.append(factor)
            continue
        split = split_off_constant_along(factor, 1, memo)
        if split is None:
            rows.append(factor)
        else:
            rest, constant = split
            if rest is not None:
                rows.append(rest)
            cols.append(constant)
    return rows, cols


def _sum_over_draws(rows, cols, n_draws):
    """``Σ_s r[s, n] c[s, d]`` for ``r = Π rows`` (S, N, 1) and ``c = Π cols`` (S, 1, D)."""
    if not cols or not rows:
        return variadic(pt.mul, rows or cols).sum(0)
    r, c = variadic(pt.mul, rows).squeeze(2), variadic(pt.mul, cols).squeeze(1)
    per_draw_r, per_draw_c = (not v.type.broadcastable[0] for v in (r, c))
    if per_draw_r and per_draw_c:
        return pt.dot(r.T, c)
    if not (per_draw_r or per_draw_c):
        return n_draws * r.T * c  # the same term for every draw
    # one side the same for every draw leaves the sum: PyTensor's own rewrite
    # (it runs in "specialize", before this one)
    total = (r[:, :, None] * c[:, None, :]).sum(0)
    (factored,) = local_sum_prod_of_mul_or_div.transform(None, total.owner)
    return factored

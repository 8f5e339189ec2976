"""Compile a predictive into one function over a chunk of posterior draws.

The free random variables are replaced by placeholders with a leading draw axis
(``vectorize_graph``), the data containers by symbolic inputs, so one compiled
function serves every chunk of draws and every set of points. Per-point
derivatives use locality: the parameters at point i depend only on row i of
the inputs, so ``grad(λ.sum(), X)[i] = ∂λ_i/∂x_i`` for all points at once.
"""

import math
import threading
from dataclasses import dataclass, field
from functools import cache, partial
from itertools import accumulate, combinations

import numpy as np
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.compile.mode import Mode, get_default_mode
from pytensor.graph.basic import Constant
from pytensor.graph.replace import graph_replace, vectorize_graph
from pytensor.graph.rewriting.basic import GraphRewriter, in2out, node_rewriter
from pytensor.graph.rewriting.db import RewriteDatabaseQuery
from pytensor.graph.traversal import graph_inputs
from pytensor.link.vm import VMLinker
from pytensor.tensor.basic import Alloc, Join, get_underlying_scalar_constant_value
from pytensor.tensor.blas import Dot22, Gemm
from pytensor.tensor.elemwise import CAReduce, DimShuffle, Elemwise
from pytensor.tensor.exceptions import NotScalarConstantError
from pytensor.tensor.math import Dot, Sum
from pytensor.tensor.rewriting.basic import get_simplified_shape
from pytensor.tensor.subtensor import IncSubtensor
from pytensor.tensor.utils import import_func_from_string
from scipy.linalg.blas import get_blas_funcs

from pm_sens.graph.likelihoods import statistic_expression
from pm_sens.graph.model_queries import (
    data_containers,
    depends_on,
    free_variables,
    is_elemwise,
    is_float,
    observed_ancestors,
    symbolic_tensor,
)


@dataclass
class CompiledPredictive:
    """A compiled predictive and the order of the arrays it takes and returns.

    Calling it with ``(data values, draw values)`` returns a dict with

    - mode ``"moment"``: ``phi`` (N, M) chunk moments (class probabilities or
      mean, then the chunk's mixture variance (or squared scale, and tail
      weight) per ``second_moment``),
      with ``order >= 1`` ``jac`` (M, N, D), with ``order=2`` ``hess`` (M, N, D, D);
    - mode ``"draw"``: ``phi`` (S, N, M) per-draw parameters (a view of an
      (M, S, N) array: each component contiguous, as NumPy reads it fastest
      after, where strided it was 3–4x slower), ``jac`` a list
      of V arrays (S, N, D) and ``hess`` of V arrays (S, N, D, D), for the V
      components listed in ``varying`` (separate arrays: stacking them would
      copy the largest arrays of the call);

    (moment-mode derivatives put the parameter axis first, so each parameter's
    slice is contiguous for the quadratic forms of `pm_sens.measures.rsens`);
    - ``statistics`` (draw mode, when built with ``statistics``): per name a
      per-draw statistic (S, N) computed in the same evaluation as ``phi``
      (``phi`` is left out when built with ``parameters=False``);
    - ``fixed``: parameters held fixed by the family (Binomial ``n``).
    """

    function: object
    data_variables: list
    free_rvs: list
    inputs: list
    mode: str
    order: int
    varying: list
    fixed_names: list
    #: the keyword arguments of `compile_predictive` that built it
    settings: dict
    #: shapes of the fixed (non-pm.Data) arrays the parameters hold, for messages
    fixed_array_shapes: list = field(default_factory=list)
    #: a compiled function keeps its inputs and outputs in shared storage:
    #: one call at a time (dask may run blocks in threads)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def statistic_names(self):
        """Names of the per-draw statistics returned alongside ``phi``."""
        return self.settings.get("statistics", ())

    def __call__(self, data_values, draw_values):
        """Evaluate on data arrays (in ``data_variables`` order) and draw arrays."""
        rest = list(self.run(*data_values, *draw_values))
        result = {}
        if self.settings.get("parameters", True):
            phi = rest.pop(0)
            result["phi"] = np.moveaxis(phi, 0, -1) if self.mode == "draw" else phi
        width = 1 if self.mode == "moment" else len(self.varying)
        for name in ["jac", "hess"][: self.order]:
            parts, rest = rest[:width], rest[width:]
            result[name] = parts[0] if self.mode == "moment" else parts
        if self.statistic_names:
            width = len(self.statistic_names)
            result["statistics"] = dict(zip(self.statistic_names, rest[:width], strict=True))
            rest = rest[width:]
        result["fixed"] = dict(zip(self.fixed_names, rest, strict=True))
        return result

    def run(self, *arrays):
        """The compiled function's outputs on ``arrays``, with a clear shape error."""
        # one array type per argument (Numba compiles the graph again for each
        # new combination of memory layout and write flag)
        arguments = [np.require(a, requirements=("A", "C", "W")) for a in arrays]
        with self.lock:
            try:
                return self.function(*arguments)
            except ValueError as error:
                if "shape" not in str(error) or not self.fixed_array_shapes:
                    raise
                raise ValueError(
                    "the likelihood's parameters cannot be evaluated at these points: they "
                    f"hold fixed arrays of shapes {self.fixed_array_shapes} (NumPy values in "
                    "the model, not pm.Data). An array with one value per observation cannot "
                    "follow points of another number: put it in a pm.Data container and give "
                    f"its values in points= ({error})"
                ) from None


@dataclass
class WhitenedNorm(CompiledPredictive):
    """Draw-mode R-sens at α = 1 computed inside the graph, from parameters computed first.

    Calling it returns what the forward function (``forward``, order 0) returns
    plus ``norm`` (S, N, D): ``sqrt(Σ_m (s_m ∂φ_m)²)`` with ``s_m = sqrt(I_mm)``
    (`pm_sens.families.Family.whitening` of the forward's parameters, in NumPy),
    the derivatives never leaving the graph. ``norm`` is None where the family's
    information is not diagonal on the varying parameters. With more than one
    varying parameter the squares may over- or underflow: `norm_is_exact` says
    whether the chunk's values can be used as they are.
    """

    forward: CompiledPredictive | None = None
    family: object = None
    n_features: int = 0
    #: whether the graph takes an array to compute ``norm`` in (compiled graphs; it is
    #: returned where one loop computes the norm, a new array where columns are joined)
    writes_in_place: bool = False

    def __call__(self, data_values, draw_values, out=None):
        """The forward function's outputs and ``norm``, on data and draw arrays.

        ``out`` (S, N, D), C-contiguous: an array ``norm`` may be computed in
        (it is where `writes_in_place`); else ``norm`` is a new array.
        """
        result = self.forward(data_values, draw_values)
        phi, fixed = per_draw_parameters(result, len(draw_values[0]))
        scales, corr = self.family.whitening(phi, self.varying, **fixed)
        result["norm"] = None
        if corr is not None:
            return result
        arguments = [*data_values, *draw_values, scales]
        if self.writes_in_place:
            if out is None:
                out = np.empty((*phi.shape[:-1], self.n_features))
            arguments += [out, False]
        (result["norm"],) = self.run(*arguments)
        return result

    def norm_is_exact(self, norm):
        """Whether no square in ``norm`` over- or underflowed (nor any value is nan)."""
        if len(self.varying) == 1:  # |s ∂φ|: no squares
            return bool(norm.max(initial=0.0) < np.inf)
        smallest, largest = norm.min(initial=np.inf), norm.max(initial=0.0)
        return bool(smallest >= _SMALLEST_SAFE_NORM and largest < np.inf)


def per_draw_parameters(out, n_draws):
    """A draw-mode chunk's ``phi`` (S, R, M) and fixed parameters (S, R).

    The draw axis is broadcast where they do not depend on the draws.
    """
    phi = np.broadcast_to(out["phi"], (n_draws, *out["phi"].shape[-2:]))
    fixed = {k: np.broadcast_to(v, phi.shape[:-1]) for k, v in out["fixed"].items()}
    return phi, fixed


#: below this, a sum of squares under the root may have lost digits to underflow
_SMALLEST_SAFE_NORM = 1e-140


def _whitened_norm(grads, scales, one_dimensional):
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


#: how a graph is run: "numba" compiles it (PyTensor's default mode: seconds to
#: tens of seconds the first time, cached on disk); "python" runs each op as a
#: NumPy call, with no compiling, slower on large arrays (no fused loops)
BACKENDS = ("numba", "python")


def _compile_mode(backend):
    """The PyTensor mode of ``backend``, minus a rewrite that fails noisily.

    PyTensor 3.3's ``orthogonal_solve_to_transpose_matmul`` raises (and logs a
    traceback) on draw-batched triangular solves, e.g. a GP's Cholesky solve;
    the rewrite would not apply to them anyway.
    """
    if backend == "python":
        mode = Mode(
            VMLinker(use_cloop=False, c_thunks=False),
            RewriteDatabaseQuery(
                include=["fast_run"],
                exclude=["fusion", "cxx_only"],
                extra_rewrites=[
                    # after the stabilizing rewrites, which write log-sigmoids as softplus
                    (in2out(_numpy_ufunc_forms), 48),
                    # after the inplace rewrites (50.5)
                    (in2out(_ufuncs_writing_out, _gemm_by_blas), 99),
                ],
            ),
        )
    else:
        mode = get_default_mode()
    # before the elementwise operations are fused (49)
    mode = mode.register(
        (in2out(_outer_products_as_a_matrix_product), 48.3),
        (in2out(_set_into_zeros_as_view), 48.4),
        (in2out(_join_of_like_elementwise), 48.45),
        (in2out(_select_only_into_a_loop), 48.46),
        (in2out(_draw_sums_as_products), 48.5),
        # after the merge (49), which makes the per-feature products' left sides one
        (_DotsSharingTheirLeft(), 49.2),
    )
    return mode.excluding("orthogonal_solve_to_transpose_matmul")


#: scalar ops without a NumPy ufunc, which the NumPy linker would run one
#: element at a time in Python, in forms made of ufuncs: ``clip`` (bambi's
#: links clip), ``softplus`` (``pm.math.log1pexp``, and PyTensor's rewrites of
#: log-sigmoids), ``log1mexp``
_UFUNC_FORMS = {
    ps.Clip: lambda x, low, high: pt.minimum(pt.maximum(x, low), high),
    ps.Softplus: lambda x: pt.maximum(x, 0) + pt.log1p(pt.exp(-pt.abs(x))),
    ps.Log1mexp: lambda x: pt.switch(x < -np.log(2), pt.log1p(-pt.exp(x)), pt.log(-pt.expm1(x))),
}


class _UfuncWithOut(Elemwise):
    """An elementwise op that NumPy's linker runs with the ufunc's ``out=``.

    PyTensor's NumPy implementation of an inplace op computes a new array and
    then copies it into the input it destroys, and folds a sum or product of
    several terms into a new array per term. This one writes into the destroyed
    input directly, and folds the terms into one array, the smallest partial
    results first (`_fold`).
    """

    def perform(self, node, inputs, output_storage):
        self._check_runtime_broadcast(node, inputs)
        ufunc = import_func_from_string(self.nfunc_spec[0])
        target = inputs[self.inplace_pattern[0]] if self.inplace_pattern else None
        with np.errstate(all="ignore"):
            if len(inputs) == self.nfunc_spec[1]:
                result = ufunc(*inputs, out=target)
            else:
                result = self._fold(ufunc, inputs, target)
        output_storage[0][0] = result

    def _fold(self, ufunc, inputs, target):
        """``x0 ∘ x1 ∘ x2 ∘ ...``, in one array.

        Each step combines the two terms with the smallest broadcast shape (the
        first such pair): a draw column times two point rows, ``(S, 1) (1, N)
        (1, N)``, multiplies the rows first, one (S, N) pass instead of two
        (of strided rows, as columns of X are, several times slower). Terms of
        one shape fold left to right. Into ``target`` from the step that reads
        it, before that into a partial result of the step's shape.
        """
        terms, shapes = list(inputs), [x.shape for x in inputs]
        partial = [False] * len(terms)  # whether a term is a partial result (ours)
        read = target is None  # whether target's values were read
        same_shape = len(set(shapes)) == 1
        while len(terms) > 1:
            i, j = (0, 1) if same_shape else _smallest_pair(shapes)
            shape = _broadcast_shape(shapes[i], shapes[j])
            read = read or terms[i] is target or terms[j] is target
            if read and target is not None and target.shape == shape:
                out = target
            else:
                out = next((terms[k] for k in (i, j) if partial[k] and shapes[k] == shape), None)
            terms[i], shapes[i], partial[i] = ufunc(terms[i], terms[j], out=out), shape, True
            del terms[j], shapes[j], partial[j]
        return terms[0]


def _broadcast_shape(a, b):
    """The broadcast of two shapes of one length, known to broadcast."""
    return tuple(m if n == 1 else n for m, n in zip(a, b, strict=True))


def _smallest_pair(shapes):
    """The first pair ``(i, j)``, ``i < j``, whose broadcast shape has the fewest elements."""
    return min(
        combinations(range(len(shapes)), 2),
        key=lambda ij: math.prod(_broadcast_shape(shapes[ij[0]], shapes[ij[1]])),
    )


class _GemmByBlas(Gemm):
    """``z ← a x y + b z`` (PyTensor's inplace Gemm) run by NumPy's linker as one BLAS call.

    PyTensor's NumPy implementation computes ``x y`` into a new array and adds
    it to z, two passes over z's size besides the product; BLAS's gemm adds the
    product into z as it computes it (into ``zᵀ = yᵀ xᵀ`` when z is C-ordered,
    as BLAS's arrays are Fortran-ordered). Several times faster for a
    per-draw linear predictor plus other terms, (S, N) with few inputs.
    """

    def __init__(self):
        super().__init__(inplace=True)

    def perform(self, node, inputs, output_storage):
        z, a, x, y, b = inputs
        if z.shape != (x.shape[0], y.shape[1]) or not z.size or not _blas_ordered(z):
            super().perform(node, inputs, output_storage)  # broadcast z, or copied anyway
            return
        c, left, right = (z, x, y) if z.flags.f_contiguous else (z.T, y.T, x.T)
        (gemm,) = get_blas_funcs(("gemm",), (c, left, right))
        (left, trans_a), (right, trans_b) = _blas_operand(left), _blas_operand(right)
        result = gemm(
            a.item(),
            left,
            right,
            beta=b.item(),
            c=c,
            trans_a=trans_a,
            trans_b=trans_b,
            overwrite_c=True,
        )
        if result is not c:  # BLAS copied c: a new array holds the result
            z = result if c is z else result.T
        output_storage[0][0] = z


def _blas_ordered(m):
    """Whether BLAS reads ``m`` or its transpose without a copy."""
    return m.flags.f_contiguous or m.flags.c_contiguous


def _blas_operand(m):
    """``(array, trans)`` with ``op(array) = m``, Fortran-ordered where ``m`` is either order."""
    return (m.T, 1) if m.flags.c_contiguous and not m.flags.f_contiguous else (m, 0)


@node_rewriter([Gemm])
def _gemm_by_blas(fgraph, node):
    """Inplace Gemm as `_GemmByBlas` (graphs run in NumPy)."""
    if type(node.op) is not Gemm or not node.op.inplace:
        return None
    return _GemmByBlas().make_node(*node.inputs).outputs


def _writes_with_out(node):
    """Whether `_UfuncWithOut` can run ``node``: one NumPy ufunc, one dtype."""
    op = node.op
    spec = getattr(op.scalar_op, "nfunc_spec", None)
    if type(op) is not Elemwise or spec is None or spec[2] != 1 or len(node.outputs) != 1:
        return False
    if not isinstance(import_func_from_string(spec[0]), np.ufunc):
        return False
    dtypes = {x.dtype for x in [*node.inputs, *node.outputs]}
    if len(dtypes) != 1 or dtypes.pop() not in ("float32", "float64"):
        return False
    variadic = isinstance(op.scalar_op, ps.Add | ps.Mul) and len(node.inputs) > 2
    return bool(op.inplace_pattern) and len(node.inputs) == spec[1] or variadic


@node_rewriter([Elemwise])
def _ufuncs_writing_out(fgraph, node):
    """Inplace and variadic elementwise ops as `_UfuncWithOut` (graphs run in NumPy)."""
    if not _writes_with_out(node):
        return None
    return (
        _UfuncWithOut(node.op.scalar_op, node.op.inplace_pattern).make_node(*node.inputs).outputs
    )


@node_rewriter([Elemwise])
def _numpy_ufunc_forms(fgraph, node):
    scalar_op = node.op.scalar_op
    if isinstance(scalar_op, ps.Composite):
        return _composite_as_elemwise(scalar_op, node.inputs)
    form = _UFUNC_FORMS.get(type(scalar_op))
    return None if form is None else [form(*node.inputs)]


def _composite_as_elemwise(composite, inputs):
    """A composite scalar op's outputs as one elementwise op per inner op.

    PyTensor's rewrites build composites outside the fusion pass (``x**3`` as
    ``sqr(x) * x``); NumPy's linker would run them one element at a time.
    """
    if any(o.owner is None for o in composite.fgraph.outputs):
        return None  # an output that is an input or a constant: not the op's broadcast type
    values = dict(zip(composite.fgraph.inputs, inputs, strict=True))
    for inner in composite.fgraph.toposort():
        arguments = [
            values[i] if i in values else pt.constant(i.data, dtype=i.dtype) for i in inner.inputs
        ]
        outputs = Elemwise(inner.op)(*arguments, return_list=True)
        values.update(zip(inner.outputs, outputs, strict=True))
    return [values[o] for o in composite.fgraph.outputs]


@node_rewriter([Sum])
def _draw_sums_as_products(fgraph, node):
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
    terms = [_outer_factors(term) for term in _added_terms(x)]
    if any(term is None for term in terms):
        return None
    # x's shape from its inputs': x itself is not computed anymore
    n_draws, n_points, n_features = get_simplified_shape(x, fgraph=fgraph)
    total = _variadic(pt.add, [_sum_over_draws(rows, cols, n_draws) for rows, cols in terms])
    if total.type.broadcastable[0] and not node.outputs[0].type.broadcastable[0]:
        # every term the same for each point
        total = pt.broadcast_to(total, (n_points, n_features))
    try:
        return [node.outputs[0].type.filter_variable(total.astype(x.dtype))]
    except TypeError:
        return None


class _DotsSharingTheirLeft(GraphRewriter):
    """``A @ C_1, …, A @ C_k`` as column blocks of one product ``A @ [C_1 … C_k]``.

    A second derivative's backward passes, one per feature, end in products
    of the same (N, S) weights with a different (S, D) matrix each
    (`_outer_factors`); one product with D·D columns runs about three times
    faster than D with D columns each.
    """

    def apply(self, fgraph):
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


@node_rewriter([Elemwise])
def _outer_products_as_a_matrix_product(fgraph, node):
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
    total = _variadic(pt.add, [pt.dot(columns, rows), *rest])
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


@node_rewriter([Join])
def _join_of_like_elementwise(fgraph, node):
    """``join(f(a_1, c), …, f(a_D, c))`` as ``f(join(a_1, …, a_D), c)``.

    Draw-mode R-sens of several 1-D inputs (bambi's predictors) puts one
    (S, N, 1) column per input side by side, each the same elementwise
    expression of shared (S, N) arrays and of the input's own (S, 1, 1)
    coefficient: computed as one expression of the joined coefficients, the
    (S, N, D) result is written once, where D columns were written and then
    copied side by side.
    """
    return _lifted_join(fgraph, node.op.axis, node.inputs)


def _lifted_join(fgraph, axis, columns, expand=None):
    """``[join(columns)]`` computed below the elementwise op they share, or None.

    The columns are ``expand(x)`` for ``x`` in ``columns`` when ``expand`` (a
    DimShuffle inserting axes) is given. Each column must be one slice along
    ``axis``, the output of the same op with as many inputs, used nowhere
    else; inputs the columns share must be broadcast along ``axis``, the others
    are joined (lifted further where they allow it).
    """
    if len(columns) < 2 or any(len(fgraph.clients.get(x, ())) != 1 for x in columns):
        return None
    if expand is None and all(_inserts_axes(x.owner) for x in columns):
        ops = {x.owner.op for x in columns}
        inner = [x.owner.inputs[0] for x in columns]
        return None if len(ops) != 1 else _lifted_join(fgraph, axis, inner, ops.pop())
    owners = [x.owner for x in columns]
    if any(o is None or not isinstance(o.op, Elemwise) or len(o.outputs) != 1 for o in owners):
        return None
    if len({o.op for o in owners}) != 1 or len({len(o.inputs) for o in owners}) != 1:
        return None  # different ops, or sums or products of different lengths
    wrap = expand if expand is not None else (lambda v: v)
    if any(wrap(x).type.shape[axis] != 1 for x in columns):
        return None
    inputs = []
    for values in zip(*(o.inputs for o in owners), strict=True):
        if all(v is values[0] for v in values):
            shared = wrap(values[0])
            if not shared.type.broadcastable[axis]:
                return None
            inputs.append(shared)
            continue
        lifted = _lifted_join(fgraph, axis, values, expand)
        if lifted is None:
            wrapped = [wrap(v) for v in values]
            if len({v.type.broadcastable for v in wrapped}) != 1:
                return None
            lifted = [pt.join(axis, *wrapped)]
        inputs.append(lifted[0])
    return owners[0].op.make_node(*inputs).outputs


@node_rewriter([Elemwise])
def _select_only_into_a_loop(fgraph, node):
    """``switch(keep, target, norm)`` as ``norm`` where no elementwise loop computes ``norm``.

    ``keep`` is always false: the select is there for the loop computing
    ``norm`` to run in ``target`` (`compile_predictive`). Where ``norm`` is
    made otherwise (columns joined), the select would only copy it.
    """
    if not is_elemwise(node, ps.Switch):
        return None
    keep, _, norm = node.inputs
    if keep.owner is not None and isinstance(keep.owner.op, DimShuffle):
        keep = keep.owner.inputs[0]
    if not getattr(keep.tag, "always_false", False):
        return None
    if norm.owner is not None and isinstance(norm.owner.op, Elemwise):
        return None
    return [norm]


def _inserts_axes(node):
    """Whether ``node`` only inserts broadcast axes into its input."""
    return node is not None and isinstance(node.op, DimShuffle) and node.op.is_expand_dims


@node_rewriter([IncSubtensor])
def _set_into_zeros_as_view(fgraph, node):
    """``zeros(..., 1, ...)[..., 0, ...] = y`` as ``y`` with that axis inserted (a view).

    The gradient of a column of a per-draw array is written so (a new array of
    zeros per input and chunk, then a copy): bambi's per-predictor containers
    made ten of them per chunk of draw-mode R-sens.
    """
    x, y, *_ = node.inputs
    if x.owner is None or not isinstance(x.owner.op, Alloc):
        return None
    try:
        if get_underlying_scalar_constant_value(x.owner.inputs[0]) != 0:
            return None
    except NotScalarConstantError:
        return None
    indices = node.op.idx_list
    integers = [k for k, index in enumerate(indices) if not isinstance(index, slice)]
    whole = all(index == slice(None) for index in indices if isinstance(index, slice))
    if len(indices) != x.ndim or len(integers) != 1 or not whole:
        return None
    (axis,) = integers
    kept = [b for k, b in enumerate(x.type.broadcastable) if k != axis]
    if x.type.shape[axis] != 1 or y.ndim != len(kept):
        return None
    if any(by and not bx for by, bx in zip(y.type.broadcastable, kept, strict=True)):
        return None  # y would be broadcast by the assignment
    return [pt.expand_dims(y, axis).astype(x.dtype)]


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


def _outer_factors(term):
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
        split = _split_off_constant_along(factor, axis=1)
        if split is None:
            rows.append(factor)
        else:
            rest, constant = split
            if rest is not None:
                rows.append(rest)
            cols.append(constant)
    return rows, cols


def _split_off_constant_along(x, axis):
    """``(c, p)`` with ``x = c · p`` and ``p`` constant along ``axis`` (length 1 there).

    ``c`` is None when ``x`` itself is constant along ``axis``. None when no
    such ``p`` is found among the inputs of ``x``'s elementwise operations, or
    the rest ``c`` would be constant along ``axis`` too.
    """
    constant = _constant_along(x, axis)
    if constant is not None:
        return None, constant
    for candidate in _elementwise_leaves(x):
        if candidate.type.broadcastable[axis]:
            continue
        constant = _constant_along(candidate, axis)
        if constant is None:
            continue
        rest = _linear_coefficient(x, candidate)
        if rest is not None and not rest.type.broadcastable[axis]:
            return rest, constant
    return None


def _elementwise_leaves(x):
    """The inputs of the elementwise operations that compute ``x``, first seen first."""
    leaves, stack, seen = [], [x], set()
    while stack:
        var = stack.pop()
        if var in seen:
            continue
        seen.add(var)
        if var.owner is not None and isinstance(var.owner.op, Elemwise):
            stack.extend(reversed(var.owner.inputs))
        else:
            leaves.append(var)
    return leaves


def _linear_coefficient(x, p):
    """``c`` with ``x = c · p``, or None.

    ``x`` must be a sum, difference, quotient or switch of products that each
    hold ``p`` exactly once as a factor. Each backward pass of a second
    derivative multiplies a feature's column into every term of the first
    derivative's chain rule, and through ``switch`` branches (a stable
    sigmoid's two forms).
    """
    if x is p:
        return pt.constant(np.ones((1,) * x.ndim, dtype=x.dtype))
    node = x.owner
    if node is None or not isinstance(node.op, Elemwise) or len(node.outputs) != 1:
        return None
    scalar, inputs = node.op.scalar_op, node.inputs
    holds = [depends_on(i, [p]) for i in inputs]
    if isinstance(scalar, ps.Mul):
        if sum(holds) != 1:
            return None
        k = holds.index(True)
        inner = _linear_coefficient(inputs[k], p)
        rest = [v for i, v in enumerate(inputs) if i != k]
        return None if inner is None else _variadic(pt.mul, [*rest, inner])
    if isinstance(scalar, ps.Add | ps.Sub | ps.Neg):
        inner = [_linear_coefficient(v, p) for v in inputs]
        return None if any(c is None for c in inner) else node.op(*inner)
    if isinstance(scalar, ps.TrueDiv) and holds == [True, False]:
        inner = _linear_coefficient(inputs[0], p)
        return None if inner is None else inner / inputs[1]
    if isinstance(scalar, ps.Switch) and not holds[0]:
        branches = [_linear_coefficient(v, p) for v in inputs[1:]]
        return None if None in branches else pt.switch(inputs[0], *branches)
    return None


@cache
def _constant_along(x, axis):
    """``x`` of length 1 along ``axis``, if its value is the same all along it; else None.

    Follows views, elementwise operations, reductions, matrix products and
    writes into an array of one value: the backward pass of one feature's
    column of ``X @ Bᵀ`` is ``onehot_d @ Bᵀ``, ``B[:, d]`` repeated for every
    point. Remembered (until `_function` has compiled), so that every term
    holding the same column uses one graph for it: half the nodes to compile.
    """
    if x.type.broadcastable[axis]:
        return x
    node = x.owner
    if node is None:
        return None
    op = node.op
    if isinstance(op, DimShuffle):
        inner = _constant_along(node.inputs[0], op.new_order[axis])
        return None if inner is None else op(inner)
    if isinstance(op, Elemwise):
        inner = [_constant_along(v, axis) for v in node.inputs]
        if any(v is None for v in inner):
            return None
        return op.make_node(*inner).outputs[node.outputs.index(x)]
    if isinstance(op, CAReduce):
        (v,) = node.inputs
        reduced = range(v.ndim) if op.axis is None else op.axis
        inner = _constant_along(v, [k for k in range(v.ndim) if k not in reduced][axis])
        return None if inner is None else op(inner)
    if isinstance(op, Dot | Dot22) and axis == 0:
        inner = _constant_along(node.inputs[0], 0)
        return None if inner is None else op(inner, node.inputs[1])
    if isinstance(op, IncSubtensor):
        return _constant_along_written(node, axis)
    if isinstance(op, Alloc):
        value, *shape = node.inputs
        offset = axis - (x.ndim - value.ndim)
        if offset >= 0 and not value.type.broadcastable[offset]:
            return None
        shape[axis] = 1
        return pt.alloc(value, *shape)
    return None


def _constant_along_written(node, axis):
    """`_constant_along` of ``x[index] = y`` (or ``+= y``), ``index`` taking all of ``axis``."""
    x, y, *index_values = node.inputs
    indices = node.op.idx_list
    if axis < len(indices) and indices[axis] != slice(None):
        return None
    # the axis of x[index] (and of y, aligned to its right) that ``axis`` becomes
    kept = [k for k, index in enumerate(indices) if isinstance(index, slice)]
    kept += list(range(len(indices), x.ndim))
    y_axis = kept.index(axis) - (len(kept) - y.ndim)
    inner_x = _constant_along(x, axis)
    inner_y = y if y_axis < 0 else _constant_along(y, y_axis)
    if inner_x is None or inner_y is None:
        return None
    return node.op(inner_x, inner_y, *index_values)


def _sum_over_draws(rows, cols, n_draws):
    """``Σ_s r[s, n] c[s, d]`` for ``r = Π rows`` (S, N, 1) and ``c = Π cols`` (S, 1, D)."""
    if not cols or not rows:
        return _variadic(pt.mul, rows or cols).sum(0)
    r, c = _variadic(pt.mul, rows).squeeze(2), _variadic(pt.mul, cols).squeeze(1)
    per_draw_r, per_draw_c = (not v.type.broadcastable[0] for v in (r, c))
    if per_draw_r and per_draw_c:
        return pt.dot(r.T, c)
    if per_draw_r:
        return r.sum(0)[:, None] * c
    if per_draw_c:
        return r.T * c.sum(0)[None, :]
    return n_draws * r.T * c


def _variadic(op, values):
    """``op(*values)`` (``pt.add``, ``pt.mul``), or the one value.

    A one-input sum or product would run element by element in NumPy.
    """
    return values[0] if len(values) == 1 else op(*values)


def _runs_element_by_element(function):
    """Whether the NumPy linker runs an elementwise op of ``function`` in Python.

    That is, one element at a time: a scalar op with no NumPy ufunc.
    """
    for node in function.maker.fgraph.apply_nodes:
        op = node.op
        if not isinstance(op, Elemwise) or isinstance(op.scalar_op, ps.Cast):
            continue
        if isinstance(op.scalar_op, ps.Add | ps.Mul) and len(node.inputs) > 1:
            continue  # variadic sums and products fold NumPy's binary ufunc
        if op.nfunc_spec is None or op.nfunc_spec[1] != len(node.inputs):
            return True
    return False


def _symbolic_like(var, value):
    """A symbolic tensor standing for ``var``, with the trailing shape of ``value``."""
    value = np.asarray(value)
    shape = (None, *value.shape[1:]) if value.ndim else ()
    return symbolic_tensor(var.name, var.dtype, shape)


def _batched(var):
    """``var``'s type with a leading draw axis."""
    return symbolic_tensor(var.name, var.dtype, (None, *var.type.shape))


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


def _split_components(expr, n_classes):
    """List of per-point scalar components: the class axis, if any, split up."""
    if n_classes is None:
        return [expr]
    return [expr[..., k] for k in range(n_classes)]


def _function(arguments, outputs, backend):
    try:
        return pytensor.function(
            arguments, outputs, on_unused_input="ignore", mode=_compile_mode(backend)
        )
    finally:
        _constant_along.cache_clear()  # its entries belong to this graph


def _derivatives(components, wrts, one_dimensional, n_features, order, batched):
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


def _moment_components(likelihood, params, second_moment, n_classes):
    """The chunk's mixture moments, and which of them to differentiate.

    ``second_moment`` (`Family.second_moment`): ``"variance"`` adds the law of
    total variance, ``"scale2"`` the same with each draw's squared scale in its
    place, then the mean tail weight ``1/ν``, not differentiated.
    """
    mean, variance = likelihood.moments(*params)
    if second_moment == "scale2":
        variance, inverse_nu = likelihood.heavy_tails(*params)
    chunk_mean = mean.mean(0)
    components = _split_components(chunk_mean, n_classes)
    varying = list(range(len(components)))
    if likelihood.complement is not None and not second_moment:
        components.append(likelihood.complement(*params).mean(0))
    if second_moment:
        # law of total variance within the chunk (chunks merge in measures.mixture)
        total = variance.mean(0) + ((mean - chunk_mean) ** 2).mean(0)
        components.append(total)
        varying.append(len(components) - 1)
    if second_moment == "scale2":
        components.append(pt.broadcast_to(inverse_nu, mean.shape).mean(0))
    return components, varying


def _parameters_given_observed(predictive, model):
    """The predictive's parameters with any upstream observed RV set to its data."""
    params = list(predictive.parameter_list)
    observed = observed_ancestors(model, params)
    return graph_replace(params, observed, strict=False) if observed else params


def data_variables_of(predictive, model, inputs):
    """The compiled function's data arguments, in order.

    The inputs, then those held at their values: containers and symbolic inputs
    (a GP's X, per-point group copies) that are not differentiated.
    """
    params = _parameters_given_observed(predictive, model)
    candidates = dict.fromkeys(
        [*predictive.inputs, *data_containers(model, params), *predictive.row_constants]
    )
    return list(inputs) + [v for v in candidates if v not in inputs]


def required_free_rvs(predictive, model):
    """The model's free RVs whose posterior draws the predictive needs."""
    return free_variables(model, _parameters_given_observed(predictive, model))


def _class_count(params, inputs, first_values):
    """Number of categories of a categorical likelihood's probabilities."""
    p = params[0]
    if p.type.shape[-1] is not None:
        return p.type.shape[-1]
    shape = pytensor.function(inputs, p.shape[-1], on_unused_input="ignore", mode="FAST_COMPILE")
    return int(shape(*first_values))


def _draw_components(predictive, params, n_classes, statistic):
    """Per-draw components: the family's parameters, or one named statistic."""
    likelihood = predictive.likelihood
    if statistic is not None:
        return [statistic_expression(likelihood, list(predictive.parameters), params, statistic)]
    return [
        c for p in likelihood.draw_parameters(*params) for c in _split_components(p, n_classes)
    ]


class GenericStatistics:
    """The mean and variance of a likelihood without closed forms, as a compiled predictive.

    Evaluates the draw-mode graph of the likelihood's leaf parameters (and their
    derivatives in the inputs) and turns it, per draw, into ``E[y]`` and
    ``Var[y]`` and their derivatives by the chain rule through the summation or
    quadrature rule of `pm_sens.graph.generic` (``∂E[f]/∂φ = E[f s]``). Returns
    what `CompiledPredictive` returns for the same settings: chunk moments in
    moment mode, the per-draw statistic in draw mode.
    """

    def __init__(self, draws, generic, *, mode, order, second_moment, statistic):
        self.draws, self.generic = draws, generic
        self.data_variables, self.free_rvs, self.inputs = (
            draws.data_variables,
            draws.free_rvs,
            draws.inputs,
        )
        self.mode, self.order, self.second_moment, self.statistic = (
            mode,
            order,
            second_moment,
            statistic,
        )
        n_components = 2 if mode == "moment" and statistic is None and second_moment else 1
        self.varying = list(range(n_components))
        self.fixed_names = []
        self.settings = dict(
            mode=mode,
            order=order,
            second_moment=second_moment,
            statistic=statistic,
            backend=draws.settings["backend"],
        )

    def __call__(self, data_values, draw_values):
        """Evaluate on data arrays (in ``data_variables`` order) and draw arrays."""
        n_draws = len(draw_values[0])
        out = self.draws(data_values, draw_values)
        phi, _ = per_draw_parameters(out, n_draws)
        raw = self.generic.raw_moments(phi, self.draws.varying, self.order)
        # per draw: values (S, N, 2) of (E y, E y²), derivatives (S, N, 2, D[, D]) in x
        values, derivatives = raw[0], []
        if self.order >= 1:
            derivatives.append(np.einsum("snkv,vsnd->snkd", raw[1], out["jac"]))
        if self.order == 2:
            derivatives.append(
                np.einsum("snkv,vsnde->snkde", raw[1], out["hess"])
                + np.einsum("snkvw,vsnd,wsne->snkde", raw[2], out["jac"], out["jac"])
            )
        if self.mode == "moment" and self.statistic is None:
            # mixture over the chunk's draws: mean m and variance E[y²] − m²
            values = values.mean(0)
            derivatives = [d.mean(0) for d in derivatives]
            stats = _mean_and_variance(values, derivatives)
            if not self.second_moment:
                stats = [a[..., :1] for a in stats]
        else:
            stats = _mean_and_variance(values, derivatives)
            stats = [
                a[..., ["mean", "variance"].index(self.statistic or "mean")][..., None]
                for a in stats
            ]
            if self.mode == "moment":
                stats = [a.mean(0) for a in stats]
        phi, *derivatives = stats
        # the parameter axis first, as `CompiledPredictive` returns it
        derivatives = [np.moveaxis(d, -1, 0) for d in derivatives]
        result = {"phi": phi, "fixed": {}}
        result.update(zip(["jac", "hess"], derivatives, strict=False))
        return result


def _mean_and_variance(raw, derivatives):
    """(E y, E y²) and their derivatives → (mean, variance) and theirs, last axis 2.

    Takes (..., 2), (..., 2, D) and (..., 2, D, D); returns values (..., 2),
    first derivatives (..., D, 2) and second (..., D, D, 2): components last.
    """
    mean, square = raw[..., 0], raw[..., 1]
    out = [np.stack([mean, square - mean**2], -1)]
    if derivatives:
        d_mean, d_square = derivatives[0][..., 0, :], derivatives[0][..., 1, :]
        out.append(np.stack([d_mean, d_square - 2 * mean[..., None] * d_mean], -1))
    if len(derivatives) == 2:
        dd_mean, dd_square = derivatives[1][..., 0, :, :], derivatives[1][..., 1, :, :]
        outer = d_mean[..., :, None] * d_mean[..., None, :]
        dd_var = dd_square - 2 * (outer + mean[..., None, None] * dd_mean)
        out.append(np.stack([dd_mean, dd_var], -1))
    return out


def compile_predictive(
    predictive,
    model,
    inputs,
    data_values,
    draw_values,
    *,
    mode,
    order,
    second_moment,
    statistic=None,
    statistics=(),
    parameters=True,
    backend="numba",
    whitened=False,
    forward=None,
):
    """Build and compile the chunk function of ``predictive`` (see `CompiledPredictive`).

    ``inputs`` are the variables to differentiate; ``data_values`` (a dict over
    inputs and held containers) and ``draw_values`` (arrays (S, ...) per free
    RV) fix the trailing shapes the graph is compiled for. With ``statistic``
    (a name from `statistic_names`), the one component is that statistic: per
    draw, or averaged over draws in moment mode. ``statistics`` (names, draw
    mode, order 0, closed-form likelihoods): per-draw statistics returned
    alongside ``phi``, from the same evaluation; ``parameters=False`` leaves
    ``phi`` out (no stacked copy of the parameters when the caller needs only
    the statistics). ``backend``: one of `BACKENDS`.
    ``whitened`` (draw mode, order 1): a `WhitenedNorm`, R-sens in the graph,
    with ``forward`` the same predictive compiled with order 0 (built if None).
    """
    # the per-draw graph of the same predictive, which some settings are built on
    per_draw_graph = partial(
        compile_predictive,
        predictive,
        model,
        inputs,
        data_values,
        draw_values,
        mode="draw",
        second_moment=None,
    )
    generic = predictive.likelihood.generic
    if generic is not None and (mode == "moment" or statistic in ("mean", "variance")):
        draws = per_draw_graph(order=order, backend=backend)
        return GenericStatistics(
            draws,
            generic,
            mode=mode,
            order=order,
            second_moment=second_moment,
            statistic=statistic,
        )
    params = _parameters_given_observed(predictive, model)
    free_rvs = free_variables(model, params)
    data_variables = data_variables_of(predictive, model, inputs)
    symbols = {v: _symbolic_like(v, data_values[v]) for v in data_variables}
    placeholders = {
        rv: symbolic_tensor(rv.name, rv.dtype, np.shape(values)[1:])
        for rv, values in zip(free_rvs, draw_values, strict=True)
    }
    params = graph_replace(params, {**symbols, **placeholders}, strict=False)
    likelihood = predictive.likelihood
    n_classes = None
    if likelihood.support == "categorical":
        n_classes = _class_count(
            params,
            [symbols[v] for v in data_variables] + list(placeholders.values()),
            [data_values[v] for v in data_variables]
            + [np.asarray(values[0]) for values in draw_values],
        )
    unbatched_inputs = [symbols[x] for x in inputs]
    if mode == "draw":
        # decided before broadcasting, whose shape graphs would link every parameter to X
        varying = [
            i
            for i, c in enumerate(_draw_components(predictive, params, n_classes, statistic))
            if depends_on(c, unbatched_inputs)
        ]
    params = pt.broadcast_arrays(*params)

    batch = {placeholders[rv]: _batched(rv) for rv in free_rvs}
    # draw mode differentiates per draw: the inputs get a draw axis, as a
    # broadcast inside the graph (replaced below) so callers pass them once
    per_draw = {s: _batched(s) for s in unbatched_inputs} if mode == "draw" and order else {}
    batch.update(per_draw)
    wrts = [batch.get(s, s) for s in unbatched_inputs]
    params = pt.broadcast_arrays(*vectorize_graph(params, batch))
    one_dimensional = [np.ndim(data_values[x]) == 1 for x in inputs]
    n_features = sum(
        1 if flat else np.shape(data_values[x])[1]
        for x, flat in zip(inputs, one_dimensional, strict=True)
    )

    if mode == "moment" and statistic is not None:
        components = [c.mean(0) for c in _draw_components(predictive, params, None, statistic)]
        varying = [0]
    elif mode == "moment":
        components, varying = _moment_components(likelihood, params, second_moment, n_classes)
    else:
        components = _draw_components(predictive, params, n_classes, statistic)
    # draw mode: components first, each one contiguous (`CompiledPredictive`)
    phi = pt.stack(components, axis=0 if mode == "draw" else -1)
    components = [components[i] for i in varying]

    fixed = likelihood.fixed(*params) if mode == "draw" or likelihood.matched_fixed else {}
    fixed_array_shapes = sorted(
        {
            c.data.shape
            for c in graph_inputs(params)
            if isinstance(c, Constant) and np.ndim(c.data) and c.data.shape[0] > 1
        }
    )
    extra_arguments = []
    if whitened:
        scales = pt.tensor("scales", dtype="float64", shape=(None, None, len(varying)))
        grads = [pytensor.grad(c.sum(), wrts, disconnected_inputs="ignore") for c in components]
        norm = _whitened_norm(grads, scales, one_dimensional)
        extra_arguments = [scales]
        writes_in_place = backend == "numba"
        if writes_in_place:
            # one compiled elementwise loop computes the norm (several 1-D
            # inputs' like columns too: `_join_of_like_elementwise`): a select
            # on a flag known only when called (always false) lets PyTensor's
            # inplace rewrite run that loop in the caller's (destroyable)
            # array, not a new one copied afterwards; where no loop computes
            # it (other columns joined), the select is dropped
            # (`_select_only_into_a_loop`). NumPy's linker computes a new
            # array and copies it into the destroyed one (twice when it is a view).
            target = pt.tensor("target", dtype="float64", shape=(None, None, n_features))
            keep = pt.scalar("keep", dtype="bool")
            keep.tag.always_false = True
            extra_arguments += [pytensor.In(target, mutable=True), keep]
            norm = pt.switch(keep, target, norm)
        outputs = [norm]
    else:
        outputs = [phi] if parameters else []
        for derivatives in _derivatives(
            components, wrts, one_dimensional, n_features, order, backend == "python"
        ):
            # moment mode: small (M, N, D[, D]) arrays, merged across chunks as one
            outputs += [pt.stack(derivatives)] if mode == "moment" else derivatives
        if statistics:
            names = list(predictive.parameters)
            # separate arrays: a statistic that is also a parameter is not copied
            outputs += [statistic_expression(likelihood, names, params, n) for n in statistics]
        outputs += list(fixed.values())
    if per_draw:
        n_draws = batch[placeholders[free_rvs[0]]].shape[0]
        outputs = graph_replace(
            outputs,
            {b: pt.broadcast_to(s, (n_draws, *s.shape)) for s, b in per_draw.items()},
            strict=False,
        )
    arguments = [symbols[v] for v in data_variables] + [batch[placeholders[rv]] for rv in free_rvs]
    arguments += extra_arguments
    function = _function(arguments, outputs, backend)
    if backend == "python" and _runs_element_by_element(function):
        backend = "numba"  # an op NumPy would loop over in Python: compile instead
        function = _function(arguments, outputs, backend)
    compiled = dict(
        function=function,
        data_variables=data_variables,
        free_rvs=free_rvs,
        inputs=list(inputs),
        mode=mode,
        order=order,
        varying=varying,
        fixed_names=list(fixed),
        settings=dict(
            mode=mode,
            order=order,
            second_moment=second_moment,
            statistic=statistic,
            statistics=tuple(statistics),
            parameters=parameters,
            backend=backend,
        ),
        fixed_array_shapes=fixed_array_shapes,
    )
    if not whitened:
        return CompiledPredictive(**compiled)
    if forward is None:
        # forward graphs run in NumPy (`pm_sens._runner.backend_for`)
        forward = per_draw_graph(order=0, backend="python")
    compiled["settings"]["whitened"] = True
    return WhitenedNorm(
        **compiled,
        forward=forward,
        family=likelihood.draw_family,
        n_features=n_features,
        writes_in_place=writes_in_place,
    )

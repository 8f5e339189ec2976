"""The NumPy linker's forms: graphs run op by op in NumPy, without compiling.

Scalar ops without a NumPy ufunc would run one element at a time in Python;
they are rewritten into ufuncs. Inplace and variadic elementwise ops write
into their destroyed input with the ufunc's ``out=``, and Gemm adds into z by
one BLAS call.
"""

import math
from itertools import combinations

import numpy as np
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.graph.rewriting.basic import GraphRewriter, node_rewriter
from pytensor.tensor.blas import Gemm
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.utils import import_func_from_string
from scipy.linalg.blas import get_blas_funcs

#: scalar ops without a NumPy ufunc, which the NumPy linker would run one
#: element at a time in Python, in forms made of ufuncs: ``clip`` (bambi's
#: links clip), ``softplus`` (``pm.math.log1pexp``, and PyTensor's rewrites of
#: log-sigmoids), ``log1mexp``
_UFUNC_FORMS = {
    ps.Clip: lambda x, low, high: pt.minimum(pt.maximum(x, low), high),
    ps.Softplus: lambda x: pt.maximum(x, 0) + pt.log1p(pt.exp(-pt.abs(x))),
    ps.Log1mexp: lambda x: pt.switch(x < -np.log(2), pt.log1p(-pt.exp(x)), pt.log(-pt.expm1(x))),
}


class UfuncWithOut(Elemwise):
    """An elementwise op that NumPy's linker runs with the ufunc's ``out=``.

    PyTensor's NumPy implementation of an inplace op computes a new array and
    then copies it into the input it destroys, and folds a sum or product of
    several terms into a new array per term. This one writes into the destroyed
    input directly, and folds the terms into one array, the smallest partial
    results first (`_fold`).
    """

    def perform(self, node, inputs, output_storage):
        """The ufunc into the destroyed input, or a fold of the terms into one array."""
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
            dtype = np.result_type(terms[i], terms[j])  # two masks: a mask
            if read and target is not None and target.shape == shape and target.dtype == dtype:
                out = target
            else:
                out = next(
                    (
                        terms[k]
                        for k in (i, j)
                        if partial[k] and shapes[k] == shape and terms[k].dtype == dtype
                    ),
                    None,
                )
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


class GemmByBlas(Gemm):
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
        """``z ← a x y + b z`` by BLAS's gemm where z's layout allows, else PyTensor's."""
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
def local_gemm_by_blas(fgraph, node):
    """Inplace Gemm as `GemmByBlas` (graphs run in NumPy)."""
    if type(node.op) is not Gemm or not node.op.inplace:
        return None
    return GemmByBlas().make_node(*node.inputs).outputs


def _writes_with_out(node):
    """Whether `UfuncWithOut` can run ``node``: one NumPy ufunc, one dtype."""
    op = node.op
    if type(op) is not Elemwise:
        return False
    spec = getattr(op.scalar_op, "nfunc_spec", None)
    if spec is None or spec[2] != 1 or len(node.outputs) != 1:
        return False
    if not isinstance(import_func_from_string(spec[0]), np.ufunc):
        return False
    dtypes = {x.dtype for x in [*node.inputs, *node.outputs]}
    variadic = isinstance(op.scalar_op, ps.Add | ps.Mul) and len(node.inputs) > 2
    if variadic and isinstance(op.scalar_op, ps.Mul):
        dtypes.discard("bool")  # masks of PyTensor's switch sinks: a product with them is exact
    if len(dtypes) != 1 or dtypes.pop() not in ("float32", "float64"):
        return False
    return bool(op.inplace_pattern) and len(node.inputs) == spec[1] or variadic


class UfuncsWritingOut(GraphRewriter):
    """Inplace and variadic elementwise ops as `UfuncWithOut` (graphs run in NumPy).

    Each op is replaced by one with the same inputs, outputs and destroy map,
    which cannot make a valid graph invalid: the graph is validated once, not
    after each replacement as a node rewriter's are (each validation walks the
    whole graph: most of a large graph's compile).
    """

    def apply(self, fgraph):
        """Replace every op `_writes_with_out` accepts, then validate the graph once."""
        for node in fgraph.toposort():
            if _writes_with_out(node):
                op = UfuncWithOut(node.op.scalar_op, node.op.inplace_pattern)
                outputs = op.make_node(*node.inputs).outputs
                fgraph.replace_all(
                    zip(node.outputs, outputs, strict=True), reason="ufuncs_writing_out"
                )
        fgraph.validate()


@node_rewriter([Elemwise])
def local_numpy_ufunc_forms(fgraph, node):
    """``clip``, ``softplus``, ``log1mexp`` and composites → the same values from ufuncs."""
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


def runs_element_by_element(function):
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

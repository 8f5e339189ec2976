"""pm_sens's graph rewrites (`pm_sens.graph.compile.rewrites`): each changes how a graph
is computed, with the same values as PyTensor's own graph, and can be left out by name."""

import numpy as np
import pymc as pm
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
import pytest
from pytensor.graph.fg import FunctionGraph
from pytensor.tensor.elemwise import Elemwise

import pm_sens
from pm_sens._core import context as _context
from pm_sens.graph.compile.rewrites import (
    BACKENDS,
    REWRITES,
    compile_mode,
    excluded,
    excluding,
    runs_element_by_element,
)
from pm_sens.graph.compile.rewrites._along import constant_along
from pm_sens.graph.compile.rewrites.branches import COSTLY_FUNCTIONS, WhereSelected
from pm_sens.graph.compile.rewrites.numpy_linker import GemmByBlas, UfuncWithOut
from tests.conftest import posterior


def test_sums_over_draws_of_outer_products_become_matrix_products(rng):
    """``Σ_s r[s, n] c[s, d]`` (the moment-mode derivatives of a per-draw ``X @ b``)
    is rewritten into a matrix product, term by term in a sum, with the same
    values; a factor varying along both n and d leaves the sum as it is."""
    s, n, d = 7, 5, 3
    r = pt.tensor("r", shape=(None, None, 1))
    c = pt.tensor("c", shape=(None, 1, d))
    w = pt.tensor("w", shape=(1, None, 1))  # constant across draws
    v = pt.tensor("v", shape=(1, 1, d))  # constant across draws
    full = pt.tensor("full", shape=(None, None, d))
    values = {
        r: rng.normal(size=(s, n, 1)),
        c: rng.normal(size=(s, 1, d)),
        w: rng.normal(size=(1, n, 1)),
        v: rng.normal(size=(1, 1, d)),
        full: rng.normal(size=(s, n, d)),
    }
    # terms: per-draw rows and columns, rows or columns or neither constant
    # across draws, rows alone; the number of draws an integer
    terms = (2 * r * c) / r.shape[0] + (w * c) / r.shape[0] + pt.exp(r) * v + w * v + r
    cases = {
        "product": ((r * c).sum(0), True),
        "sum of products": ((terms + pt.exp(r) * c).sum(0), True),
        "full factor": ((r * c * full).sum(0), False),
    }
    for name, (expr, rewritten) in cases.items():
        inputs = [v for v in values if v in pytensor.graph.traversal.graph_inputs([expr])]
        for backend in BACKENDS:
            function = pytensor.function(inputs, expr, mode=compile_mode(backend))
            ops = {type(node.op).__name__ for node in function.maker.fgraph.apply_nodes}
            assert ("Dot" in ops) == rewritten, (name, backend, ops)
            assert backend == "numba" or not runs_element_by_element(function)
            reference = pytensor.function(inputs, expr, mode="FAST_COMPILE")
            np.testing.assert_allclose(
                function(*(values[v] for v in inputs)),
                reference(*(values[v] for v in inputs)),
                rtol=1e-12,
            )


def _features_column(points, b, d):
    """The second backward pass's ``onehot_d @ Bᵀ``, (N, S): ``B[:, d]`` on every row."""
    onehot = pt.set_subtensor(pt.zeros((points.shape[0], b.shape[1]))[:, d], 1.0)
    return pt.dot(onehot, b.T)  # a Dot, as in rewritten graphs (``@`` is batched)


def test_values_constant_along_an_axis_are_found_and_computed_once(rng):
    """`constant_along` finds values the same all along an axis through
    elementwise ops, views, reductions, matrix products and writes into zeros,
    and gives them at length 1 there; values that vary are refused."""
    x, b = pt.matrix("x", shape=(None, 3)), pt.matrix("b", shape=(None, 3))
    values = {x: rng.normal(size=(5, 3)), b: rng.normal(size=(7, 3))}
    column = _features_column(x, b, 1)  # (N, S)
    per_draw = column.T[:, :, None]  # (S, N, 1)
    cases = {
        "column": (column, 0, True),
        "view, elementwise": (pt.exp(per_draw) * 2 - per_draw, 1, True),
        "centred over draws": (column - column.mean(1)[:, None], 0, True),
        "reduced over draws": (column.sum(1), 0, True),
        "points' products": (pt.dot(x, b.T), 0, False),
        "a row written": (
            pt.dot(pt.set_subtensor(pt.zeros((x.shape[0], 3))[2], 1.0), b.T),
            0,
            False,
        ),
        "times the points": (column * x[:, :1], 0, False),
    }
    for name, (expr, axis, constant) in cases.items():
        found = constant_along(expr, axis)
        assert (found is not None) == constant, name
        if constant:
            assert found.type.shape[axis] == 1, name
            full, once = pytensor.function([x, b], [expr, found], mode="FAST_COMPILE")(
                values[x], values[b]
            )
            np.testing.assert_allclose(np.broadcast_to(once, full.shape), full, err_msg=name)


def test_a_features_column_is_factored_out_of_sums_over_draws(rng):
    """The second backward pass of ``X @ Bᵀ`` multiplies ``B[:, d]``, repeated for
    every point, into each term (through sums and a stable sigmoid's switch):
    it moves to the (S, D) side of the matrix product and is never built at
    N × S; products sharing their left side become one. Values as PyTensor's."""
    x, b = pt.matrix("x", shape=(None, 3)), pt.matrix("b", shape=(None, 3))
    values = [rng.normal(size=(5, 3)), rng.normal(size=(7, 3))]
    eta = (x @ b.T).T[:, :, None]  # (S, N, 1)
    weight = pt.sigmoid(eta) * (1 - pt.sigmoid(eta))
    per_feature = []
    for d in range(3):
        column = _features_column(x, b, d).T[:, :, None]
        term = pt.switch(eta > 0, column * weight - column * eta, -(column * weight) / 2)
        per_feature.append((term * b[:, None, :]).sum(0))
    for backend in BACKENDS:
        function = pytensor.function([x, b], per_feature, mode=compile_mode(backend))
        nodes = function.maker.fgraph.apply_nodes
        writes = [n for n in nodes if type(n.op).__name__ == "IncSubtensor"]
        assert writes and all(n.outputs[0].type.shape[0] == 1 for n in writes), backend
        # one (N, S) @ (S, 3·D) product for the three features
        assert sum(n.outputs[0].type.shape[1] == 9 for n in nodes if type(n.op).__name__ == "Dot")
        reference = pytensor.function([x, b], per_feature, mode="FAST_COMPILE")
        for got, expected in zip(function(*values), reference(*values), strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-12, err_msg=backend)


def test_products_share_their_left_side_only_when_independent(rng):
    """``A @ C_k`` for several ``C_k`` become one product, unless a ``C_k`` depends
    on another product (which would make a cycle)."""
    a, c1, c2 = pt.matrix("a"), pt.matrix("c1"), pt.matrix("c2")
    values = [rng.normal(size=(4, 6)), rng.normal(size=(6, 2)), rng.normal(size=(6, 3))]
    cases = {
        "independent": ([a @ c1, a @ c2], 1),
        "dependent": ([a @ c1, a @ (a.T @ (a @ c1))], 2),
    }
    for name, (outputs, products) in cases.items():
        function = pytensor.function(
            [a, c1, c2], outputs, mode=compile_mode("python"), on_unused_input="ignore"
        )
        dots = [
            n
            for n in function.maker.fgraph.apply_nodes
            if type(n.op).__name__ in ("Dot", "Dot22") and n.inputs[0].name == "a"
        ]
        assert len(dots) == products, name
        reference = pytensor.function(
            [a, c1, c2], outputs, mode="FAST_COMPILE", on_unused_input="ignore"
        )
        for got, expected in zip(function(*values), reference(*values), strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-12, err_msg=name)


def test_a_sum_of_outer_products_becomes_one_matrix_product(rng):
    """``a + b0 x0 + b1 x1 + …`` over draws (columns) and points (rows), as bambi
    writes a linear predictor: one matrix product for the outer products, the
    other terms added; fewer than two outer products, or integers, are left."""
    s, n = 6, 5
    cols = [pt.matrix(f"b{j}", shape=(None, 1)) for j in range(3)]
    rows = [pt.matrix(f"x{j}", shape=(1, None)) for j in range(3)]
    a, k = pt.matrix("a", shape=(None, 1)), pt.matrix("k", shape=(1, None), dtype="int64")
    values = {v: rng.normal(size=(s, 1)) for v in cols} | {
        v: rng.normal(size=(1, n)) for v in rows
    }
    values |= {a: rng.normal(size=(s, 1)), k: rng.integers(0, 5, size=(1, n))}
    cases = {
        "three and an intercept": (
            a + cols[0] * rows[0] + rows[1] * cols[1] + cols[2] * rows[2],
            True,
        ),
        "one": (a + cols[0] * rows[0], False),
        "integer rows": (cols[0] * k + cols[1] * k, False),
    }
    for name, (expr, rewritten) in cases.items():
        inputs = [v for v in values if v in pytensor.graph.traversal.graph_inputs([expr])]
        for backend in BACKENDS:
            function = pytensor.function(inputs, expr, mode=compile_mode(backend))
            ops = {type(node.op).__name__ for node in function.maker.fgraph.apply_nodes}
            assert bool(ops & {"Dot", "Dot22", "Gemm"}) == rewritten, (name, backend, ops)
            reference = pytensor.function(inputs, expr, mode="FAST_COMPILE")
            arrays = [values[v] for v in inputs]
            np.testing.assert_allclose(function(*arrays), reference(*arrays), rtol=1e-13)


def test_like_columns_are_joined_below_their_elementwise_op(rng):
    """Columns side by side that are the same elementwise expression of shared
    (S, N) arrays and of their own (S, 1) coefficient (draw-mode R-sens of
    bambi's one-container-per-predictor models) are computed as one expression
    of the joined coefficients; columns used elsewhere, of different ops, or
    whose own inputs cannot be joined stay as they are. The same values."""
    w, v = pt.matrix("w"), pt.matrix("v")
    coefs = [pt.matrix(f"b{j}", shape=(None, 1)) for j in range(3)]
    row = pt.matrix("row", shape=(1, None))
    values = {w: rng.normal(size=(6, 5)), v: rng.normal(size=(6, 5)), row: rng.normal(size=(1, 5))}
    values |= {b: rng.normal(size=(6, 1)) for b in coefs}

    def column(b, op=pt.abs):
        return op(pt.switch(v > 0, w * b, 0.0) * pt.exp(v))[..., None]

    columns = [column(b) for b in coefs]
    cases = {
        "like columns": ([pt.concatenate(columns, axis=2)], True),
        "one also an output": ([pt.concatenate(columns, axis=2), columns[0]], False),
        "different ops": (
            [pt.concatenate([column(coefs[0], pt.sin), column(coefs[1], pt.cos)], axis=2)],
            False,
        ),
        "a row and a column": ([pt.concatenate([columns[0], column(row)], axis=2)], False),
        "sums of different lengths": (
            [
                pt.concatenate(
                    [(w * coefs[0] + v + pt.exp(w))[..., None], (w * coefs[1] + v)[..., None]],
                    axis=2,
                )
            ],
            False,
        ),
    }
    for name, (outputs, lifted) in cases.items():
        inputs = [x for x in values if x in pytensor.graph.traversal.graph_inputs(outputs)]
        reference = pytensor.function(inputs, outputs, mode="FAST_COMPILE")
        arrays = [values[x] for x in inputs]
        for backend in BACKENDS:
            with pytensor.config.change_flags(on_opt_error="raise"):  # no rewrite fails
                function = pytensor.function(inputs, outputs, mode=compile_mode(backend))
            joins = [
                node.outputs[0].type.broadcastable
                for node in function.maker.fgraph.apply_nodes
                if type(node.op).__name__ == "Join"
            ]
            # lifted: only the (S, 1, 3) coefficients are joined, not (S, N, 1) columns
            assert all(b[1] for b in joins) == lifted and joins, (name, backend, joins)
            for got, expected in zip(function(*arrays), reference(*arrays), strict=True):
                np.testing.assert_allclose(got, expected, rtol=1e-14)


def test_a_set_into_zeros_along_a_length_one_axis_becomes_a_view(rng):
    """``zeros((S, N, 1))[:, :, 0] = y`` (how the gradient of a per-draw column is
    written) runs as ``y[:, :, None]``, with the same values; a longer axis, or a
    ``y`` broadcast by the assignment, keeps the assignment."""
    y = pt.matrix("y")
    row = pt.matrix("row", shape=(1, None))
    n_draws, n = y.shape
    cases = {
        "set": (pt.set_subtensor(pt.zeros((n_draws, n, 1))[:, :, 0], y), y, True),
        "increment": (pt.inc_subtensor(pt.zeros((n_draws, n, 1))[:, :, 0], y), y, True),
        "axis of two": (pt.set_subtensor(pt.zeros((n_draws, n, 2))[:, :, 0], y), y, False),
        "broadcast": (pt.set_subtensor(pt.zeros((4, n, 1))[:, :, 0], row), row, False),
    }
    values = {y: rng.normal(size=(4, 5)), row: rng.normal(size=(1, 5))}
    for name, (expr, given, rewritten) in cases.items():
        inputs = [given] if given is y else [given, y]
        for backend in BACKENDS:
            function = pytensor.function(
                inputs, expr, mode=compile_mode(backend), on_unused_input="ignore"
            )
            ops = {type(node.op).__name__ for node in function.maker.fgraph.apply_nodes}
            assert ("IncSubtensor" not in ops) == rewritten, (name, backend, ops)
            reference = pytensor.function(
                inputs, expr, mode="FAST_COMPILE", on_unused_input="ignore"
            )
            arrays = [values[v] for v in inputs]
            np.testing.assert_array_equal(function(*arrays), reference(*arrays))


def _arrays_written(function, ndim):
    """Outputs of ``ndim`` dims of the compiled graph's allocations and settings."""
    kinds = ("Alloc", "IncSubtensor", "SetSubtensor")
    return [
        type(node.op).__name__
        for node in function.maker.fgraph.apply_nodes
        if type(node.op).__name__ in kinds and node.outputs[0].ndim == ndim
    ]


def test_a_column_set_into_zeros_is_carried_apart_through_elementwise_ops_and_reductions(rng):
    """``sqrt((b s₀)² + (z s₁)²)`` with ``z`` zeros but one column (the whitened
    norm of a parameter reading one column of X) and its reductions over points,
    and over everything: with the column carried apart no (S, N, D) array is
    allocated or set, and every value is the reference's; a reduction over the
    column's axis alone, or a column broadcast by the setting, keeps the
    array."""
    b, scales, v = pt.matrix("b"), pt.tensor3("scales"), pt.matrix("v")
    row = pt.matrix("row", shape=(1, None))
    index = pt.scalar("index", dtype="int64")
    n_draws, n = v.shape

    def norm(column, write, value):
        z = write(pt.zeros((n_draws, n, 6))[:, :, column], value)
        u0 = b[:, None, :] * scales[:, :, 0, None]
        return pt.sqrt(u0**2 + (z * scales[:, :, 1, None]) ** 2)

    def reductions(x):
        return [x.sum(1), x.max(), x.min(axis=(0, 1)), x.sum()]

    cases = {
        "set": (reductions(norm(2, pt.set_subtensor, v)), True),
        "increment": (reductions(norm(2, pt.inc_subtensor, v)), True),
        "last column": (reductions(norm(-1, pt.set_subtensor, v)), True),
        "index given": (reductions(norm(index, pt.set_subtensor, v)), True),
        "along the features": ([norm(2, pt.set_subtensor, v).sum(2)], False),
        "broadcast": (reductions(norm(2, pt.set_subtensor, row)), False),
    }
    values = {
        b: rng.normal(size=(4, 6)),
        scales: np.abs(rng.normal(size=(4, 5, 2))),
        v: rng.normal(size=(4, 5)),
        row: rng.normal(size=(1, 5)),
        index: 4,
    }
    inputs = list(values)
    for name, (outputs, rewritten) in cases.items():
        reference = pytensor.function(
            inputs, outputs, mode="FAST_COMPILE", on_unused_input="ignore"
        )(*values.values())
        for backend in BACKENDS:
            function = pytensor.function(
                inputs, outputs, mode=compile_mode(backend), on_unused_input="ignore"
            )
            assert (_arrays_written(function, 3) == []) == rewritten, (name, backend)
            for got, expected in zip(function(*values.values()), reference, strict=True):
                np.testing.assert_allclose(got, expected, rtol=1e-14, err_msg=name)


def _largest_loop(function):
    """Dims not broadcast in the largest loop of the compiled graph (a fused loop's
    inputs broadcast together, its output possibly reduced)."""

    def dims(variables):
        ndim = max(v.ndim for v in variables)
        same = [v for v in variables if v.ndim == ndim]
        return sum(any(not v.type.broadcastable[k] for v in same) for k in range(ndim))

    return max(dims([*node.inputs, *node.outputs]) for node in function.maker.fgraph.apply_nodes)


def test_a_factor_a_sum_does_not_run_over_leaves_its_absolute_value(rng):
    """``Σ_n √((b_d s_n)²)`` (draw-mode R-sens of a parameter linear in the inputs,
    summed over the points) runs over (S, N) and (S, D), not (S, N, D), and so do
    ``Σ_n b_d / s_n`` and ``Σ_n |b_d / s_n|`` (a Bernoulli logit's, a scale's);
    where no factor is the same along every summed axis, or the divisor is as
    large as the quotient, the loop stays. Same values either way."""
    b, s, t = pt.matrix("b"), pt.matrix("s"), pt.tensor3("t")

    def norm(x):  # how the whitened norm of one parameter is written
        return pt.sqrt(x**2)

    cases = {
        "factored": (norm(b[:, None, :] * s[:, :, None]).sum(1), 2),
        "over the points and draws": (norm(b[0][None, None] * s[:, :, None]).sum((0, 1)), 2),
        "over every axis": (norm(b[:, None, :] * s[:, :, None]).sum(), 3),
        "varies along the sum": (norm(b[:, None, :] * t).sum(1), 3),
        "a quotient": ((b[:, None, :] / pt.cosh(s[:, :, None])).sum(1), 2),
        "an absolute quotient": (pt.abs(b[:, None, :] / s[:, :, None]).sum(1), 2),
        "a divisor as large": ((b[:, None, :] / t).sum(1), 3),
        "a numerator along the sum": ((t / pt.cosh(s[:, :, None])).sum(1), 3),
    }
    values = [rng.normal(size=(4, 3)), rng.normal(size=(4, 5)), rng.normal(size=(4, 5, 3))]
    for name, (output, dims) in cases.items():
        reference = pytensor.function(
            [b, s, t], output, mode="FAST_COMPILE", on_unused_input="ignore"
        )
        for backend in BACKENDS:
            function = pytensor.function(
                [b, s, t], output, mode=compile_mode(backend), on_unused_input="ignore"
            )
            assert _largest_loop(function) == dims, (name, backend)
            np.testing.assert_allclose(function(*values), reference(*values), rtol=1e-14)


def test_numpy_linker_ufuncs_write_into_their_output(rng):
    """An inplace elementwise op run by NumPy's linker writes into the input it
    destroys, and a sum of several terms folds into one array, the pair with the
    smallest broadcast shape first, else in the order of its terms (the same
    values to the bit), broadcasting where a partial result is smaller than
    the output."""
    a, c, t = pt.matrix("a", shape=(None, 1)), pt.matrix("c", shape=(1, None)), pt.matrix("t")
    r = pt.matrix("r", shape=(1, None))
    values = {
        a: rng.normal(size=(4, 1)),
        c: rng.normal(size=(1, 5)),
        t: rng.normal(size=(4, 5)),
        r: rng.normal(size=(1, 5)),
    }
    cases = {
        # the destroyed term last: read only at the last step
        "sum into its last term": ((ps.add, {0: 2}), [a, c, t], lambda x, y, z: (x + y) + z),
        "sum, partial result smaller": ((ps.mul, {}), [a, c, t], lambda x, y, z: (x * y) * z),
        # a column times two rows: the rows first (one (4, 5) pass, not two)
        "product, rows first": ((ps.mul, {}), [a, c, r], lambda x, y, z: x * (y * z)),
        "sum into its first term, rows first": (
            (ps.add, {0: 0}),
            [t, a, c, r],
            lambda w, x, y, z: (w + x) + (y + z),
        ),
        "exponential in place": ((ps.exp, {0: 0}), [t], np.exp),
    }
    for name, ((scalar_op, inplace), inputs, reference) in cases.items():
        op = UfuncWithOut(scalar_op, inplace)
        arrays = [values[v].copy() for v in inputs]
        expected = reference(*arrays)
        storage = [[None]]
        op.perform(op.make_node(*inputs), arrays, storage)
        np.testing.assert_array_equal(storage[0][0], expected, err_msg=name)
        if inplace:
            assert storage[0][0] is arrays[inplace[0]], name

    # in compiled graphs: float ops are rewritten and agree with PyTensor's own
    # implementation, products with masks too (two masks fold into one); integer
    # ones are left to it
    z, k = pt.matrix("z"), pt.matrix("k", dtype="int64")
    for expr, inputs, rewritten in [
        (pt.exp(z) + a + c, [z, a, c], True),
        (pt.exp(z) * (a > 0) * a * (c < 0.5) * c, [z, a, c], True),
        (k + 2 * k + k, [k], False),
    ]:
        function = pytensor.function(inputs, expr, mode=compile_mode("python"))
        ops = {type(node.op).__name__ for node in function.maker.fgraph.apply_nodes}
        assert ("UfuncWithOut" in ops) == rewritten, ops
        arrays = (
            [values[t], values[a], values[c]] if rewritten else [rng.integers(0, 9, size=(4, 5))]
        )
        reference = pytensor.function(inputs, expr, mode="FAST_COMPILE")
        np.testing.assert_allclose(function(*arrays), reference(*arrays), rtol=1e-15)


def test_numpy_linker_gemm_adds_the_product_into_z_with_one_blas_call(rng):
    """``z ← a x y + b z`` run by NumPy's linker writes into z itself, C- or
    Fortran-ordered, in float64 and float32, with PyTensor's Gemm's values; a
    z broadcast up to the product's shape takes PyTensor's own path."""
    op, reference = GemmByBlas(), pytensor.tensor.blas.Gemm(inplace=False)
    for dtype, order, z_shape in [
        ("float64", "C", (4, 6)),
        ("float64", "F", (4, 6)),
        ("float32", "C", (4, 6)),
        ("float64", "C", (1, 6)),  # broadcast
    ]:
        z = np.asarray(rng.normal(size=z_shape), dtype=dtype, order=order)
        x = rng.normal(size=(4, 3)).astype(dtype)
        y = np.asarray(rng.normal(size=(6, 3)).astype(dtype).T)  # a transposed view
        a, b = np.asarray(0.5, dtype=dtype), np.asarray(1.5, dtype=dtype)
        expected = b * z + a * (x.astype("float64") @ y.astype("float64"))
        case = (dtype, order, z_shape)
        node = op.make_node(pt.as_tensor(z), a, x, y, b)
        storage = [[None]]
        op.perform(node, [z.copy(order="K"), a, x, y, b], storage)
        tolerance = 1e-13 if dtype == "float64" else 1e-5
        np.testing.assert_allclose(storage[0][0], expected, rtol=tolerance, err_msg=str(case))
        if z_shape == (4, 6):
            given = z.copy(order="K")
            op.perform(node, [given, a, x, y, b], storage)
            assert storage[0][0] is given, case  # written in place
        check = [[None]]
        reference.perform(node, [z.copy(order="K"), a, x, y, b], check)
        np.testing.assert_allclose(storage[0][0], check[0][0], rtol=tolerance, err_msg=str(case))

    # in graphs run in NumPy: a product plus a term is this Gemm, with the values of
    # PyTensor's own implementation
    beta, xm, c = pt.matrix("beta"), pt.matrix("xm"), pt.matrix("c", shape=(1, None))
    expr = pt.dot(beta, xm.T) + pt.col("s") * c
    inputs = [beta, xm, *[v for v in pytensor.graph.graph_inputs([expr]) if v.name == "s"], c]
    function = pytensor.function(inputs, expr, mode=compile_mode("python"))
    ops = {type(node.op).__name__ for node in function.maker.fgraph.apply_nodes}
    assert "GemmByBlas" in ops, ops
    arrays = [rng.normal(size=(5, 3)), rng.normal(size=(7, 3)), rng.normal(size=(5, 1))]
    arrays.append(rng.normal(size=(1, 7)))
    fast = pytensor.function(inputs, expr, mode="FAST_COMPILE")
    np.testing.assert_allclose(function(*arrays), fast(*arrays), rtol=1e-13)


def _extra_rewriters(mode):
    return [rewriter for rewriter, _ in mode.provided_optimizer.extra_rewrites]


def test_joins_and_splits_over_draws_are_one_op(rng):
    """A lag ``concatenate([0], mu[:-1])`` of a per-draw ``mu``: vectorized over draws,
    PyTensor joins (and its gradient splits) once per draw in a Blockwise; the
    rewrites make each one op over all draws, with the same values."""
    x = pt.vector("x")
    b = pt.scalar("b")
    mu = b * x
    lag = pt.concatenate([pt.zeros(1), mu[:-1]])
    expr = pt.exp(mu + 0.5 * lag)
    grad = pytensor.grad(expr.sum(), x)
    batched_b = pt.vector("batched_b")
    outputs = pytensor.graph.replace.vectorize_graph([expr, grad], {b: batched_b})
    values = [rng.normal(size=9), rng.normal(size=4)]
    for backend in BACKENDS:
        for skipped in [(), ("local_blockwise_join", "local_blockwise_split")]:
            with excluding(*skipped):
                function = pytensor.function([x, batched_b], outputs, mode=compile_mode(backend))
            blockwise = [
                str(node.op.core_op)
                for node in function.maker.fgraph.apply_nodes
                if hasattr(node.op, "core_op")
            ]
            assert bool(blockwise) == bool(skipped), (backend, blockwise)
            reference = pytensor.function([x, batched_b], outputs, mode="FAST_COMPILE")
            for got, want in zip(function(*values), reference(*values), strict=True):
                np.testing.assert_allclose(got, want, rtol=1e-12)


def test_blockwise_increments_are_broadcast_by_the_inferred_shapes(rng):
    """The gradient of a per-draw function of a slice of a deep graph of the data,
    vectorized over draws, increments zeros without the draw axis. The rewrite
    broadcasts them over the draws by shapes of the graph's inputs, not by the
    shape of the deep intermediate (whose static shape PyTensor infers on a clone
    of all its ancestors), and sets the broadcast's static shape itself; the
    compiled function has the same values, with or without it."""
    from pytensor.graph.fg import FunctionGraph
    from pytensor.graph.traversal import applys_between
    from pytensor.tensor.blockwise import Blockwise
    from pytensor.tensor.rewriting.shape import ShapeFeature
    from pytensor.tensor.subtensor import IncSubtensor

    from pm_sens.graph.compile.rewrites.batched import local_blockwise_inc_subtensor_buffer

    x, b = pt.vector("x"), pt.scalar("b")
    deep = x
    for _ in range(20):
        deep = pt.sin(deep) + x
    grad = pytensor.grad(pt.exp(b * deep[1:]).sum(), x)
    batched_b = pt.vector("batched_b")
    inputs = [x, batched_b]
    outputs = [pytensor.graph.replace.vectorize_graph(grad, {b: batched_b})]
    fgraph = FunctionGraph(inputs, outputs, features=[ShapeFeature()], clone=False)
    increments = [
        node
        for node in fgraph.apply_nodes
        if isinstance(node.op, Blockwise) and isinstance(node.op.core_op, IncSubtensor)
    ]
    assert increments
    for node in increments:
        (new,) = local_blockwise_inc_subtensor_buffer.transform(fgraph, node)
        buffer = new.owner.inputs[0]
        assert not any(buffer.type.broadcastable[:1])
        shape_graph = list(applys_between(inputs, buffer.owner.inputs[1:]))
        assert len(shape_graph) < 10, len(shape_graph)
        assert len(list(applys_between(inputs, [node.inputs[0].shape[1]]))) > 20
        # its static type, set without PyTensor's inference, is the one that infers
        assert (
            buffer.type == pt.broadcast_to(*buffer.owner.inputs[:1], buffer.owner.inputs[1:]).type
        )
    values = [rng.normal(size=9), rng.normal(size=4)]
    reference = pytensor.function(inputs, outputs, mode="FAST_COMPILE")(*values)
    for backend in BACKENDS:
        for skipped in [(), ("local_blockwise_inc_subtensor_buffer",)]:
            with excluding(*skipped):
                function = pytensor.function(inputs, outputs, mode=compile_mode(backend))
            np.testing.assert_allclose(function(*values)[0], reference[0], rtol=1e-12)


@pytest.mark.parametrize("name", sorted(REWRITES))
def test_every_rewrite_can_be_excluded_by_name(name):
    rewrite = REWRITES[name]
    for backend in rewrite.backends:
        assert rewrite.rewriter in _extra_rewriters(compile_mode(backend))
        with excluding(name):
            assert excluded() == (name,)
            others = _extra_rewriters(compile_mode(backend))
            assert rewrite.rewriter not in others
            assert len(others) == sum(
                backend in r.backends for n, r in REWRITES.items() if n != name
            )
    assert excluded() == ()


def test_an_unknown_rewrite_name_lists_the_valid_ones():
    with pytest.raises(ValueError, match=r"unknown rewrites \['local_nope'\]; valid: \["):
        with excluding("local_nope"):
            pass


def test_without_numpy_forms_a_graph_is_compiled_with_the_same_numbers(rng):
    """clip and softplus have no NumPy ufunc: without their NumPy forms the
    small request's graphs are compiled by Numba (not run element by element
    in Python), and give the same R-sens to 1e-12 (R-sens2 of the same mean and
    scale compiled by Numba: `test_interactions_without_any_rewrite_are_the_same`)."""
    x = rng.normal(size=(20, 2))
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", shape=2)
        pm.Normal(
            "y",
            mu=pm.math.clip(xd @ b, -2.0, 2.0) + 0.1 * xd[:, 0] ** 3,
            sigma=pm.math.log1pexp(0.3 * xd @ b),
            observed=x[:, 0],
        )
    idata = posterior({"b": rng.normal(size=(2, 10, 2))})
    kw = dict(progressbar=False, extend_inferencedata=False)
    with_forms = pm_sens.sensitivity(idata, model, **kw)["sensitivity"]
    with excluding("local_numpy_ufunc_forms"):
        without = pm_sens.sensitivity(idata, model, **kw)["sensitivity"]
    compiled = _context.predictive_for(model, None).compiled
    backends = {key[-1]: c.settings["backend"] for key, c in compiled.items()}
    assert set(backends.values()) == {"python", "numba"}
    for name in ("rsens",):
        assert np.isfinite(with_forms[name].values).all()
        np.testing.assert_allclose(without[name].values, with_forms[name].values, rtol=1e-12)


@pytest.mark.parametrize("mode", ["moment", "draw"])
def test_interactions_without_any_rewrite_are_the_same(rng, mode):
    """R-sens2 of a GLM written one predictor at a time (bambi's form: the
    contractions' and layout rewrites' graphs) and of one with clip, a cube and
    softplus, compiled with every rewrite excluded: the same values to 1e-12."""
    x = rng.normal(size=(25, 3))
    with pm.Model() as per_predictor:
        columns = [pm.Data(f"x{k}", x[:, k]) for k in range(3)]
        b = pm.Normal("b", shape=3)
        eta = b[0] * columns[0] + b[1] * columns[1] + b[2] * columns[2]
        pm.Bernoulli("y", logit_p=eta, observed=(x[:, 0] > 0).astype(int))
    with pm.Model() as nonlinear:
        xd = pm.Data("X", x)
        b = pm.Normal("b", shape=3)
        pm.Normal(
            "y",
            mu=pm.math.clip(xd @ b, -2.0, 2.0) + 0.1 * xd[:, 2] ** 3,
            sigma=pm.math.log1pexp(0.3 * xd @ b),
            observed=x[:, 0],
        )
    idata = posterior({"b": rng.normal(size=(2, 15, 3))})
    kw = dict(mode=mode, interactions=True, progressbar=False, extend_inferencedata=False)
    for model in (per_predictor, nonlinear):
        rewritten = pm_sens.sensitivity(idata, model, **kw)["sensitivity"]
        with excluding(*REWRITES):
            plain = pm_sens.sensitivity(idata, model, **kw)["sensitivity"]
        for name in ("rsens", "rsens2"):
            assert np.isfinite(rewritten[name].values).all()
            np.testing.assert_allclose(
                plain[name].values, rewritten[name].values, rtol=1e-12, atol=1e-14
            )


@pytest.mark.parametrize("backend", BACKENDS)
def test_trigamma_runs_as_elementwise_ops_with_scipys_values(backend):
    """A beta-binomial's second derivative in its parameters holds ψ₁ (``tri_gamma``),
    which both backends ran through SciPy one element at a time: rewritten as
    elementwise ops, equal to SciPy's polygamma(1, x) to 1e-14 for x > 0 and to
    1e-9 below 0 (the reflection, near the poles as the sine allows)."""
    from scipy import special

    x = pt.vector("x")
    function = pytensor.function([x], pt.tri_gamma(x), mode=compile_mode(backend))
    graph = pytensor.dprint(function, file="str", print_type=False)  # fused ones' too
    assert "tri_gamma" not in graph.lower() and "trigamma" not in graph.lower()
    if backend == "python":  # (Numba fuses them into loops of its own)
        assert not runs_element_by_element(function)
    positive = np.geomspace(1e-8, 1e10, 3000)
    np.testing.assert_allclose(function(positive), special.polygamma(1, positive), rtol=1e-14)
    negative = -np.random.default_rng(0).uniform(0, 30, 3000)
    np.testing.assert_allclose(function(negative), special.polygamma(1, negative), rtol=1e-9)


def test_the_jax_backends_incomplete_gamma_functions_by_arithmetic_are_scipys():
    """P(s, x) and Q(s, x) as the JAX backend computes them where every shape is in
    (0, 40] (`pm_sens.graph.compile.special.regularized_gamma_by_arithmetic`), here in
    NumPy: SciPy's to 1e-12, relative to the smaller of P and Q where it is above 1e-13
    (the series' and the continued fraction's sides, both near x = s + 1), at x = 0
    and x = ∞ exactly; and the rewrite gives the JAX backend's graphs these ops."""
    from scipy import special

    from pm_sens.graph.compile.special import (
        GammaIncCOnDevice,
        GammaIncOnDevice,
        regularized_gamma_by_arithmetic,
    )

    rng = np.random.default_rng(0)
    s = np.concatenate([rng.uniform(1e-3, 40, 20000), np.geomspace(1e-3, 40, 500)])
    x = np.concatenate([s[:-500] * np.exp(rng.normal(0, 1, 20000)), np.geomspace(1e-9, 1e3, 500)])
    x = np.concatenate([x, [0.0, np.inf]])
    s = np.concatenate([s, [2.5, 2.5]])
    expected = special.gammainc(s, x), special.gammaincc(s, x)
    got = [regularized_gamma_by_arithmetic(np, s, x, special.gammaln, upper) for upper in (0, 1)]
    smaller = np.maximum(np.minimum(*expected), 1e-13)
    for value, exact in zip(got, expected, strict=True):
        assert np.max(np.abs(value - exact) / smaller) < 1e-12
    assert [value[-2:].tolist() for value in got] == [[0.0, 1.0], [1.0, 0.0]]
    shape, at = pt.vector("s"), pt.vector("x")
    graph = FunctionGraph([shape, at], [pt.gammainc(shape, at), pt.gammaincc(shape, at)])
    REWRITES["local_regularized_gamma_on_device"].rewriter.rewrite(graph)
    ops = {type(getattr(node.op, "scalar_op", None)) for node in graph.apply_nodes}
    assert {GammaIncOnDevice, GammaIncCOnDevice} <= ops


def _special_function_nodes(function):
    """``{(op, whether masked, mask's op)}``: a compiled function's special functions."""
    found = set()
    for node in function.maker.fgraph.apply_nodes:
        if isinstance(node.op, WhereSelected):
            mask = node.inputs[0].owner
            scalar = type(node.op.elemwise.scalar_op).__name__
            found.add((scalar, True, None if mask is None else type(mask.op.scalar_op).__name__))
        elif isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op, COSTLY_FUNCTIONS):
            found.add((type(node.op.scalar_op).__name__, False, None))
    return found


def test_special_functions_under_a_select_run_only_where_it_selects_them(rng):
    """PyMC's log-CDF difference (three regions, nested selects) and log-CDF, with
    their gradients, on arrays whose rows come before their draws in memory: on
    the NumPy backend each erfcx/erf/erfc runs only where its select picks it
    (nested ones where both do), with the same values as PyTensor's graph; a
    special function also used outside a select and the Numba backend stay
    as they are."""
    from pymc.distributions.dist_math import log_diff_normal_cdf, normal_lcdf

    z = pt.tensor("z", shape=(None, None, 3))
    cut = pt.tensor("cut", shape=(3,))
    upper, lower = z[..., 1:] - cut[1:], z[..., :-1] - cut[:-1]
    log_p = log_diff_normal_cdf(0.0, 1.0, upper, lower).sum() + normal_lcdf(0.0, 1.0, z).sum()
    outside = pt.erfc(z)  # used by the output too: computed everywhere
    outputs = [log_p, pt.grad(log_p, z), (pt.switch(z > 0, outside, 1.0) + outside).sum()]
    values = [rng.normal(0, 2, size=(400, 6, 3)).transpose(1, 0, 2), np.array([-1.0, 0.2, 1.5])]
    reference = pytensor.function([z, cut], outputs, mode="FAST_COMPILE")(*values)
    for backend in BACKENDS:
        function = pytensor.function([z, cut], outputs, mode=compile_mode(backend))
        with excluding("special_functions_where_selected"):
            plain = pytensor.function([z, cut], outputs, mode=compile_mode(backend))
        got, unmasked = function(*values), plain(*values)
        for new, old, expected in zip(got, unmasked, reference, strict=True):
            np.testing.assert_array_equal(new, old)
            # PyTensor's own rewrites reorder the gradient's cancelling terms
            np.testing.assert_allclose(new, expected, rtol=1e-12, atol=1e-13)
        found = _special_function_nodes(function)
        assert not any(masked for _, masked, _ in _special_function_nodes(plain))
        if backend == "numba":
            assert not any(masked for _, masked, _ in found)
            continue
        assert ("Erfc", False, None) in found  # the one used outside its select
        assert ("Erf", True, "AND") in found  # the innermost region: both selects'
        assert {scalar for scalar, masked, _ in found if masked} == {"Erfcx", "Erf", "Erfc"}


def test_a_condition_per_row_masks_the_special_functions_per_draw_and_row(rng):
    """A right-censored Weibull's moments as the graph writes them: the bound is
    per row (1, N), the incomplete gamma per draw and row (S, N), the shape's
    log-gamma per draw (S, 1). On the NumPy backend the incomplete gamma runs
    only on censored rows, the per-draw log-gamma everywhere (the mask would
    widen it); values and gradients as PyTensor's graph and the Numba backend's."""
    k = pt.matrix("k", shape=(None, 1))
    scale = pt.matrix("scale")
    upper = pt.constant(np.where(rng.random(7) < 0.5, rng.uniform(1, 4, 7), np.inf)[None])
    s = 1 + 1 / k
    whole = scale * pt.exp(pt.gammaln(s))
    safe = pt.switch(pt.isinf(upper), scale, upper)
    z = (safe / scale) ** k
    mean = pt.switch(pt.isinf(upper), whole, safe * pt.exp(-z) + whole * pt.gammainc(s, z))
    outputs = [mean, pt.grad(mean.sum(), scale)]
    values = [rng.uniform(0.8, 2.0, (5, 1)), rng.uniform(0.5, 3.0, (5, 7))]
    reference = pytensor.function([k, scale], outputs, mode="FAST_COMPILE")(*values)
    for backend in BACKENDS:
        function = pytensor.function([k, scale], outputs, mode=compile_mode(backend))
        for got, expected in zip(function(*values), reference, strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-13)
        found = _special_function_nodes(function)
        if backend == "numba":
            assert not any(masked for _, masked, _ in found)
            continue
        assert ("GammaInc", True, "Invert") in found
        assert ("GammaLn", False, None) in found


def test_selects_on_expanded_copies_of_one_condition_mask_their_special_function(rng):
    """A censored law's gradient as PyTensor writes it: the incomplete gamma (S, N)
    reaches selects on the per-row condition (1, N) and on copies of it with an
    axis added, (1, N, 1) over (S, N, D) and (1, 1, N) over (1, S, N), through
    the same added axes. On the NumPy backend it runs only on censored rows;
    values as PyTensor's graph."""
    s = pt.matrix("s", shape=(None, 1))
    z = pt.matrix("z")
    w = pt.tensor3("w")
    upper = pt.matrix("upper", shape=(1, None))  # the bounds are data: an input
    censored = ~pt.isinf(upper)
    f = pt.gammainc(s, z)
    outputs = [
        pt.switch(censored, f, 0.0),
        pt.switch(censored[:, :, None], f[:, :, None] * w, 0.0),
        pt.switch(censored[None], 2.0 * f[None], 1.0),
    ]
    values = [
        rng.uniform(1.2, 2.0, (5, 1)),
        rng.uniform(0.1, 3.0, (5, 7)),
        rng.normal(size=(5, 7, 3)),
        np.where(rng.random(7) < 0.5, rng.uniform(1, 4, 7), np.inf)[None],
    ]
    inputs = [s, z, w, upper]
    reference = pytensor.function(inputs, outputs, mode="FAST_COMPILE")(*values)
    function = pytensor.function(inputs, outputs, mode=compile_mode("python"))
    for got, expected in zip(function(*values), reference, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-14)
    assert [masked for name, masked, _ in _special_function_nodes(function)] == [True]


def test_an_ordered_probits_curves_are_the_same_with_special_functions_where_selected(rng):
    """An ordered probit (class probabilities from PyMC's log-CDFs) through
    partial dependence and draw-mode R-sens: the same values to 1e-13 with and
    without the rewrite, and its compiled forward graph masks its erfcx."""
    x = rng.normal(size=(40, 2))
    with pm.Model() as model:
        b = pm.Normal("b", shape=2)
        cut = pm.Normal("cut", [-1.0, 0.0, 1.0], transform=pm.distributions.transforms.ordered)
        pm.OrderedProbit("y", eta=x @ b, cutpoints=cut, sigma=1.0, observed=rng.integers(0, 4, 40))
    cuts = np.sort(rng.normal(size=(2, 6, 3)), axis=-1)
    idata = posterior({"b": rng.normal(size=(2, 6, 2)), "cut": cuts})
    kw = dict(progressbar=False, extend_inferencedata=False)

    def results():
        curves = pm_sens.partial_dependence(idata, model, grid_resolution=5, **kw)
        local = pm_sens.sensitivity(idata, model, mode="draw", **kw)
        return [curves["partial_dependence"], local["sensitivity"]]

    rewritten = results()
    with excluding("special_functions_where_selected"):
        plain = results()
    for new, old in zip(rewritten, plain, strict=True):
        for name, values in new.data_vars.items():
            np.testing.assert_allclose(values.values, old[name].values, rtol=1e-13, atol=1e-300)
    compiled = _context.predictive_for(model, None).compiled
    forward = [c for key, c in compiled.items() if key[:3] == ("draw", 0, "python")]
    assert any(masked for c in forward for _, masked, _ in _special_function_nodes(c.function))


def test_a_view_vectorized_over_draws_is_the_array_itself(rng):
    """A ViewOp (``pm.Deterministic``) vectorized over draws becomes a Blockwise
    copying draw by draw in Python; compiled with pm_sens's rewrites it is gone
    on both backends, with the same values."""
    from pytensor.compile.ops import view_op
    from pytensor.graph.replace import vectorize_graph
    from pytensor.tensor.blockwise import Blockwise

    row = pt.vector("row")
    draws = pt.matrix("draws")
    expr = pt.exp(vectorize_graph(view_op(pt.sin(row)), {row: draws}))
    assert any(
        isinstance(node.op, Blockwise)
        for node in pytensor.graph.traversal.applys_between([draws], [expr])
    )
    values = rng.normal(size=(7, 5))
    for backend in BACKENDS:
        function = pytensor.function([draws], expr, mode=compile_mode(backend))
        ops = [node.op for node in function.maker.fgraph.apply_nodes]
        assert not any(isinstance(op, Blockwise) for op in ops), (backend, ops)
        np.testing.assert_allclose(function(values), np.exp(np.sin(values)), rtol=1e-15)


@pytest.mark.parametrize("offset", [0, 1, -2])
def test_diagonal_matrices_per_draw_are_allocated_at_once(rng, offset):
    """A diagonal matrix per draw (a marginal GP's noise ``σ² I``) vectorized over
    draws is a Blockwise that builds one draw at a time in Python; with
    pm_sens's rewrites it is one AllocDiag over all draws, on both backends, with
    NumPy's values."""
    from pytensor.graph.replace import vectorize_graph

    row = pt.vector("row")
    draws = pt.matrix("draws")
    expr = vectorize_graph(pt.diag(pt.exp(row), k=offset) + 1.0, {row: draws})
    values = rng.normal(size=(4, 5))
    expected = np.stack([np.diag(np.exp(r), k=offset) + 1.0 for r in values])
    for backend in BACKENDS:
        for skipped, batched in [((), False), (("local_blockwise_alloc_diag",), True)]:
            with excluding(*skipped):
                function = pytensor.function([draws], expr, mode=compile_mode(backend))
            ops = [type(node.op).__name__ for node in function.maker.fgraph.apply_nodes]
            # Numba's form of a Blockwise: BlockwiseWithCoreShape
            assert any(op.startswith("Blockwise") for op in ops) == batched, (backend, ops)
            np.testing.assert_allclose(function(values), expected, rtol=1e-15)

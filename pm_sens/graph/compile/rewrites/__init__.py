"""pm_sens's graph rewrites, by name, and the compile modes that run them.

Each rewrite has a name, a place in PyTensor's sequence of rewrites and the
backends it serves; `compile_mode` builds a backend's mode from the ones not
excluded. The rewrites change how a graph is computed, never what: with all
of them excluded (``with excluding(*REWRITES): ...``) every result is the same
to rounding, only slower.

- `branches`: special functions under a select computed only where it selects them;
- `batched`: joins and splits over a draw axis as one op, not one per draw,
  increments broadcast over it by the shapes PyTensor inferred, no per-draw
  copies of a Deterministic, per-draw diagonal matrices allocated at once;
- `contractions`: loops over draws × points × features as matrix products, and
  factors a sum does not run over taken out of it;
- `incomplete_gamma`: the JAX backend's incomplete gamma functions by arithmetic;
- `layout`: views instead of copies, one array instead of one per feature;
- `numpy_linker`: graphs run op by op in NumPy (the ``"python"`` backend);
- `set_columns`: a column set into an array of zeros computed apart from the array;
- `trigamma`: ψ₁ as elementwise ops, which no backend has as a loop.
"""

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from pytensor.compile.mode import Mode, get_default_mode, get_mode
from pytensor.graph.rewriting.basic import GraphRewriter, in2out
from pytensor.graph.rewriting.db import RewriteDatabaseQuery
from pytensor.link.numba.linker import NumbaLinker
from pytensor.link.vm import VMLinker

from pm_sens.graph.compile.linkers import ReleasingNumbaLinker
from pm_sens.graph.compile.rewrites.batched import (
    local_blockwise_alloc_diag,
    local_blockwise_inc_subtensor_buffer,
    local_blockwise_join,
    local_blockwise_split,
    local_blockwise_view,
)
from pm_sens.graph.compile.rewrites.branches import SpecialFunctionsWhereSelected
from pm_sens.graph.compile.rewrites.contractions import (
    DotsSharingTheirLeft,
    local_draw_sums_as_products,
    local_outer_products_as_a_matrix_product,
    local_sum_of_a_quotient,
    local_sum_of_an_absolute_product,
)
from pm_sens.graph.compile.rewrites.incomplete_gamma import local_regularized_gamma_on_device
from pm_sens.graph.compile.rewrites.layout import (
    local_join_of_like_elementwise,
    local_select_only_into_a_loop,
    local_set_into_zeros_as_view,
)
from pm_sens.graph.compile.rewrites.numpy_linker import (
    UfuncsWritingOut,
    local_gemm_by_blas,
    local_numpy_ufunc_forms,
    runs_element_by_element,
)
from pm_sens.graph.compile.rewrites.set_columns import (
    local_elementwise_of_a_set_column,
    local_reduction_of_a_set_column,
)
from pm_sens.graph.compile.rewrites.trigamma import local_trigamma_as_series

#: how a graph is run on the CPU backend, with pm_sens's rewrites: "numba"
#: compiles it (PyTensor's default mode: seconds to tens of seconds the first
#: time, cached on disk); "python" runs each op as a NumPy call, with no
#: compiling, slower on large arrays (no fused loops). The JAX backends' graphs
#: ("jax") are compiled by PyTensor's JAX linker with PyTensor's rewrites and
#: those of `EVERY_BACKEND`: it has no implementation of the ops the others
#: write, and XLA makes its own loops, views and products.
BACKENDS = ("numba", "python")


@dataclass(frozen=True)
class Rewrite:
    """A named rewrite: where it runs in PyTensor's sequence, and for which backends."""

    rewriter: GraphRewriter
    position: float
    backends: tuple[str, ...] = BACKENDS


#: the rewrites whose ops every backend runs, JAX's too: a `Blockwise` join or
#: split over draws would be traced by JAX with its sizes as values, which it
#: cannot compile (`pm_sens.graph.compile.jax_functions`)
EVERY_BACKEND = (*BACKENDS, "jax")

REWRITES = {
    # before the canonical rewrites (1), which then see one op over all draws
    "local_blockwise_join": Rewrite(in2out(local_blockwise_join), 0.9, EVERY_BACKEND),
    "local_blockwise_view": Rewrite(in2out(local_blockwise_view), 0.9, EVERY_BACKEND),
    "local_blockwise_alloc_diag": Rewrite(in2out(local_blockwise_alloc_diag), 0.9, EVERY_BACKEND),
    "local_blockwise_inc_subtensor_buffer": Rewrite(
        in2out(local_blockwise_inc_subtensor_buffer), 0.9, EVERY_BACKEND
    ),
    # after them: the gradient's split sizes lose their draw axis there
    "local_blockwise_split": Rewrite(in2out(local_blockwise_split), 2.9, EVERY_BACKEND),
    # after the stabilizing rewrites (1.5), before the specializing ones (2),
    # which then drop the zeros the column left behind
    "local_set_column_apart": Rewrite(
        in2out(local_elementwise_of_a_set_column, local_reduction_of_a_set_column), 1.9
    ),
    # after the stabilizing rewrites, which write log-sigmoids as softplus
    "local_numpy_ufunc_forms": Rewrite(in2out(local_numpy_ufunc_forms), 48, ("python",)),
    # before the elementwise operations are fused (49)
    "local_trigamma_as_series": Rewrite(in2out(local_trigamma_as_series), 48.2),
    "local_regularized_gamma_on_device": Rewrite(
        in2out(local_regularized_gamma_on_device), 48.2, ("jax",)
    ),
    "local_outer_products_as_a_matrix_product": Rewrite(
        in2out(local_outer_products_as_a_matrix_product), 48.3
    ),
    "local_set_into_zeros_as_view": Rewrite(in2out(local_set_into_zeros_as_view), 48.4),
    "local_join_of_like_elementwise": Rewrite(in2out(local_join_of_like_elementwise), 48.45),
    "local_select_only_into_a_loop": Rewrite(in2out(local_select_only_into_a_loop), 48.46),
    "local_draw_sums_as_products": Rewrite(in2out(local_draw_sums_as_products), 48.5),
    "local_sum_of_an_absolute_product": Rewrite(in2out(local_sum_of_an_absolute_product), 48.5),
    "local_sum_of_a_quotient": Rewrite(in2out(local_sum_of_a_quotient), 48.5),
    # after the switches sink into products (specialize, 2), before the inplace rewrites
    "special_functions_where_selected": Rewrite(
        SpecialFunctionsWhereSelected(), 48.6, ("python",)
    ),
    # after the merge (49), which makes the per-feature products' left sides one
    "dots_sharing_their_left": Rewrite(DotsSharingTheirLeft(), 49.2),
    # after the inplace rewrites (50.5)
    "ufuncs_writing_out": Rewrite(UfuncsWritingOut(), 99, ("python",)),
    "local_gemm_by_blas": Rewrite(in2out(local_gemm_by_blas), 99.1, ("python",)),
}

_EXCLUDED: ContextVar[frozenset] = ContextVar("pm_sens_excluded_rewrites", default=frozenset())


@contextmanager
def excluding(*names):
    """Compile without the named rewrites inside the ``with`` block.

    Graphs compiled before are kept per set of excluded rewrites, so a block
    compiles its own. Applies in this process (not on dask workers).

    Raises
    ------
    ValueError
        For a name that is not in `REWRITES`.
    """
    unknown = sorted(set(names) - set(REWRITES))
    if unknown:
        raise ValueError(f"unknown rewrites {unknown}; valid: {sorted(REWRITES)}")
    token = _EXCLUDED.set(_EXCLUDED.get() | frozenset(names))
    try:
        yield
    finally:
        _EXCLUDED.reset(token)


def excluded():
    """The names of the rewrites excluded here (`excluding`), sorted."""
    return tuple(sorted(_EXCLUDED.get()))


def compile_mode(backend):
    """The PyTensor mode of ``backend`` with pm_sens's rewrites not excluded.

    ``"jax"``: PyTensor's JAX mode, with the rewrites whose ops JAX runs.

    Minus PyTensor 3.3's ``orthogonal_solve_to_transpose_matmul``, which raises
    (and logs a traceback) on draw-batched triangular solves, e.g. a GP's
    Cholesky solve; the rewrite would not apply to them anyway.
    """
    if backend == "jax":
        mode = get_mode("JAX")
    elif backend == "python":
        mode = Mode(
            VMLinker(use_cloop=False, c_thunks=False),
            RewriteDatabaseQuery(include=["fast_run"], exclude=["fusion", "cxx_only"]),
        )
    else:
        mode = get_default_mode()
        if isinstance(mode.linker, NumbaLinker):  # not where PyTensor's mode is set to another
            mode = Mode(ReleasingNumbaLinker(), mode.provided_optimizer)
    skipped = _EXCLUDED.get()
    mode = mode.register(
        *(
            (rewrite.rewriter, rewrite.position)
            for name, rewrite in REWRITES.items()
            if backend in rewrite.backends and name not in skipped
        )
    )
    return mode.excluding("orthogonal_solve_to_transpose_matmul")


__all__ = [
    "BACKENDS",
    "REWRITES",
    "Rewrite",
    "compile_mode",
    "excluded",
    "excluding",
    "runs_element_by_element",
]

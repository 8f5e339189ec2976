"""Compiled PyTensor functions: the one place pm_sens calls ``pytensor.function``."""

import functools
import math
import threading

import numpy as np
import pytensor
import pytensor.tensor as pt
from pymc.logprob.utils import ParameterValueError
from pytensor.graph.op import HasInnerGraph
from pytensor.graph.traversal import applys_between, io_toposort
from pytensor.tensor.type import TensorType

from pm_sens.graph.compile.linkers import ReleasingNumbaLinker
from pm_sens.graph.compile.rewrites import compile_mode

#: graphs of more nodes than this compile without PyTensor's inplace rewrites,
#: whose validation (the destroy handler) checks each candidate against the
#: whole graph: on large graphs it takes most of the compile and saves little
#: of the run (benchmarks/README.md, "Tuned constants")
LARGE_GRAPH = 1_000

_TRACES = threading.Lock()
_building = [0, None]  # builds under way, and the user's traceback limit they set aside


def without_traces(build):
    """``build`` with PyTensor's record of where each variable is made turned off.

    PyTensor keeps the Python stack at every node it makes (its
    ``traceback__limit`` setting, so that an error can point at the user's
    line): a sixth of compiling a zoo model's graphs and a quarter of a
    20-component mixture's, for graphs whose errors pm_sens words itself. The
    setting is process-wide: the first of overlapping builds (threads: a
    background compile) sets the user's value aside and the last puts it back.
    """

    @functools.wraps(build)
    def wrapped(*args, **kwargs):
        with _TRACES:
            if _building[0] == 0:
                _building[1] = pytensor.config.traceback__limit
                pytensor.config.traceback__limit = 0
            _building[0] += 1
        try:
            return build(*args, **kwargs)
        finally:
            with _TRACES:
                _building[0] -= 1
                if _building[0] == 0:
                    pytensor.config.traceback__limit = _building[1]

    return wrapped


class GraphFunction:
    """A compiled function of ``arguments``, callable from several threads at once.

    A graph compiled by Numba is one function of the input arrays that
    releases the GIL (`pm_sens.graph.compile.linkers`): every call runs it
    directly (`JittedGraph`). A compiled PyTensor function of another linker
    keeps its inputs and outputs in storage of its own, so one call runs on
    it at a time: a call made while every copy is busy (chunks evaluated in
    threads, `pm_sens._run.chunks`; dask's threads) runs on a new copy of
    it, which shares its compiled code. A NumPy graph that holds an op
    running a compiled function of its own (a `Scan`; an `OpFromGraph`
    vectorized over draws, as an einsum or a log-sum-exp) runs one call at a
    time: that function is kept on the op, which every copy shares, so
    copies running at once would write into the same storage.

    Parameters
    ----------
    arguments, outputs : list of TensorVariable
        The graph; arguments it does not use are ignored.
    backend : str, optional
        ``"python"`` (NumPy) or ``"numba"``, compiled with pm_sens's rewrites
        (`pm_sens.graph.compile.rewrites.compile_mode`); None for PyTensor's default
        mode. (The JAX backend's: `pm_sens.graph.compile.jax_functions`.)
    lazy : bool
        Compile at the first call (a likelihood needs only some of its
        functions) instead of now.
    small : int
        With ``backend="numba"``: a call whose every argument has at most this
        many elements runs op by op in NumPy instead (that version compiled at
        the first such call, Numba's at the first larger one): Numba's compile
        takes seconds to tens of seconds, longer than NumPy takes for a small
        call. 0: every call runs on ``backend``.
    """

    def __init__(self, arguments, outputs, backend=None, *, lazy=False, small=0):
        self._graph = (list(arguments), list(outputs))
        self.backend = backend
        self._small = small
        #: the NumPy version of the graph, for calls of at most `small` elements per argument
        self._small_function = (
            GraphFunction(arguments, outputs, "python", lazy=True)
            if small and backend == "numba"
            else None
        )
        self._function = None
        #: the Numba-compiled graph, called from every thread (None for other linkers)
        self._jitted = None
        #: `largest_array` per tuple of argument shapes
        self._largest = {}
        #: copies of the compiled function not running now
        self._idle = []
        #: whether a call must wait for a copy to be idle rather than make one
        self._one_at_a_time = False
        self._returned = threading.Condition()
        if not lazy:
            self._compile()

    @without_traces
    def _compile(self):
        if self._function is None:
            arguments, outputs = self._graph
            mode = None if self.backend is None else compile_mode(self.backend)
            if mode is not None and _n_nodes(arguments, outputs) > LARGE_GRAPH:
                mode = mode.excluding("inplace")
            self._function = pytensor.function(
                arguments, outputs, on_unused_input="ignore", mode=mode
            )
            self._one_at_a_time = self.backend == "python" and _has_inner_functions(self._function)
            self._jitted = JittedGraph.of(self._function)
            self._idle.append(self._function)
        return self._function

    def _take(self):
        """A copy of the compiled function no call runs on (compiled first if lazy).

        The caller hands it back with `_give_back` when its call returns.
        """
        with self._returned:  # one compile, and a copy is taken by one caller
            function = self._compile()
            if self._jitted is not None:
                return self._jitted
            if self._one_at_a_time:
                self._returned.wait_for(lambda: self._idle)
            return self._idle.pop() if self._idle else function.copy()

    def _give_back(self, function):
        if function is self._jitted:
            return
        with self._returned:
            self._idle.append(function)
            self._returned.notify()

    @property
    def maker(self):
        """The compiled function's maker (its optimized graph: ``maker.fgraph``)."""
        return self._compile().maker

    def __call__(self, *args):
        """The outputs at ``args`` (compiled first if it was lazy).

        Raises
        ------
        ValueError
            Where a parameter check of the model's likelihood fails (PyMC's
            ``check_parameters``: mixture weights that do not sum to 1, a
            negative scale), naming the check.
        """
        if self._small_function is not None and all(np.size(a) <= self._small for a in args):
            return self._small_function(*args)
        function = self._take()
        try:
            return function(*args)
        except ParameterValueError as error:
            raise ValueError(
                f"the likelihood's parameters fail the model's own check ({error}) at "
                "some of the draws and points evaluated: the model's expressions give "
                "values its likelihood does not allow there (e.g. stick-breaking "
                "weights truncated before they sum to 1, or inputs moved beyond where "
                "they stay valid). Check the posterior (idata from this model), or "
                "choose points= and inputs within the data's range"
            ) from None
        finally:
            self._give_back(function)

    def largest_array(self, *args):
        """Elements of the largest array of three or more dims the graph computes at ``args``.

        From the static shapes PyTensor infers when the compiled graph is
        rebuilt on arguments of ``args``' shapes, without computing the arrays:
        an axis inside the graph, as a GP's kernel row over its training
        inputs, can make a temporary far larger than the outputs. Sizes known
        only from values do not count. The compiled graph, not the one given:
        a design matrix times coefficients is a (draws, rows, columns) product
        there, a matrix product once compiled.
        """
        shapes = tuple(np.shape(value) for value in args)
        if shapes not in self._largest:
            fgraph = self.maker.fgraph
            self._largest[shapes] = largest_array_of(fgraph.inputs, fgraph.outputs, shapes)
        return self._largest[shapes]


class JittedGraph:
    """A graph compiled by Numba, called as its jitted function: any thread, at once.

    A copy of a compiled PyTensor function links its graph again, and Numba
    looks its code up by a key of the graph's operations in the order of a
    sort that PyTensor does not keep from one copy to the next (the inplace
    operations' orderings): a copy can compile the whole graph again. The
    jitted function holds no state and releases the GIL, so one serves
    every call.
    """

    def __init__(self, function):
        self._jitted = function.vm.jit_fn
        self._inputs = [(i.variable.type, i.allow_downcast) for i in function.maker.inputs]

    @classmethod
    def of(cls, function):
        """The jitted graph of ``function``, or None where it was not linked by Numba."""
        linker = function.maker.linker
        if not isinstance(linker, ReleasingNumbaLinker) or not hasattr(function.vm, "jit_fn"):
            return None
        if len(function.maker.inputs) != len(function.maker.fgraph.inputs):
            return None  # inputs of the graph that are not arguments (shared variables)
        return cls(function)

    def __call__(self, *args):
        """The outputs at ``args``, filtered to the inputs' types as a PyTensor function does."""
        values = [
            kind.filter(value, strict=False, allow_downcast=downcast)
            for (kind, downcast), value in zip(self._inputs, args, strict=True)
        ]
        return list(self._jitted(*values))


def largest_array_of(arguments, outputs, shapes, views=True):
    """`GraphFunction.largest_array` of the graph ``arguments`` → ``outputs``, at ``shapes``.

    ``views=False``: arrays an operation returns as a view of its input (the
    data with an axis added for the draws) do not count: they hold no values
    of their own.
    """
    typed = {
        a: pt.tensor(dtype=a.type.dtype, shape=shape)
        for a, shape in zip(arguments, shapes, strict=True)
        if isinstance(a.type, TensorType)
    }
    largest = 0
    for node in io_toposort(arguments, outputs):
        try:
            rebuilt = node.clone_with_new_inputs(
                [typed.get(x, x) for x in node.inputs], strict=False
            )
        except Exception:  # noqa: BLE001 (a shape that needs values: not known)
            continue
        view_map = getattr(node.op, "view_map", {})
        for i, (old, new) in enumerate(zip(node.outputs, rebuilt.outputs, strict=True)):
            typed[old] = new
            shape = getattr(new.type, "shape", ())
            if not views and i in view_map:
                continue
            if len(shape) >= 3 and None not in shape:
                largest = max(largest, math.prod(shape))
    return largest


def _has_inner_functions(function):
    """Whether an op of ``function`` runs a compiled function kept on the op.

    Every copy of ``function`` shares that op (or a batched op's core op).
    """
    ops = (node.op for node in function.maker.fgraph.apply_nodes)
    return any(isinstance(getattr(op, "core_op", op), HasInnerGraph) for op in ops)


def _n_nodes(arguments, outputs):
    """The number of operations between ``arguments`` and ``outputs``."""
    return sum(1 for _ in applys_between(arguments, outputs))


def evaluate(outputs, inputs=(), values=()):
    """``outputs`` evaluated once at ``values`` of ``inputs`` (a shape, a design check).

    Compiled in PyTensor's FAST_COMPILE mode: the graph runs once, so its
    rewrites would cost more than they save.
    """
    function = pytensor.function(
        list(inputs), outputs, on_unused_input="ignore", mode="FAST_COMPILE"
    )
    return function(*values)

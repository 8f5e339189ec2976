"""The JAX backend's compiled functions: PyTensor's JAX linker, the data kept on the device.

A chunk graph is compiled by PyTensor's JAX linker once per tuple of argument
shapes, its arguments given those shapes as static ones: PyTensor's rewrites
then turn every shape the graph computes (a lag's slice, a reshape, a range
over the rows) into a constant, as JAX's compiler requires. A call has
one or two such tuples: its chunks of draws, and its blocks of rows, are of
one size where their count allows (`pm_sens._run.chunks.equal_chunks`). The
large arguments, the points' data, are copied to JAX's device at their first
call and kept there (`DeviceArrays`); the outputs come back as
NumPy arrays of the graph's dtypes. In float32 (`single_precision`) the same
graph is traced with JAX's 64-bit types off: the copies on the device and
every operation are single precision.
"""

import contextlib
import re
import threading
import traceback
import warnings
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.graph.replace import clone_replace
from pytensor.tensor.type import TensorType

from pm_sens.graph.compile.functions import largest_array_of
from pm_sens.graph.compile.rewrites import compile_mode
from pm_sens.graph.compile.special import register_jax_forms


class JaxGraphFunction:
    """A chunk graph compiled by PyTensor's JAX linker, per tuple of argument shapes.

    Calls run one at a time: XLA's compiled function uses the device (or the
    CPU's cores) itself.

    Parameters
    ----------
    arguments, outputs : list of TensorVariable
        The graph; arguments it does not use are ignored.
    dtype : {"float64", "float32"}
        What the graph computes in on the device.
    """

    backend = "jax"

    def __init__(self, arguments, outputs, dtype="float64"):
        self._graph = (list(arguments), list(outputs))
        self.dtype = dtype
        #: the compiled function per tuple of argument shapes
        self._compiled = {}
        self._largest = {}
        self._on_device = DeviceArrays()
        self._lock = threading.Lock()

    def _function(self, shapes):
        """The graph compiled for arguments of ``shapes`` (given to it as static shapes)."""
        if shapes not in self._compiled:
            arguments, outputs = self._graph
            static = [
                pt.tensor(dtype=a.type.dtype, shape=shape) if isinstance(a.type, TensorType) else a
                for a, shape in zip(arguments, shapes, strict=True)
            ]
            outputs = clone_replace(outputs, dict(zip(arguments, static, strict=True)))
            register_jax_forms()
            with _jax_errors():
                self._compiled[shapes] = pytensor.function(
                    static, outputs, on_unused_input="ignore", mode=compile_mode("jax")
                )
        return self._compiled[shapes]

    def __call__(self, *args):
        """The outputs at ``args``, as writable NumPy arrays of the graph's dtypes.

        Raises
        ------
        ValueError
            Where JAX cannot compile or trace the graph, naming the operation
            and the backend that runs it.
        DeviceMemoryError
            Where the device's memory cannot hold the call's arrays.
        """
        shapes = tuple(np.shape(value) for value in args)
        precision = single_precision() if self.dtype == "float32" else contextlib.nullcontext()
        dtypes = [v.type.dtype for v in self._graph[1]]
        # JAX traces the graph at its first call; the copies to the device are in its
        # precision; a device's error may surface when an output is read
        with self._lock, _jax_errors(), precision:
            outputs = self._function(shapes)(*self._on_device.put(args))
            return [np.array(x, dtype=dtype) for x, dtype in zip(outputs, dtypes, strict=True)]

    def largest_array(self, *args):
        """Elements of the largest array of three or more dims the graph computes at ``args``.

        From the graph as given (XLA's compiled graph is not PyTensor's to read):
        as large as the compiled graph's or larger, so chunks fit the memory. A
        view does not count: the data with an axis added for the draws (a
        design matrix before its product with the coefficients) is the data.
        """
        shapes = tuple(np.shape(value) for value in args)
        if shapes not in self._largest:
            self._largest[shapes] = largest_array_of(*self._graph, shapes, views=False)
        return self._largest[shapes]


def on_an_accelerator():
    """Whether JAX's default device is an accelerator (a GPU), not the host's CPU.

    Work that moves from NumPy into a graph to save copies off the device (a
    discrete family's pmf tables, summed over draws there) is done so only on
    an accelerator: on the CPU the arrays are in the host's memory already,
    and NumPy computes the tables faster than XLA does there.
    """
    import jax

    return jax.default_backend() != "cpu"


@contextlib.contextmanager
def single_precision():
    """JAX's arrays and operations in 32 bits, matrix products in full float32.

    JAX's 64-bit types off: the float64 graph's arrays, constants and
    operations become float32 (its integers int32) when traced and copied.
    Matrix products at float32's full precision: a GPU would otherwise use
    TensorFloat-32 (10-bit mantissas) for them.
    """
    import jax

    with (
        jax.enable_x64(False),
        jax.default_matmul_precision("float32"),
        _WARNING_FILTERS,
        warnings.catch_warnings(),
    ):
        # the float64 the graph asks for is float32 here, as meant
        warnings.filterwarnings("ignore", message="Explicitly requested dtype float64")
        yield


#: held while pm_sens's filters are installed: Python's warning filters are one list
#: for the process, which `warnings.catch_warnings` saves and sets back, so two
#: threads inside at once would set back each other's (one's filters left behind)
_WARNING_FILTERS = threading.RLock()


class DeviceArrays:
    """Copies of a JAX function's large arguments on JAX's device, made once.

    The data arrays of a call (its points) are the same NumPy arrays in every
    chunk's call: each is copied to the device at its first call, not once per
    chunk. The most recent `KEPT` arrays are kept (with the NumPy array, so
    that its ``id`` is not reused while its copy is). An array is known by its
    object: one changed in place must be passed as a new object (a view of all
    of it), as the only such change in pm_sens does (`pm_sens._run.output_checks`'
    probes); a block of some of an array's rows (`evaluate_by_rows`) is a
    slice, on the device, of that array's copy.
    """

    #: arguments kept on the device at once
    KEPT = 8
    #: smaller arguments (a chunk's draws, scalars; blocks of a smaller array) are
    #: passed as they are
    LARGE = 10_000

    def __init__(self):
        self._copies = OrderedDict()

    def put(self, args):
        """``args`` with each large NumPy array replaced by its copy on the device.

        A block of rows of an array (a view, as `evaluate_by_rows` takes them)
        is that array's copy on the device, sliced there.
        """
        return [self._on_device(value) for value in args]

    def _on_device(self, value):
        if not isinstance(value, np.ndarray):
            return value
        memory, rows = _rows_of(value)
        if memory.size < self.LARGE:
            return value
        # the memory's object, kept with its copy: its id is not reused while kept
        key = (id(memory.base if rows is not None else memory), memory.shape)
        if key not in self._copies:
            import jax

            self._copies[key] = (memory, jax.device_put(memory))
            while len(self._copies) > self.KEPT:
                self._copies.popitem(last=False)
        self._copies.move_to_end(key)
        copy = self._copies[key][1]
        return copy if rows is None else copy[rows]


def _rows_of(value):
    """``(rows_of_memory, rows)`` where ``value`` is ``rows_of_memory[rows]``.

    ``rows_of_memory``: the C-contiguous array ``value`` views, reshaped to
    ``value``'s columns (a view whose ``base`` is that array), where ``value``
    is a block of fewer rows than it holds; else ``(value, None)``.
    """
    root = value
    while isinstance(root.base, np.ndarray):
        root = root.base
    columns = value.shape[1:]
    width = int(np.prod(columns)) if columns else 1
    fits = root.dtype == value.dtype and root.flags.c_contiguous and value.flags.c_contiguous
    if root is value or not fits or not value.ndim or root.size % width:
        return value, None
    memory = root.reshape(-1, *columns)  # a view of the root, in value's rows
    offset = value.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    start, rest = divmod(offset, value.itemsize * width)
    # a view of all of the array is an array of its own: a changed array is passed as one
    if rest or len(value) == len(memory) or start + len(value) > len(memory):
        return value, None
    return memory, slice(start, start + len(value))


class DeviceMemoryError(MemoryError):
    """The device's memory cannot hold a call's arrays (JAX's ``RESOURCE_EXHAUSTED``).

    `pm_sens._run.chunks` then evaluates fewer draws at a time.
    """


class _jax_errors:  # noqa: N801 (a context manager used as a statement)
    """Our error for a graph JAX cannot compile or trace; PyTensor's notices kept quiet.

    PyTensor's JAX linker fails on an op it has no implementation of when the
    function is made (``NotImplementedError``), and JAX's tracing at the first
    call fails on what it cannot compile (a ``TypeError``): both become a
    `ValueError` that names the backend that runs the model. The linker
    leaves out the model's parameter checks (PyMC's ``check_parameters``), as
    JAX's tracing would, and warns once per check, which the user cannot act on.
    A device whose memory is exhausted raises a `DeviceMemoryError`. One thread
    at a time is inside (`_WARNING_FILTERS`).
    """

    def __enter__(self):
        _WARNING_FILTERS.acquire()
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        warnings.filterwarnings("ignore", message="Skipping .* as JAX tracing would remove it")
        # its failure, if it fails, is said in our words below
        warnings.filterwarnings("ignore", message="Split node does not have constant split")
        return self

    def __exit__(self, kind, error, tb):
        self._warnings.__exit__(kind, error, tb)
        _WARNING_FILTERS.release()
        if _out_of_memory(error):
            raise DeviceMemoryError(
                "the device's memory cannot hold this chunk's arrays (JAX: "
                f"{str(error).strip().splitlines()[0]}). Use a smaller memory_limit= (fewer "
                "draws, and rows, at a time), or backend='cpu'"
            ) from None
        if not _raised_by_jax(error):
            return False
        found = re.search(r"for the given `Op`: (.*)", str(error))
        if found:
            why = (
                f"it holds the operation {found.group(1)}, which PyTensor's JAX linker has "
                "no implementation of"
            )
        else:
            first_line = (str(error).strip() or type(error).__name__).splitlines()[0]
            why = f"JAX cannot compile one of its operations (JAX: {first_line})"
        raise ValueError(
            f"the JAX backend cannot run this model's graph: {why}. Use backend='cpu' "
            "(the call's backend=, or pm_sens.set_options(backend='cpu')), which runs "
            "every model pm_sens supports"
        ) from None


def _out_of_memory(error):
    """Whether ``error`` is JAX's: the device's memory is exhausted."""
    import jax

    return isinstance(error, jax.errors.JaxRuntimeError) and "RESOURCE_EXHAUSTED" in str(error)


def _raised_by_jax(error):
    """Whether ``error`` is JAX's, or PyTensor's JAX linker's, refusal of a graph."""
    if not isinstance(error, TypeError | NotImplementedError):
        return False
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and "jax" in Path(frames[-1].filename).parts

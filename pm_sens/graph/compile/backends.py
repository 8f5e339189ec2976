"""Which compiled function runs a chunk graph on each backend."""

from pm_sens.graph.compile.functions import GraphFunction
from pm_sens.graph.compile.jax_functions import JaxGraphFunction
from pm_sens.graph.compile.rewrites import runs_element_by_element


def compiled_function(arguments, outputs, backend, dtype="float64"):
    """The compiled function of a chunk graph, and the backend it runs on.

    ``backend``: ``"python"`` or ``"numba"`` (a `GraphFunction`), ``"jax"`` (a
    `JaxGraphFunction`, computing in ``dtype``). A graph with an op NumPy would
    run element by element in Python is compiled with Numba instead.
    """
    if backend == "jax":
        return JaxGraphFunction(arguments, outputs, dtype), backend
    function = GraphFunction(arguments, outputs, backend)
    if backend == "python" and runs_element_by_element(function):
        backend = "numba"
        function = GraphFunction(arguments, outputs, backend)
    return function, backend

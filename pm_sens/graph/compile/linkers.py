"""How a compiled graph is linked to run: PyTensor's Numba linker, releasing the GIL.

PyTensor's Numba linker compiles a graph into one function that holds Python's
GIL while it runs, so chunks of draws evaluated in several threads would run
one at a time. pm_sens's linker compiles the same function with Numba's
``nogil``: threads evaluate their chunks at once, on as many cores
(`pm_sens._run.chunks`). The graph's code is what PyTensor generates; only the
function called from Python differs, cached under its own key (a cached
function compiled without ``nogil`` would keep the GIL).
"""

from pytensor.link.numba.linker import NumbaLinker


class ReleasingNumbaLinker(NumbaLinker):
    """PyTensor's `NumbaLinker`, its compiled graph releasing the GIL while it runs."""

    def jit_compile(self, fn_and_cache):
        """The graph's function, compiled with ``nogil`` (and cached where PyTensor caches it)."""
        from pytensor import config
        from pytensor.link.numba.cache import compile_numba_function_src
        from pytensor.link.numba.dispatch.basic import numba_njit

        fn, cache_key = fn_and_cache
        if cache_key is None:
            return numba_njit(fn.py_func, final_function=True, nogil=True)
        # a function of its own, so that Numba's cache keeps it apart from PyTensor's
        caller = compile_numba_function_src(
            src="def graph_releasing_gil(*args): return graph(*args)",
            function_name="graph_releasing_gil",
            # with this module's name: Numba's cache rebuilds the environment from it
            global_env=globals() | {"graph": fn},
            cache_key=f"{cache_key}_fastmath{int(config.numba__fastmath)}_nogil",
        )
        return numba_njit(caller, final_function=True, cache=True, nogil=True)

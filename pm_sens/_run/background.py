"""Numba compiles in a background thread while NumPy runs the requests.

Numba compiles a chunk graph in 7–20 s on an empty cache (measured on the
bambi benchmark's draw-mode R-sens: 19 s of a 22 s first call, for a graph of
48 nodes), then runs it about 4 times faster than NumPy op by op (0.3 s against
1.1 s there). A request of moderate size would wait longer for the compile than
NumPy takes to run it, so it runs in NumPy. When the same graph is requested
again (an interactive session, a loop), its Numba version is compiled and run
once on one draw in a daemon thread, and requests that start after it is ready
use it. Not at the first request: the compile's Python work would slow that
request down (5.2 s against 1.9 s measured), and a script that asks once does
not need it. A compile that fails leaves the NumPy version in use (the results
are the same to rounding).

While a compile runs, Python's thread switch interval is shortened
(`SWITCH_INTERVAL`, set back when the last compile ends unless changed
meanwhile): a request's NumPy calls release Python's lock while they compute,
and the compile's Python work takes it; each call then waits up to the
interval (5 ms by default) to get it back, and an op-by-op graph makes
hundreds of calls per chunk.
"""

import logging
import sys
import threading
import weakref

_log = logging.getLogger("pm_sens")
#: how many times each key was requested before its compile started, per predictive
_REQUESTS = weakref.WeakKeyDictionary()
_THREADS = []
#: Python's thread switch interval (seconds) while a compile runs (measurements:
#: benchmarks/README.md, "Tuned constants")
SWITCH_INTERVAL = 5e-5
#: compiles running, the switch interval to set back when none is, and the one set
_RUNNING = {"count": 0, "interval": None, "set": None}
_RUNNING_LOCK = threading.Lock()


def compile_when_asked_again(predictive, key, lock, build, warm):
    """Build ``predictive.compiled[key]`` in a daemon thread at the second request.

    ``build()`` returns the compiled predictive, ``warm(compiled)`` runs it once
    (Numba compiles at the first run); ``build`` runs under ``lock``, as every
    compile does, and the result is stored under it when both succeed. Until
    then ``key`` is not in ``predictive.compiled``: callers use another backend.
    """
    with lock:
        requests = _REQUESTS.setdefault(predictive, {})
        requests[key] = requests.get(key, 0) + 1
        if requests[key] != 2:
            return

    def run():
        _compile_started()
        try:
            with lock:  # builds graphs as the other compiles do: one at a time
                compiled = build()
            warm(compiled)  # Numba's compile, the long part
        except Exception as error:  # noqa: BLE001 (the NumPy version stays in use)
            _log.debug("pm_sens: the background Numba compile failed (%s)", error)
            return
        finally:
            _compile_ended()
        with lock:
            predictive.compiled[key] = compiled

    thread = threading.Thread(target=run, name="pm_sens numba compile", daemon=True)
    _THREADS.append(thread)
    thread.start()


def _compile_started():
    """Shorten the switch interval for the first compile that runs (`SWITCH_INTERVAL`)."""
    with _RUNNING_LOCK:
        if _RUNNING["count"] == 0:
            _RUNNING["interval"] = sys.getswitchinterval()
            sys.setswitchinterval(min(SWITCH_INTERVAL, _RUNNING["interval"]))
            _RUNNING["set"] = sys.getswitchinterval()
        _RUNNING["count"] += 1


def _compile_ended():
    """Set the switch interval back when the last running compile ends.

    Unless it was changed meanwhile (by the user's code): the new value stays.
    """
    with _RUNNING_LOCK:
        _RUNNING["count"] -= 1
        if _RUNNING["count"] == 0 and sys.getswitchinterval() == _RUNNING["set"]:
            sys.setswitchinterval(_RUNNING["interval"])


def wait_for_compiles():
    """Wait until every background compile started so far has finished (benchmarks)."""
    while _THREADS:
        _THREADS.pop().join()

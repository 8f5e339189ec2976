"""Settings that hold for every call: `set_options` and `get_options`."""

import importlib.util
import numbers
import os
import warnings

import numpy as np

#: the settings each call reads when its own argument is None
_OPTIONS = {"cores": None, "backend": "cpu", "dtype": "float64"}

#: where the compiled chunk functions run: "cpu" (NumPy and Numba, every core);
#: "jax" (PyTensor's JAX linker, on JAX's default device: a GPU where it sees
#: one); "gpu" (the JAX backend, saying so where JAX sees no GPU)
BACKENDS = ("cpu", "jax", "gpu")

#: the floating-point types the compiled graphs compute in: float32 on the JAX
#: backends only (NumPy and Numba run the model's graph as PyMC built it)
DTYPES = ("float64", "float32")


def available_cores():
    """The CPU cores this process may run on (its affinity, where the system has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def check_cores(name, value):
    """``value`` must be None or an integer >= 1: the cores a call may use."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(
            f"{name}={value!r} is not valid; it must be None (every core: "
            f"{available_cores()} here) or an integer >= 1"
        )
    return int(value)


def check_backend(name, value):
    """``value`` must be None or one of `BACKENDS`; JAX's must be installed.

    Raises
    ------
    ValueError
        For another value.
    ImportError
        For ``"jax"`` or ``"gpu"`` where JAX is not installed, naming the extra.
    """
    if value is None:
        return None
    if value not in BACKENDS:
        raise ValueError(f"{name}={value!r} is not valid; it must be None or one of {BACKENDS}")
    if value != "cpu" and importlib.util.find_spec("jax") is None:
        raise ImportError(
            f"{name}={value!r} runs the compiled graphs with JAX, which is not installed: "
            "pip install pm_sens[jax] (JAX's CPU build; JAX's own instructions for a GPU), "
            f"or use {name}='cpu'"
        )
    if value == "gpu":
        _say_where_without_gpu()
    return value


def check_dtype(name, value):
    """``value`` must be None or one of `DTYPES` (a NumPy dtype or its name).

    Returns
    -------
    str or None
        The dtype's name.
    """
    if value is None:
        return None
    try:
        dtype = np.dtype(value).name
    except TypeError:
        dtype = None
    if isinstance(value, bool) or dtype not in DTYPES:
        raise ValueError(f"{name}={value!r} is not valid; it must be None or one of {DTYPES}")
    return dtype


def check_precision(backend, dtype):
    """``dtype`` must be float64 unless ``backend`` is a JAX one.

    Both as a call resolves them (its argument, else `set_options`'s).
    """
    if dtype != "float64" and backend == "cpu":
        raise ValueError(
            f"dtype={dtype!r} runs on the JAX backend only: the CPU backend computes in "
            "float64, as PyMC builds the model. Pass backend='jax' (or 'gpu') with it, "
            "or leave dtype as None"
        )


def _say_where_without_gpu():
    """Warn where JAX sees no GPU: ``backend="gpu"`` then runs on JAX's CPU device."""
    import jax

    platforms = sorted({device.platform for device in jax.devices()})
    if "gpu" not in platforms:
        warnings.warn(
            f"backend='gpu': JAX sees no GPU here (its devices: {platforms}), so the JAX "
            "backend runs on the CPU, with the same results. Install JAX for your GPU "
            "(JAX's instructions) to run on it",
            UserWarning,
            stacklevel=3,
        )


class _Unchanged:
    """What an option not given to `set_options` is: left as it was."""

    def __repr__(self):
        return "<unchanged>"


_UNCHANGED = _Unchanged()


class set_options:  # noqa: N801 (used as a function, like xarray.set_options)
    """Set pm_sens's options for every later call, or inside a ``with`` block.

    Each public function that computes takes the same options as arguments
    (``cores=``, ``backend=``, ``dtype=``), which, when given, override these
    settings for that call.

    Parameters
    ----------
    cores : int or None, optional
        The CPU cores a call may use: chunks of draws are evaluated in this many
        threads at once where the work is large enough to gain from it. The
        results are the same for any number of cores (the chunks and the order
        their sums are made in do not change). None (the default): every core
        this process may run on. Left unchanged where not given.
    backend : {"cpu", "jax", "gpu"}, optional
        Where the compiled graphs run. ``"cpu"`` (the default): NumPy and
        Numba, on ``cores`` cores. ``"jax"``: PyTensor's JAX linker, on the
        device JAX chooses (a GPU where it sees one), the data moved there
        once per call (``pip install pm_sens[jax]``). ``"gpu"``: the JAX
        backend on a GPU; where JAX sees none it says so and runs on the CPU.
        The results are the default backend's to rounding (1e-10 in float64).
        Left unchanged where not given.
    dtype : {"float64", "float32"}, optional
        What the compiled graphs compute in. ``"float64"`` (the default): as
        PyMC builds the model. ``"float32"``: on the JAX backends only, the data
        and draws copied to the device and every operation of the graphs in
        single precision (half the device's memory and transfers; several
        times faster on a GPU), the results brought back in float64 and summed
        there; on the zoo, R-sens, permutation importance, PDP and Integrated
        Gradients agree with float64 to 1e-7 (median) and 1e-4 at most (GPs),
        the finite-difference KL only to its step's rounding (about 1e-3); a
        likelihood without closed forms computes in float64 (the how-to "Run
        on JAX, and on a GPU" gives the measured errors). Left unchanged where
        not given.

    Examples
    --------
    Inside a block only (``pm_sens.set_options(cores=4)`` alone sets it for
    the rest of the session):

    >>> import pm_sens
    >>> with pm_sens.set_options(cores=1):
    ...     pm_sens.get_options()["cores"]
    1
    """

    def __init__(self, *, cores=_UNCHANGED, backend=_UNCHANGED, dtype=_UNCHANGED):
        checks = {"cores": check_cores, "backend": check_backend, "dtype": check_dtype}
        given = {"cores": cores, "backend": backend, "dtype": dtype}
        checked = {
            name: checks[name](name, value)
            for name, value in given.items()
            if value is not _UNCHANGED
        }
        # None: the default again
        defaults = {"backend": "cpu", "dtype": "float64"}
        checked.update(
            {
                name: value
                for name, value in defaults.items()
                if name in checked and checked[name] is None
            }
        )
        self._before = dict(_OPTIONS)
        _OPTIONS.update(checked)

    def __enter__(self):
        """Nothing more: the options were set when the object was made."""
        return self

    def __exit__(self, *exc_info):
        """The options as they were before this object was made."""
        _OPTIONS.clear()
        _OPTIONS.update(self._before)


def get_options(name=None):
    """The options each call reads when its own argument is None.

    Parameters
    ----------
    name : str, optional
        One option's name (``"cores"``, ``"backend"``, ``"dtype"``); None for
        all of them.

    Returns
    -------
    dict, int or str
        ``{"cores": int, "backend": str, "dtype": str}``, or the value of
        ``name``: the cores set (`set_options`), or every core this process may
        run on where none was set; the backend set, ``"cpu"`` where none was;
        the dtype set, ``"float64"`` where none was.

    Examples
    --------
    >>> import pm_sens
    >>> with pm_sens.set_options(cores=3):
    ...     pm_sens.get_options()
    {'cores': 3, 'backend': 'cpu', 'dtype': 'float64'}
    >>> with pm_sens.set_options(cores=1):
    ...     pm_sens.get_options("cores")
    1
    """
    cores = _OPTIONS["cores"]
    options = {
        "cores": available_cores() if cores is None else cores,
        "backend": _OPTIONS["backend"],
        "dtype": _OPTIONS["dtype"],
    }
    if name is None:
        return options
    if name not in options:
        raise ValueError(f"name={name!r} is not valid; the options are {sorted(options)}")
    return options[name]

"""Argument checks shared by the public functions, and array kinds they meet.

Every message names the argument, the value received and what is valid.
"""

import numbers

import numpy as np


def check_choice(name, value, valid):
    """``value`` must be one of ``valid``."""
    if value not in valid:
        raise ValueError(f"{name}={value!r} is not valid; valid: {list(valid)}")
    return value


def check_positive(name, value):
    """``value`` must be a finite real number > 0."""
    if (
        not isinstance(value, numbers.Real)
        or isinstance(value, bool)
        or not np.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{name}={value!r} is not valid; it must be a finite number > 0")
    return float(value)


def check_optional_positive_int(name, value):
    """``value`` must be None or an integer >= 1."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name}={value!r} is not valid; it must be None or an integer >= 1")
    return int(value)


def check_bool(name, value):
    """``value`` must be a bool."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name}={value!r} is not valid; it must be True or False")
    return bool(value)


def as_name_list(name, value):
    """A string or a list of strings, as a list."""
    values = [value] if isinstance(value, str) else list(value)
    if not values or not all(isinstance(v, str) for v in values):
        raise TypeError(f"{name}={value!r} is not valid; give a name or a list of names")
    return values


def is_lazy(value):
    """Whether ``value`` is a dask-backed array, computed only when read."""
    graph = getattr(value, "__dask_graph__", None)
    return graph is not None and graph() is not None


def native_array(value):
    """``value`` read into an aligned, C-contiguous array of native byte order.

    Compiled PyTensor functions refuse the big-endian or unaligned buffers a
    file or the network may hand back.
    """
    array = np.asarray(value)
    return np.require(
        array, dtype=array.dtype.newbyteorder("="), requirements=["ALIGNED", "C_CONTIGUOUS"]
    )


def check_finite_array(name, value):
    """A numeric array with only finite values.

    A dask-backed array stays lazy: its dtype is checked now, its values when
    each block is computed (reading them all here would defeat laziness).
    """
    array = value if is_lazy(value) else np.asarray(value)
    if array.dtype.kind not in "biuf":
        raise ValueError(f"{name} has dtype {array.dtype}; it must be numeric")
    if is_lazy(array):
        return array
    if array.dtype.kind == "f" and not np.all(np.isfinite(array)):
        bad = int(np.size(array) - np.count_nonzero(np.isfinite(array)))
        raise ValueError(f"{name} has {bad} non-finite value(s) (nan or inf); all must be finite")
    return array

"""Argument checks shared by the public functions.

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


def check_finite_array(name, value):
    """A float array with only finite values."""
    array = np.asarray(value)
    if array.dtype.kind not in "biuf":
        raise ValueError(f"{name} has dtype {array.dtype}; it must be numeric")
    if array.dtype.kind == "f" and not np.all(np.isfinite(array)):
        bad = int(np.size(array) - np.count_nonzero(np.isfinite(array)))
        raise ValueError(f"{name} has {bad} non-finite value(s) (nan or inf); all must be finite")
    return array

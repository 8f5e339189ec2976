"""Argument checks shared by the public functions, and array kinds they meet.

Every message names the argument, the value received and what is valid.
"""

import logging
import numbers
import os
import warnings
import weakref

import numpy as np

#: pm_sens's folder: warnings name the first line outside it
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def warn(message):
    """A UserWarning attributed to the user's line that called into pm_sens."""
    warnings.warn(message, UserWarning, skip_file_prefixes=(_PACKAGE,))


def inform(message):
    """An info message on the ``pm_sens`` logger (shown by default, as PyMC's are)."""
    logging.getLogger("pm_sens").info(message)


#: the messages said about each predictive (`inform_once`)
_SAID = weakref.WeakKeyDictionary()


def inform_once(about, message):
    """`inform`, the first time ``message`` is said about ``about`` in the process.

    For what pm_sens finds in a model (a predictive, reused across calls): a
    notebook's every call would repeat it.
    """
    said = _SAID.setdefault(about, set())
    if message not in said:
        said.add(message)
        inform(message)


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
    """A string or a non-empty list of distinct strings, as a list."""
    if isinstance(value, str):
        return [value]
    try:
        values = list(value)
    except TypeError:
        values = None
    if not values or not all(isinstance(v, str) for v in values):
        raise TypeError(f"{name}={value!r} is not valid; give a name or a list of names")
    repeated = sorted({v for v in values if values.count(v) > 1})
    if repeated:
        raise ValueError(f"{name}={value!r} names {repeated} more than once; give each once")
    return values


def check_positive_int(name, value):
    """``value`` must be an integer >= 1."""
    if check_optional_positive_int(name, value) is None:
        raise ValueError(f"{name}=None is not valid; it must be an integer >= 1")
    return int(value)


def check_probability(name, value):
    """``value`` must be a number strictly between 0 and 1 (an interval's probability)."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or not 0 < value < 1:
        raise ValueError(f"{name}={value!r} is not valid; it must be a number in (0, 1)")
    return float(value)


def check_seed(name, value):
    """``value`` must be None, an integer >= 0 or a numpy.random.Generator."""
    if value is None or isinstance(value, np.random.Generator):
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(
            f"{name}={value!r} is not valid; give None, an integer >= 0 or a "
            "numpy.random.Generator"
        )
    return int(value)


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
    # a native dtype kept as it is: an equal copy of it would make np.require
    # return a view, which PyTensor's NumPy ops copy their results from
    dtype = array.dtype if array.dtype.isnative else array.dtype.newbyteorder("=")
    return np.require(array, dtype=dtype, requirements=["ALIGNED", "C_CONTIGUOUS"])


def check_finite_array(name, value, bounds=False):
    """A numeric array with only finite values (``bounds``: ±inf allowed, no nan).

    ``bounds`` is for held per-row values such as censoring bounds, where an
    infinite bound means "not censored". A dask-backed array stays lazy: its
    dtype is checked now, its values when each block is computed (reading them
    all here would defeat laziness).
    """
    array = value if is_lazy(value) else np.asarray(value)
    if array.dtype.kind not in "biuf":
        raise ValueError(f"{name} has dtype {array.dtype}; it must be numeric")
    if is_lazy(array) or array.dtype.kind != "f":
        return array
    valid = ~np.isnan(array) if bounds else np.isfinite(array)
    if not np.all(valid):
        bad = int(np.size(array) - np.count_nonzero(valid))
        what = "nan" if bounds else "non-finite value(s) (nan or inf)"
        must = "no nan (±inf bounds are allowed)" if bounds else "all must be finite"
        raise ValueError(f"{name} has {bad} {what}; {must}")
    return array


def group_dataset(idata, group):
    """``idata[group]`` as a Dataset; a missing group names what is there."""
    import xarray as xr

    if not isinstance(idata, xr.DataTree):
        raise TypeError(
            f"idata is a {type(idata).__name__}, not an xarray.DataTree; pass the DataTree "
            f"that the pm_sens function returned (it holds the group {group!r})"
        )
    if group not in idata.children:
        groups = sorted(idata.children)
        raise ValueError(
            f"group={group!r} is not in idata (groups: {groups}); run the pm_sens function first"
        )
    return idata[group].to_dataset()


def check_names_in(name, value, valid):
    """``value`` (a name or list of names) must all be among ``valid``; as a list."""
    names = as_name_list(name, value)
    unknown = [v for v in names if v not in valid]
    if unknown:
        raise ValueError(f"{name}={value!r}: {unknown} not valid; valid: {list(valid)}")
    return names


def check_percentiles(percentiles):
    """Two numbers 0 <= low < high <= 1, as a tuple."""
    valid = (
        isinstance(percentiles, tuple | list)
        and len(percentiles) == 2
        and all(isinstance(p, numbers.Real) and not isinstance(p, bool) for p in percentiles)
        and 0 <= percentiles[0] < percentiles[1] <= 1
    )
    if not valid:
        raise ValueError(
            f"percentiles={percentiles!r} is not valid; give two numbers (low, high) with "
            "0 <= low < high <= 1"
        )
    return tuple(float(p) for p in percentiles)

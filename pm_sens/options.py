"""Settings that hold for every call: `set_options` and `get_options`."""

import numbers
import os

#: the settings each call reads when its own argument is None
_OPTIONS = {"cores": None}


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


class _Unchanged:
    """What an option not given to `set_options` is: left as it was."""

    def __repr__(self):
        return "<unchanged>"


_UNCHANGED = _Unchanged()


class set_options:  # noqa: N801 (used as a function, like xarray.set_options)
    """Set pm_sens's options for every later call, or inside a ``with`` block.

    Each public function that computes takes the same option as an argument
    (``cores=``), which, when given, overrides this setting for that call.

    Parameters
    ----------
    cores : int or None, optional
        The CPU cores a call may use: chunks of draws are evaluated in this many
        threads at once where the work is large enough to gain from it. The
        results are the same for any number of cores (the chunks and the order
        their sums are made in do not change). None (the default): every core
        this process may run on. Left unchanged where not given.

    Examples
    --------
    Inside a block only (``pm_sens.set_options(cores=4)`` alone sets it for
    the rest of the session):

    >>> import pm_sens
    >>> with pm_sens.set_options(cores=1):
    ...     pm_sens.get_options()["cores"]
    1
    """

    def __init__(self, *, cores=_UNCHANGED):
        given = {"cores": cores}
        checked = {
            name: check_cores(name, value)
            for name, value in given.items()
            if value is not _UNCHANGED
        }
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
        One option's name (``"cores"``); None for all of them.

    Returns
    -------
    dict or int
        ``{"cores": int}``, or the value of ``name``: the cores set
        (`set_options`), or every core this process may run on where none was set.

    Examples
    --------
    >>> import pm_sens
    >>> with pm_sens.set_options(cores=3):
    ...     pm_sens.get_options()
    {'cores': 3}
    >>> with pm_sens.set_options(cores=1):
    ...     pm_sens.get_options("cores")
    1
    """
    cores = _OPTIONS["cores"]
    options = {"cores": available_cores() if cores is None else cores}
    if name is None:
        return options
    if name not in options:
        raise ValueError(f"name={name!r} is not valid; the options are {sorted(options)}")
    return options[name]

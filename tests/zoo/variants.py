"""Each zoo model again with its containers' data in the dtypes notebooks use.

Notebooks hand ``pm.Data`` float32 arrays (``floatX`` habits, ``df.x.astype("float32")``)
and whole numbers as integers (``list(range(n))``, counts of rooms). A variant
builds the model again with the same data in another dtype, on the same
posterior draws, and `sensitivity` (moment mode) must give the float64 model's
results, or our clear error:

- ``float32``: every float container as float32 (values equal to float32
  rounding, so results to 1e-5 relative);
- ``int``: every float container whose values are whole numbers, other than a
  0/1 column (which as integers is a flag, compared at its levels), as int64.
"""

from contextlib import contextmanager

import numpy as np
import pymc as pm

from tests.zoo._registry import BUILDERS, ZooCase

#: the variants, each a cast of a container's float values (None: not cast)
CASTS = {
    "float32": lambda v: v.astype("float32"),
    "int": lambda v: v.astype("int64") if _whole_not_flag(v) else None,
}


def _whole_not_flag(values):
    return bool(np.all(values == np.round(values))) and not np.isin(values, (0, 1)).all()


@contextmanager
def _containers_cast(cast, changed):
    """``pm.Data`` casting float values with ``cast`` while a builder runs."""
    original = pm.Data

    def data(name, value, *args, **kwargs):
        array = np.asarray(value)
        if array.dtype.kind == "f" and array.ndim:
            new = cast(array)
            if new is not None and new.dtype != array.dtype:
                changed.append(name)
                value = new
        return original(name, value, *args, **kwargs)

    pm.Data = data
    try:
        yield
    finally:
        pm.Data = original


def build_variant(name, variant, case):
    """The zoo model ``name`` built with ``variant``'s dtypes, on ``case``'s draws.

    Returns the `ZooCase` and the containers cast (empty: the variant does not
    apply).
    """
    import zlib

    build, expect = BUILDERS[name]
    changed = []
    with _containers_cast(CASTS[variant], changed):
        model, _, *kwargs = build(np.random.default_rng(zlib.crc32(name.encode())))
    kwargs = kwargs[0] if kwargs else {}
    return ZooCase(model, case.idata, case.source, **expect, kwargs=kwargs), changed

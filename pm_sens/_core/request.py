"""What every public function is asked, checked once: the `Request`."""

from dataclasses import dataclass, fields

from pm_sens._core.arguments import (
    check_bool,
    check_optional_positive_int,
    check_positive,
    check_seed,
)
from pm_sens.options import check_backend, check_cores, check_dtype, check_precision, get_options

#: Working memory of the chunks of draws in memory at once, in bytes, unless
#: ``memory_limit`` says otherwise.
DEFAULT_MEMORY_LIMIT = 1e9


@dataclass(frozen=True)
class Request:
    """The arguments every public function shares, checked when made.

    Made once by the public function from its arguments and passed down
    (`pm_sens._core.context.make_context`); the cheap checks run here, before
    any model is read.

    Attributes
    ----------
    idata : xarray.DataTree
        The posterior (and, for the log density, the observed data).
    model : pymc.Model, bambi.Model or pymc-marketing MMM
        The fitted model.
    var_name : str or None
        The observed variable; None for the model's only one.
    inputs, points, predictive
        As the public functions take them; None for their defaults.
    num_draws : int or None
        Use about this many posterior draws, chosen with ``random_seed``.
    random_seed : int, numpy Generator or None
    memory_limit : float
        Working memory for the chunks of draws in memory at once, in bytes.
    cores : int or None
        The CPU cores the call may use; None for `pm_sens.set_options`'s.
    backend : str or None
        Where the compiled graphs run (`pm_sens.options.BACKENDS`); None for
        `pm_sens.set_options`'s.
    dtype : str or None
        What the compiled graphs compute in (`pm_sens.options.DTYPES`); None
        for `pm_sens.set_options`'s.
    progressbar, extend_inferencedata : bool
    """

    idata: object
    model: object
    var_name: str | None = None
    inputs: object = None
    points: object = None
    predictive: object = None
    num_draws: int | None = None
    random_seed: object = None
    memory_limit: float = DEFAULT_MEMORY_LIMIT
    cores: int | None = None
    backend: str | None = None
    dtype: str | None = None
    progressbar: bool = True
    extend_inferencedata: bool = True

    @classmethod
    def of(cls, arguments):
        """The request of a public function's ``arguments`` (its ``locals()``).

        Reads only the names of this record's fields, so every public function
        passes its shared arguments the same way, and none is forgotten.
        """
        return cls(**{field.name: arguments[field.name] for field in fields(cls)})

    def __post_init__(self):
        checked = {
            "progressbar": check_bool("progressbar", self.progressbar),
            "extend_inferencedata": check_bool("extend_inferencedata", self.extend_inferencedata),
            "num_draws": check_optional_positive_int("num_draws", self.num_draws),
            "random_seed": check_seed("random_seed", self.random_seed),
            "memory_limit": check_positive("memory_limit", self.memory_limit),
            "cores": check_cores("cores", self.cores),
            "backend": check_backend("backend", self.backend),
            "dtype": check_dtype("dtype", self.dtype),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)  # frozen: set once, here
        check_precision(self.backend or get_options("backend"), self.dtype or get_options("dtype"))

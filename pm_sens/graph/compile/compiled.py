"""A compiled predictive: the chunk function and the order of what it takes and returns."""

from dataclasses import dataclass, field

import numpy as np

from pm_sens.graph.compile.chunk import ChunkOutputs

#: the observed y's key among a compiled predictive's ``data_variables``, where its
#: graph takes them (a row's y after the model's data: its log density summed over
#: draws on a device, `pm_sens.graph.engine.compile_predictive`'s ``draw_sums``)
OBSERVED_Y = "observed y"


@dataclass
class CompiledPredictive:
    """A compiled predictive and the order of the arrays it takes and returns.

    Calling it with ``(data values, draw values)`` returns a
    `pm_sens.graph.compile.chunk.ChunkOutputs`: ``jac`` and ``hess`` up to ``order``,
    draw-mode ones for the components listed in ``varying`` (separate arrays:
    stacking them would copy the largest arrays of the call; per-draw ``phi``
    is a view of an (M, S, N) array, each component contiguous, as NumPy reads
    it fastest after, where strided it was 3–4x slower). Moment-mode
    derivatives put the parameter axis first, so each parameter's slice is
    contiguous for the quadratic forms of `pm_sens.measures.rsens`.
    """

    #: a `pm_sens.graph.compile.functions.GraphFunction` (one call at a time)
    function: object
    data_variables: list
    free_rvs: list
    inputs: list
    mode: str
    order: int
    varying: list
    fixed_names: list
    #: the keyword arguments of `compile_predictive` that built it
    settings: dict
    #: shapes of the fixed (non-pm.Data) arrays the parameters hold, for messages
    fixed_array_shapes: list = field(default_factory=list)

    @property
    def statistic_names(self):
        """Names of the per-draw statistics returned alongside ``phi``."""
        return self.settings.get("statistics", ())

    @property
    def sum_names(self):
        """Names of the sums over the chunk's draws returned after the statistics."""
        return self.settings.get("draw_sums", ())

    def __call__(self, data_values, draw_values):
        """Evaluate on data arrays (in ``data_variables`` order) and draw arrays."""
        rest = list(self.run(*data_values, *draw_values))
        result = ChunkOutputs()
        if self.settings.get("parameters", True):
            phi = rest.pop(0)
            result.phi = np.moveaxis(phi, 0, -1) if self.mode == "draw" else phi
        width = 1 if self.mode == "moment" else len(self.varying)
        for name in ["jac", "hess"][: self.order]:
            parts, rest = rest[:width], rest[width:]
            setattr(result, name, parts[0] if self.mode == "moment" else parts)
        for names, field_name in ((self.statistic_names, "statistics"), (self.sum_names, "sums")):
            values, rest = rest[: len(names)], rest[len(names) :]
            setattr(result, field_name, dict(zip(names, values, strict=True)))
        result.fixed = dict(zip(self.fixed_names, rest, strict=True))
        if self.settings.get("colors", 1) > 1:
            result.read_rows(self.settings["dependence"].rows_read(result.phi.shape[-2]))
        return result

    def largest_array(self, data_values, draw_values):
        """Elements of the largest array of 3+ dims the function computes on these arrays."""
        return self.function.largest_array(*data_values, *draw_values)  # shapes only

    def run(self, *arrays):
        """The compiled function's outputs on ``arrays``, with a clear shape error."""
        # JAX copies any layout to its device (once: `jax_functions.DeviceArrays`)
        arguments = arrays if self.function.backend == "jax" else _arguments(arrays)
        try:
            return self.function(*arguments)
        except ValueError as error:
            if "shape" not in str(error) or not self.fixed_array_shapes:
                raise
            raise ValueError(
                "the likelihood's parameters cannot be evaluated at these points: they "
                f"hold fixed arrays of shapes {self.fixed_array_shapes} (NumPy values in "
                "the model, not pm.Data). An array with one value per observation cannot "
                "follow points of another number: put it in a pm.Data container and give "
                f"its values in points= ({error})"
            ) from None


@dataclass
class WhitenedNorm(CompiledPredictive):
    """Draw-mode R-sens at α = 1 computed inside the graph.

    Calling it returns ``norm`` (S, N, D), or with ``point_means`` its mean over
    the points (S, D): ``sqrt(Σ_m (s_m ∂φ_m)²)`` with ``s_m = sqrt(I_mm)``,
    the derivatives never leaving the graph. Where the family writes its
    scales for any array namespace (``scales_in_graph``,
    `pm_sens.families.Family.graph_scales`) the graph computes them too, and
    the call returns ``norm`` alone: one pass over the data per chunk (the
    graph also sums each parameter over the points, so that a parameter
    undefined where its derivative is finite is not missed). Else they are
    `pm_sens.families.Family.whitening` of the parameters computed first by
    the forward function (``forward``, order 0), in NumPy, and the call
    returns what ``forward`` returns beside ``norm`` and the whitening
    (`ChunkOutputs.whitening`); ``norm`` is None where the family's
    information is not diagonal on the varying parameters. With more than
    one varying parameter the squares may over- or underflow, and a
    parameter may be nan: `norm_is_exact` says whether the chunk's values
    can be used as they are.
    """

    forward: CompiledPredictive | None = None
    family: object = None
    n_features: int = 0
    #: whether the graph takes an array to compute ``norm`` in (compiled graphs; it is
    #: returned where one loop computes the norm, a new array where columns are joined)
    writes_in_place: bool = False
    #: whether ``norm`` is each draw's mean over the points (S, D)
    point_means: bool = False
    #: whether the graph computes the whitening scales (no forward pass first)
    scales_in_graph: bool = False

    def __call__(self, data_values, draw_values, out=None):
        """``norm`` on data and draw arrays (see the class docstring for what else).

        ``out`` (S, N, D), C-contiguous: the array ``norm`` is computed in,
        needed where `writes_in_place`; else ``norm`` is a new array.
        """
        arguments = [*data_values, *draw_values]
        if self.scales_in_graph:
            result = ChunkOutputs()
        else:
            result = self.forward(data_values, draw_values)
            phi, fixed = result.per_draw_parameters(len(draw_values[0]))
            result.whitening = scales, corr = self.family.whitening(phi, self.varying, **fixed)
            if corr is not None:
                return result
            arguments.append(scales)
        if self.writes_in_place:
            arguments += [out, False]
        result.norm, *parameter_sums = self.run(*arguments)
        # a square that underflows costs its value at most 2e-162: means over the
        # points above `_SMALLEST_SAFE_NORM` keep every digit; an inf or nan
        # value makes its mean one
        norm_range = result.norm.min(initial=np.inf), result.norm.max(initial=0.0)
        if parameter_sums and np.isnan(parameter_sums[0]).any():
            norm_range = np.nan, np.nan  # a parameter undefined: the exact route names it
        result.norm_range = tuple(float(x) for x in norm_range)
        return result

    @property
    def rows_alone(self):
        """Whether the graph's per-draw arrays are of the rows alone, as a forward graph's.

        Point means with the scales in the graph: the derivatives are
        averaged inside it, and the rewrites leave no array per point and
        feature where they can (`largest_array` counts any left).
        """
        return self.point_means and self.scales_in_graph

    def largest_array(self, data_values, draw_values):
        """The largest array of the graph (`CompiledPredictive.largest_array`).

        Where the graph takes more arguments than the data and draws (the
        scales, an array to write in), the forward function's: the norm's
        graph differentiates it, with temporaries of the same sizes.
        """
        if self.scales_in_graph and not self.writes_in_place:
            return super().largest_array(data_values, draw_values)
        return self.forward.largest_array(data_values, draw_values)

    def norm_is_exact(self, norm_range):
        """Whether no square behind the norm over- or underflowed (nor any value is nan).

        ``norm_range``: the chunk's smallest and largest value (`ChunkOutputs.norm_range`).
        """
        smallest, largest = norm_range
        if len(self.varying) == 1:  # |s ∂φ|: no squares
            return bool(largest < np.inf)
        return bool(smallest >= _SMALLEST_SAFE_NORM and largest < np.inf)


def _arguments(arrays):
    """``arrays`` as the compiled functions take them: one array type per argument.

    Numba compiles the graph again for each new combination of memory layout and
    write flag.
    """
    return [np.require(a, requirements=("A", "C", "W")) for a in arrays]


#: below this, a sum of squares under the root may have lost digits to underflow
_SMALLEST_SAFE_NORM = 1e-140


def data_for_chunk(compiled, values):
    """Data arrays in the compiled function's order."""
    return [values[var] for var in compiled.data_variables]


def evaluate_by_rows(compiled, data_values, draw_values, block_rows, per_point):
    """``compiled`` on blocks of ``block_rows`` rows, one block at a time, outputs joined.

    Two uses: a model whose rows depend on other rows' inputs cannot evaluate
    copies of the points stacked as one longer series (the last rows of one copy
    would move the first rows of the next), so each copy is a block; and a
    local model of which one draw's temporaries over all rows would exceed the
    memory limit takes fewer rows at a time. ``per_point`` flags the data
    arrays with a row per point.
    """
    n_rows = next(len(v) for v, flag in zip(data_values, per_point, strict=True) if flag)
    if n_rows <= block_rows:
        return compiled(data_values, draw_values)
    parts = []
    for start in range(0, n_rows, block_rows):
        block = [
            v[start : start + block_rows] if flag else v
            for v, flag in zip(data_values, per_point, strict=True)
        ]
        parts.append(compiled(block, draw_values))
    return ChunkOutputs.joined(parts)

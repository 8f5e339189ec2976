"""Quadrature rules of a likelihood's continuous parts, and its compiled helpers.

Point masses (censoring bounds, a hurdle's zero) are single nodes; each
continuous part is integrated by Gauss–Legendre quadrature in ``θ`` after
``y = c + s tan θ`` over the part's bounds, in two halves split at the centre
``c``: at the median with a multiple of the interquartile half-width as both
halves' scale (``pm.icdf``), or, without an inverse CDF, at the mode found by
Newton's method with a scale per half, a multiple of the distance at which
the log density has fallen by 1/2 on that side (one standard deviation for a
Normal). A skewed law's long side (an ExGaussian's exponential tail) is thus
spread over its half's nodes as its short side is, where the curvature at the
mode measures the short side alone.
"""

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pymc.distributions.censored import CensoredRV
from pymc.distributions.distribution import DiracDeltaRV
from pymc.distributions.mixture import _BaseMixtureRV
from pymc.distributions.moments import mean as pm_mean
from pymc.distributions.transforms import _default_transform
from pymc.distributions.truncated import TruncatedRV
from pymc.logprob.transforms import (
    CircularTransform,
    IntervalTransform,
    LogOddsTransform,
    LogTransform,
)
from pytensor.graph.basic import Constant
from pytensor.graph.traversal import graph_inputs
from pytensor.tensor.random.type import RandomGeneratorType

from pm_sens.graph.compile.functions import GraphFunction
from pm_sens.graph.model.queries import censored_parts, replace_rebuilding

# support values (or nodes) × rows per compiled call: small enough that the
# graph's temporaries stay in the CPU's cache
_MAX_CELLS = 65_536
_NEWTON_STEPS = 60
#: each half's scale is this multiple of the located one (the interquartile
#: half-width, or the distance at which log p falls by 1/2): a Normal's moments
#: converge fastest with s about 3–4 sd in θ (its tails fill the nodes near
#: ±π/2 instead of a few), and every law measured did better at 4 than at 1
SCALE_MULTIPLE = 4.0


def support_bounds(out):
    """Bounds of a continuous distribution's support, from its default value transform."""
    transform = _default_transform(out.owner.op, out)
    if isinstance(transform, IntervalTransform):
        low, high = transform.args_fn(*out.owner.inputs)
        return (-np.inf if low is None else low), (np.inf if high is None else high)
    if isinstance(transform, LogTransform):
        return 0.0, np.inf
    if isinstance(transform, LogOddsTransform):
        return 0.0, 1.0
    if isinstance(transform, CircularTransform):
        return -np.pi, np.pi
    return -np.inf, np.inf


def support_name(rv):
    """The moment-matching support of a continuous likelihood (docs: the likelihoods page)."""
    try:
        bounds = support_bounds(rv)
    except NotImplementedError:
        bounds = (-np.inf, np.inf)
    return {(0.0, np.inf): "positive", (0.0, 1.0): "unit"}.get(bounds, "real")


def _truncated_base(node):
    op = node.op
    return op.base_rv_op.make_node(*node.inputs[:-2]).default_output()


def plain_mixture(out):
    """Whether ``out`` is a mixture of continuous laws, none with a point mass or bounds.

    Such a mixture's nodes are its components' own (`Parts`), so expectations'
    derivatives can be taken component by component.
    """
    if not isinstance(out.owner.op, _BaseMixtureRV):
        return False
    _, *components = out.owner.op.dist_params(out.owner)
    nested = (DiracDeltaRV, CensoredRV, TruncatedRV, _BaseMixtureRV)
    return not any(isinstance(c.owner.op, nested) for c in components)


class Parts:
    """Quadrature parts of a continuous distribution, built symbolically.

    Each part is ``(y, w)`` with shape (Q, *batch): nodes and weights whose
    weighted sum is the part's share of ``E[f(y)]``. Each continuous part
    needs a centre and the scales of its halves found per row (`locate`):
    ``located`` lists their (centre, left scale, right scale) placeholders with
    the law, its bounds and its integration space.
    """

    def __init__(self, n_nodes):
        t, w = np.polynomial.legendre.leggauss(n_nodes)
        self.t, self.w = (t + 1) / 2, w / 2
        self.located = []
        #: per part of the last mixture read, the component of each node (P_part,)
        self.components = []

    def of(self, out, lower, upper):
        """Nodes and weights (P, ...) of ``out`` between ``lower`` and ``upper``."""
        op = out.owner.op
        if isinstance(op, DiracDeltaRV):
            value = pt.broadcast_to(op.dist_params(out.owner)[0], out.shape)
            return [(value[None], pt.ones_like(value, dtype="float64")[None])]
        if isinstance(op, _BaseMixtureRV):
            return self._mixture(out, lower, upper)
        if isinstance(op, CensoredRV):
            base, low, high = censored_parts(out)
            low, high = pt.maximum(low, lower), pt.minimum(high, upper)
            low_mass = pt.exp(pm.logcdf(base, low))
            high_mass = -pt.expm1(pm.logcdf(base, high))
            # a bound at ±inf holds no mass; keep its node finite
            masses = [
                (pt.broadcast_to(pt.switch(pt.isfinite(b), b, 0.0), out.shape)[None], m[None])
                for b, m in ((low, low_mass), (high, high_mass))
            ]
            return masses + self.of(base, low, high)
        if isinstance(op, TruncatedRV):
            low, high = out.owner.inputs[-2:]
            base = _truncated_base(out.owner)
            mass = pt.exp(pm.logcdf(base, high)) - pt.exp(pm.logcdf(base, low))
            return [(y, w / mass) for y, w in self.of(base, low, high)]
        return [self._continuous(out, lower, upper)]

    def _mixture(self, out, lower, upper):
        weights, *components = out.owner.op.dist_params(out.owner)
        batch = out.shape
        n_components = weights.shape[-1]
        weights = pt.broadcast_to(weights, (*batch, n_components))
        parts, owners = [], []
        if len(components) == 1:  # components stacked on the last axis
            for y, w in self.of(components[0], lower, upper):
                # (Q, *batch, K) -> (Q·K, *batch)
                y, w = (
                    pt.moveaxis(a, -1, 1).reshape((-1, *[batch[i] for i in range(out.ndim)]))
                    for a in (y, w * weights)
                )
                parts.append((y, w))
                owners.append(pt.tile(pt.arange(n_components), y.shape[0] // n_components))
        else:
            for k, component in enumerate(components):
                for y, w in self.of(component, lower, upper):
                    parts.append((y, w * weights[..., k]))
                    owners.append(pt.full((y.shape[0],), k, dtype="int64"))
        self.components = owners
        return parts

    def _continuous(self, out, lower, upper):
        low_support, high_support = support_bounds(out)
        lower = pt.maximum(lower, low_support)
        upper = pt.minimum(upper, high_support)
        space = Space.of(low_support, high_support)
        # the centre and the halves' scales per row (in the integration space z)
        # come from `locate` (NumPy), as inputs
        centre, located_left, located_right = (
            pt.tensor(name, dtype="float64", shape=(None,) * out.ndim)
            for name in ("centre", "left_scale", "right_scale")
        )
        self.located.append((out, (centre, located_left, located_right), lower, upper, space))
        left, right = SCALE_MULTIPLE * located_left, SCALE_MULTIPLE * located_right
        expand = (slice(None),) + (None,) * out.ndim
        z_low, z_high = space.to_z(lower), space.to_z(upper)
        # two halves split at the centre, so a kink at the mode does not slow
        # convergence; θ of the part's bounds in each half's own scale
        halves = [
            (
                pt.arctan((z_low - centre) / left),
                pt.minimum(0.0, pt.arctan((z_high - centre) / left)),
                left,
            ),
            (
                pt.maximum(0.0, pt.arctan((z_low - centre) / right)),
                pt.arctan((z_high - centre) / right),
                right,
            ),
        ]
        nodes, weights = [], []
        for start, stop, scale in halves:
            width = pt.maximum(stop - start, 0.0)
            theta = start + width * pt.constant(self.t)[expand]
            tangent = pt.tan(theta)
            z = centre + scale * tangent
            y = space.to_y(z)
            log_weight = pm.logp(out, y) + space.log_jacobian(z)
            # dz/dθ = s/cos²θ = s(1 + tan²θ): no cosine to compute
            w = pt.constant(self.w)[expand] * width * scale * (1 + tangent**2)
            w = w * pt.exp(log_weight)
            nodes.append(y)
            weights.append(pt.switch(pt.isfinite(w), w, 0.0))
        return pt.concatenate(nodes), pt.concatenate(weights)


class Space:
    """Where a continuous part is integrated: z = y, log y or logit y (by its support)."""

    def __init__(self, kind):
        self.kind = kind

    @classmethod
    def of(cls, low, high):
        """The space of a support from ``low`` to ``high``: log for (0, ∞), logit for (0, 1)."""
        if isinstance(low, float) and low == 0.0 and isinstance(high, float):
            return cls("log" if high == np.inf else "logit" if high == 1.0 else "identity")
        return cls("identity")

    def to_z(self, y):
        """The integration variable at y."""
        if self.kind == "log":
            return pt.log(y)
        if self.kind == "logit":
            return pt.log(y) - pt.log1p(-y)
        return y

    def to_y(self, z):
        """The value y at the integration variable z."""
        if self.kind == "log":
            return pt.exp(z)
        if self.kind == "logit":
            return pt.sigmoid(z)
        return z

    def log_jacobian(self, z):
        """Log |dy/dz|."""
        if self.kind == "log":
            return z
        if self.kind == "logit":
            return -pt.softplus(-z) - pt.softplus(z)
        return pt.zeros_like(z)


#: a call of a likelihood's function with at most this many values per argument
#: (nodes × rows) runs op by op in NumPy: Numba's compile of a likelihood's
#: derivatives takes seconds to tens of seconds on an empty cache, NumPy runs
#: such a call in tens of milliseconds (`benchmarks/README.md`)
SMALL_CALL = 100_000


def lazy_function(inputs, outputs, replacements, backend="numba"):
    """A function of ``outputs`` after ``replacements``; any other graph input is an error.

    A lazy `pm_sens.graph.compile.functions.GraphFunction` on ``backend`` with
    pm_sens's rewrites (`pm_sens.graph.compile.rewrites.compile_mode`): compiled
    at its first call (a call may need only some of the functions). Functions
    run once per row (placing its nodes) run op by op in NumPy (``"python"``):
    their work is small, and their graphs take one input per parameter, which
    Numba compiles slowly (15–35 s each for a 20-component mixture's 60 on an
    empty cache; `benchmarks/README.md`). On ``"numba"``, calls of at most
    `SMALL_CALL` values per argument run in NumPy too.
    """
    outputs = replace_rebuilding(list(outputs), replacements)
    stray = [
        v
        for v in graph_inputs(outputs)
        if not isinstance(v, Constant)
        and v not in inputs
        and not isinstance(v.type, RandomGeneratorType)
    ]
    if stray:
        raise ValueError(f"the likelihood's log density still depends on {stray}")
    return GraphFunction(inputs, outputs, backend, lazy=True, small=SMALL_CALL)


def locate_functions(out, phis, replacements, lower, upper, space):
    """Compiled pieces that place a continuous part's nodes (see `locate`)."""
    try:
        quartiles = [space.to_z(pm.icdf(out, pt.full(out.shape, q))) for q in (0.25, 0.5, 0.75)]
    except NotImplementedError:
        quartile_fn = None
    else:
        quartile_fn = lazy_function(phis, quartiles, replacements, "python")
    z = pt.tensor("z", dtype="float64", shape=(None,) * out.ndim)
    log_density = pm.logp(out, space.to_y(z)) + space.log_jacobian(z)
    gradient = pytensor.grad(log_density.sum(), z)
    curvature = pytensor.grad(gradient.sum(), z)
    bounds = [space.to_z(lower), space.to_z(upper)]
    gradient_fn = lazy_function(
        [z, *phis], [gradient, curvature, *bounds, log_density], replacements
    )
    try:
        start = space.to_z(pm_mean(out))
    except NotImplementedError:
        start = pt.zeros(out.shape)
    start_fn = lazy_function(phis, [pt.broadcast_to(start, out.shape)], replacements, "python")
    return quartile_fn, gradient_fn, start_fn


def locate(functions, columns):
    """Centre and the scales of its two halves of a continuous part per row.

    In the part's integration space: the median and the interquartile
    half-width for both halves where PyMC has an inverse CDF that gives finite
    values (a scale per half from the quartiles is no more accurate there:
    `benchmarks/README.md`); elsewhere the mode (`_mode`) and, on
    each side, the distance at which the log density has fallen by 1/2
    (`_fall_distance`).
    """
    quartile_fn, gradient_fn, start_fn = functions
    if quartile_fn is not None:
        low, mid, high = quartile_fn(*columns)
        half_width = (high - low) / 2
        good = np.isfinite(mid) & np.isfinite(half_width) & (half_width > 0)
        if np.all(good):
            return [mid, half_width, half_width]
    z, scale = _mode(gradient_fn, start_fn, columns)
    sides = [_fall_distance(gradient_fn, columns, z, scale, side) for side in (-1.0, 1.0)]
    if quartile_fn is not None:
        return [np.where(good, mid, z), *(np.where(good, half_width, s) for s in sides)]
    return [z, *sides]


def _mode(gradient_fn, start_fn, columns):
    """The mode of each row's log density and the curvature scale there.

    Newton's method on log p, kept within the part's bounds, bisecting where
    the density is not concave; the scale is ``1/sqrt(−∂² log p)`` at the
    mode (at a kink, as Laplace's, ``1/|∂ log p|``).
    """
    z = np.asarray(start_fn(*columns)[0], dtype=float)
    z = np.where(np.isfinite(z), z, 0.0)
    step = np.maximum(np.abs(z), 1.0)
    previous = np.zeros_like(z)
    for _ in range(_NEWTON_STEPS):
        g, h, low_bound, high_bound, _ = gradient_fn(z, *columns)
        concave = h < 0
        # where not concave (or at a kink), step uphill and halve the step when
        # the slope changes sign
        step = np.where(np.sign(g) * previous < 0, step / 2, step)
        move = np.where(concave, -g / np.where(concave, h, -1.0), np.sign(g) * step)
        move = np.clip(np.nan_to_num(move), -4 * step, 4 * step)
        previous = np.sign(g)
        new = z + move
        # stay inside the part's bounds: halve the way to a bound instead of crossing it
        z = np.where(
            new <= low_bound,
            (z + low_bound) / 2,
            np.where(new >= high_bound, (z + high_bound) / 2, new),
        )
        if np.all(np.abs(move) <= 1e-13 * (1 + np.abs(z))):
            break
    g, h, _, _, _ = gradient_fn(z, *columns)
    with np.errstate(divide="ignore"):
        scale = np.where(h < 0, 1 / np.sqrt(np.abs(h)), 1 / np.abs(g))
    return z, np.where(np.isfinite(scale) & (scale > 0), scale, 1.0)


def _fall_distance(gradient_fn, columns, mode, scale, side):
    """Per row, the distance from ``mode`` towards ``side`` (±1) at which log p falls by 1/2.

    Doubled or halved from ``scale`` until it brackets that fall, then
    bisected (in log distance) to within 5 %; the distance to the part's bound
    where the density does not fall that far before it.
    """
    _, _, low_bound, high_bound, top = gradient_fn(mode, *columns)
    room = np.where(side > 0, high_bound - mode, mode - low_bound)

    def fallen(distance):
        with np.errstate(invalid="ignore"):
            log_p = gradient_fn(mode + side * distance, *columns)[4]
            return ~(log_p > top - 0.5)  # nan and -inf: fallen

    far = np.minimum(scale, room)
    for _ in range(_NEWTON_STEPS):
        rising = ~fallen(far) & (far < room)
        if not rising.any():
            break
        far = np.where(rising, np.minimum(2 * far, room), far)
    for _ in range(_NEWTON_STEPS):
        falling = fallen(far / 2) & (far > 0) & np.isfinite(top)
        if not falling.any():
            break
        far = np.where(falling, far / 2, far)
    near = far / 2
    for _ in range(4):  # 2^(1/16) - 1: within 5 %
        middle = np.sqrt(near * far)
        down = fallen(middle)
        far, near = np.where(down, middle, far), np.where(down, near, middle)
    # a row whose density is not finite at its mode keeps the curvature scale
    return np.where(np.isfinite(far) & (far > 0) & np.isfinite(top), far, scale)


def blocks(n_rows, per_row):
    """Slices of rows, each holding at most ``_MAX_CELLS`` rows × ``per_row`` values."""
    step = max(1, _MAX_CELLS // max(per_row, 1))
    return [slice(s, s + step) for s in range(0, n_rows, step)]

"""Any univariate PyMC likelihood, through PyMC's own ``logp``.

For likelihoods without closed forms in `pm_sens.families` — mixtures,
zero-inflated and hurdle families, censored and truncated likelihoods, a
``pm.CustomDist`` with only a ``logp``, and the other univariate
distributions — the per-draw predictive at a point is described by its
*leaf parameters*: the parameters of the distribution node and of its
component distributions (a mixture's weights and each component's
parameters, a censored likelihood's base parameters, …), each flattened to
per-point scalars. One rebuilt copy of the observed variable, with the leaves
replaced by placeholders, gives ``log p(y | φ)`` and its score ``∂ log p/∂φ``.

Expectations over y use

- exact summation over the support 0, 1, 2, … for discrete likelihoods, grown
  until the remaining mass is below ``tail`` (1e-10);
- for continuous ones, a rule per part of the distribution: point masses
  (censoring bounds, a hurdle's zero) as single nodes, and each continuous
  part by Gauss–Legendre quadrature in ``θ`` after ``y = c + s tan θ`` over
  the part's bounds, centred at the part's median with its interquartile
  half-width as scale (``pm.icdf``) or, without an inverse CDF, at the mode
  found by Newton's method with the curvature there as scale. A mixture's
  components are integrated one by one, so separated modes are all resolved.

These give the Fisher information ``E[s sᵀ]``, the entropy, the KL
divergence and the moments of the likelihood as a `pm_sens.families.Family`.
"""

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pymc.distributions.shape_utils import change_dist_size
from pytensor.graph.replace import graph_replace

from pm_sens.families import Family
from pm_sens.families._base import log1p_gap
from pm_sens.families._renyi import log_rule_term
from pm_sens.graph.generic_leaves import (
    constant_parameters,
    dim_lengths,
    likelihood_leaves,
    with_parameters,
)
from pm_sens.graph.generic_rules import (
    Parts,
    blocks,
    lazy_function,
    locate,
    locate_functions,
    support_name,
    tiled,
)
from pm_sens.graph.model_queries import (
    data_value,
    replace_rebuilding,
)

#: Gauss–Legendre nodes per continuous part of a likelihood
N_NODES = 64
#: Discrete likelihoods: support summed until the remaining mass is below this
TAIL = 1e-10


class GenericLikelihood:
    """Log density, score and expectations of one observed variable as a `Family`.

    Parameters
    ----------
    rv : TensorVariable
        The observed variable (univariate, one value per point).
    model_rvs : set
        The model's random variables (never entered as components).
    n_nodes : int
        Gauss–Legendre nodes per continuous part.
    tail : float
        Mass left out of the support sums of discrete likelihoods.
    """

    def __init__(self, rv, model_rvs, *, n_nodes=N_NODES, tail=TAIL):
        self.name = type(rv.owner.op).__name__.removesuffix("RV").lstrip("_").lower()
        if getattr(rv.owner.op, "name", None):
            self.name = rv.owner.op.name
        self.discrete = rv.dtype.startswith("int")
        self.support = "count" if self.discrete else support_name(rv)
        self.route = (
            f"summation over the support (tail mass < {tail:g})"
            if self.discrete
            else f"Gauss-Legendre quadrature (2x{n_nodes} nodes per part) of PyMC's logp"
        )
        # a parameter expression used twice (mu = sigma = f(x)) is one parameter
        self.leaves = list({leaf.var: leaf for leaf in likelihood_leaves(rv, model_rvs)}.values())
        # folded to constants, so PyMC's logp sees e.g. an infinite truncation
        # bound as such (and drops its term) instead of computing with inf
        self._constants = {
            c: pt.constant(data_value(c), dtype=c.dtype)
            for c in constant_parameters(rv, model_rvs)
        }
        self._dim_lengths = dim_lengths(rv, {leaf.var for leaf in self.leaves})
        self.n_nodes, self.tail = n_nodes, tail
        self._rv = rv
        self._functions = self._symbolic = None
        self._per_row = None
        #: largest |Σ weights − 1| of the rules used so far (see `expectation`)
        self.mass_error = 0.0
        names = [leaf.name for leaf in self.leaves]
        # two components of the same family: normal_0, normal_1, normal_0#2, normal_1#2
        names = [
            n if not names[:i].count(n) else f"{n}#{names[:i].count(n) + 1}"
            for i, n in enumerate(names)
        ]
        self.labels = tuple(
            label
            for leaf, name in zip(self.leaves, names, strict=True)
            for label in leaf.labels(name)
        )

    def __getstate__(self):
        # compiled functions stay in the process that built them
        return {**self.__dict__, "_functions": None, "_symbolic": None}

    def per_point_parameters(self):
        """The leaf parameters as per-point scalar expressions of the model's graph."""
        return [c for leaf in self.leaves for c in leaf.per_point_components()]

    def _rebuilt(self, phis):
        """The observed variable with R rows whose leaves are the R-vectors ``phis``.

        Returns the variable, with each leaf replaced by a root placeholder of the
        leaf's own type (so PyMC's logprob rewrites cannot clone it away), and the
        replacements that turn those placeholders into the (R, …) arrays of ``phis``:
        to be applied to log densities and quadrature rules built on the variable.
        """
        rows = phis[0].shape[0]
        placeholders = {leaf.var: leaf.placeholder() for leaf in self.leaves}
        rv = graph_replace(self._rv, self._constants, strict=False)
        rv = graph_replace(with_parameters(rv, placeholders), self._dim_lengths, strict=False)
        # resized from its new parameters by PyMC's own recipe for the distribution
        resized = change_dist_size(rv, new_size=(rows,))
        replacements, start = {}, 0
        for leaf in self.leaves:
            replacements[placeholders[leaf.var]] = leaf.assemble(phis[start : start + leaf.size])
            start += leaf.size
        return resized, replacements

    def _compile(self):
        phis = [pt.vector(f"phi_{i}") for i in range(len(self.labels))]
        resized, replacements = self._rebuilt(phis)
        value = pt.vector("y", dtype=self._rv.dtype)
        (logp,) = replace_rebuilding([pm.logp(resized, value)], replacements)
        scores = pytensor.grad(logp.sum(), phis, disconnected_inputs="ignore")
        functions = {
            "logp": lazy_function([value, *phis], [logp], {}),
            "score": lazy_function([value, *phis], [logp, *scores], {}),
            "logcdf": None,
        }
        if self.discrete:
            try:
                logcdf = pm.logcdf(resized, value)
            except (NotImplementedError, TypeError):  # none, or scalar values only
                pass
            else:
                functions["logcdf"] = lazy_function([value, *phis], [logcdf], replacements)
        # second derivatives are compiled when first needed (moment mode, R-sens2)
        self._symbolic = ([value, *phis], [logp, *scores])
        if not self.discrete:
            parts = Parts(self.n_nodes)
            pieces = parts.of(resized, pt.constant(-np.inf), pt.constant(np.inf))
            nodes = pt.concatenate([y for y, _ in pieces])
            weights = pt.concatenate([w for _, w in pieces])
            extra = [v for _, c, s, _, _, _ in parts.located for v in (c, s)]
            functions["nodes"] = lazy_function([*phis, *extra], [nodes, weights], replacements)
            functions["locate"] = [
                locate_functions(out, phis, replacements, lower, upper, space)
                for out, _, _, lower, upper, space in parts.located
            ]
        self._functions = functions
        return functions

    @property
    def functions(self):
        """The compiled functions, built on first use."""
        if self._functions:
            return self._functions
        try:
            return self._compile()
        except TypeError as error:  # PyTensor's, when a parameter cannot take R rows
            shared = [
                leaf.name for leaf in self.leaves if leaf.var.type.ndim < 1 + len(leaf.trailing)
            ]
            raise ValueError(
                f"pm_sens cannot evaluate the {self.name!r} likelihood point by point yet: "
                f"its parameter(s) {shared} hold one value for all observations (a scalar "
                "or per-component parameter) inside a distribution that PyMC builds for fixed "
                "parameter shapes (a mixture's weights, a censored or zero-inflated "
                "component). This model form is not supported yet; "
                f"PyTensor said: {error}"
            ) from None

    def _second_function(self):
        """The compiled log density, score and second derivatives in the parameters."""
        if "second" not in self.functions:
            inputs, (logp, *scores) = self._symbolic
            phis = inputs[1:]
            second = [
                g
                for score in scores
                for g in pytensor.grad(score.sum(), phis, disconnected_inputs="ignore")
            ]
            self._functions["second"] = lazy_function(inputs, [logp, *scores, *second], {})
        return self._functions["second"]

    # ---- evaluation on arrays (NumPy in, NumPy out) ----

    def log_density(self, phi, y):
        """The log density ``log p(y | φ)``, broadcasting ``phi`` (..., M) against ``y`` (...)."""
        shape = np.broadcast_shapes(phi.shape[:-1], np.shape(y))
        phi = np.broadcast_to(phi, (*shape, phi.shape[-1])).reshape(-1, phi.shape[-1])
        y = np.broadcast_to(np.asarray(y, dtype=self._rv.dtype), shape).reshape(-1)
        out = np.empty(len(y))
        for rows in blocks(len(y), 1):
            out[rows] = self.functions["logp"](y[rows], *np.ascontiguousarray(phi[rows].T))[0]
        return out.reshape(shape)

    def _score(self, y, phi, second=False):
        """The log density (L,), score (L, M) and, with ``second``, ∂²log p (L, M, M)."""
        function = self._second_function() if second else self.functions["score"]
        outputs = function(y, *np.ascontiguousarray(phi.T))
        m = phi.shape[-1]
        score = np.stack(outputs[1 : m + 1], -1)
        if not second:
            return outputs[0], score
        hessian = np.stack(outputs[m + 1 :], -1).reshape(len(y), m, m)
        return outputs[0], score, hessian

    def _rules(self, flat, cells_per_value=1):
        """Blocks of rows with their rule: (row indices, nodes (P, r), weights (P, r)).

        Discrete rows are grouped by the support they need (0..K−1, K a power of
        2), so a few rows with large counts do not widen every row's sum; their
        weights are None (the pmf, computed with the score).
        """
        if self.discrete:
            sizes = self._support_sizes(flat)
            for top in np.unique(sizes):
                index = np.flatnonzero(sizes == top)
                for rows in blocks(len(index), top * cells_per_value):
                    nodes = np.broadcast_to(np.arange(top)[:, None], (top, len(index[rows])))
                    yield index[rows], nodes, None
            return
        if self._per_row is None:
            self._per_row = len(self._continuous_rule(flat[:1])[0])
        for rows in blocks(len(flat), self._per_row * cells_per_value):
            yield np.arange(len(flat))[rows], *self._continuous_rule(flat[rows])

    def _continuous_rule(self, phi):
        """Nodes and weights (P, R) of continuous rows ``phi`` (R, M)."""
        columns = list(np.ascontiguousarray(phi.T))
        located = []
        for functions in self.functions["locate"]:
            located += locate(functions, columns)
        return self.functions["nodes"](*columns, *located)

    def _support_sizes(self, phi):
        """Per row, K (a power of 2, ≥ 16) with the mass above K − 1 below ``tail``.

        From PyMC's logcdf when it has one (one evaluation per row and try),
        else from the pmf summed over 0..K − 1.
        """
        sizes = np.zeros(len(phi), dtype=int)
        top, logcdf = 16, self.functions["logcdf"]
        while True:
            pending = np.flatnonzero(sizes == 0)
            if not len(pending):
                return sizes
            rows = phi[pending]
            if logcdf is not None:
                upper = np.full(len(rows), top - 1, dtype=self._rv.dtype)
                left = -np.expm1(logcdf(upper, *np.ascontiguousarray(rows.T))[0])
            else:
                left = 1 - np.exp(self.log_density(rows[None], np.arange(top)[:, None])).sum(0)
            sizes[pending[left < self.tail]] = top
            if top >= 2**24:  # the tail is too heavy to sum: use what there is
                sizes[sizes == 0] = top
            top *= 2

    def expectation(self, phi, integrand, second=False):
        """``E[f]`` per row, summing ``integrand(y, logp, score[, hessian])`` by the rule.

        ``phi`` (..., M); ``y`` and ``logp`` are (P, R) over the rule's P nodes,
        ``score`` (P, R, M) and, with ``second``, ``hessian`` (P, R, M, M); the
        integrand returns (P, R, ...) arrays. Records in ``mass_error`` the
        largest |Σ weights − 1| seen: how well the rule integrates the density.
        """
        flat = phi.reshape(-1, phi.shape[-1])
        out = None
        for index, y, w in self._rules(flat, 1 + second * flat.shape[1]):
            logp, *derivatives = self._score(y.reshape(-1), tiled(flat[index], len(y)), second)
            logp = logp.reshape(y.shape)
            w = np.exp(logp) if w is None else w
            # nodes without mass (or that underflowed onto a boundary) may score nan
            w = np.where(np.isfinite(logp) & (w > 0), w, 0.0)
            self.mass_error = max(self.mass_error, float(np.max(np.abs(w.sum(0) - 1))))
            if self.discrete and self.mass_error > 1e-6:
                raise ValueError(
                    f"the {self.name!r} likelihood puts mass {self.mass_error:.3g} outside "
                    "0, 1, 2, …, the values pm_sens sums over: discrete likelihoods with "
                    "negative values are not supported"
                )
            derivatives = [d.reshape(*y.shape, *d.shape[1:]) for d in derivatives]
            with np.errstate(over="ignore", invalid="ignore"):  # far nodes weigh 0
                value = integrand(y, logp, *derivatives)
            w = w.reshape(w.shape + (1,) * (value.ndim - w.ndim))
            # a derivative of PyMC's logp may overflow far in a tail (SkewNormal's
            # log erfc at 1e-200 of mass): nodes below the tail mass weigh 0
            negligible = (w < self.tail) & ~np.isfinite(value)
            with np.errstate(invalid="ignore"):
                block = np.where((w > 0) & ~negligible, w * value, 0.0).sum(0)
            if out is None:
                out = np.empty((len(flat), *block.shape[1:]))
            out[index] = block
        return out.reshape(*phi.shape[:-1], *out.shape[1:])

    def fisher_information(self, phi):
        """``E[s sᵀ]`` (..., M, M) of the leaf parameters."""
        return self.expectation(phi, lambda y, logp, s: s[..., :, None] * s[..., None, :])

    def entropy(self, phi):
        """``−E[log p]`` (...); point masses enter with their log mass."""
        return self.expectation(phi, lambda y, logp, s: -logp)

    def raw_moments(self, phi, varying, order):
        """``E[y]`` and ``E[y²]`` and their derivatives in the ``varying`` parameters.

        By the score identity ``∂E[f]/∂φ_j = E[f s_j]`` and
        ``∂²E[f]/∂φ_j∂φ_k = E[f (s_j s_k + ∂_k s_j)]``.

        Returns
        -------
        list of ndarray
            values (..., 2); with ``order >= 1`` first derivatives (..., 2, V);
            with ``order == 2`` second derivatives (..., 2, V, V).
        """
        v = len(varying)

        def integrand(y, logp, score, hessian=None):
            powers = np.stack([y, y * y], -1)  # (P, R, 2)
            score = score[..., varying]
            out = [powers]
            if order >= 1:
                out.append((powers[..., :, None] * score[..., None, :]).reshape(*y.shape, -1))
            if order == 2:
                curvature = hessian[..., varying, :][..., :, varying]
                outer = score[..., :, None] * score[..., None, :] + curvature
                out.append(
                    (powers[..., :, None, None] * outer[..., None, :, :]).reshape(*y.shape, -1)
                )
            return np.concatenate(out, -1)

        flat = self.expectation(phi, integrand, second=order == 2)
        shapes = [(2,), (2, v), (2, v, v)][: order + 1]
        sizes = np.cumsum([int(np.prod(shape)) for shape in shapes])[:-1]
        return [
            part.reshape(*phi.shape[:-1], *shape)
            for part, shape in zip(np.split(flat, sizes, -1), shapes, strict=True)
        ]

    def kl_divergence(self, phi_p, phi_q):
        """KL(p ‖ q) by the rule of p, as ``E_p[g(q/p − 1)]``, ``g(u) = u − log(1+u)``."""
        shape = np.broadcast_shapes(phi_p.shape, phi_q.shape)
        phi_p = np.broadcast_to(phi_p, shape).reshape(-1, shape[-1])
        phi_q = np.broadcast_to(phi_q, shape).reshape(-1, shape[-1])
        out = np.empty(len(phi_p))
        for index, y, w in self._rules(phi_p):
            logp = self.log_density(tiled(phi_p[index], len(y)), y.reshape(-1)).reshape(y.shape)
            logq = self.log_density(tiled(phi_q[index], len(y)), y.reshape(-1)).reshape(y.shape)
            w = np.exp(logp) if w is None else w
            with np.errstate(invalid="ignore", over="ignore"):
                gap = log1p_gap(np.expm1(logq - logp))
                out[index] = np.where(w > 0, w * gap, 0.0).sum(0)
        return out.reshape(shape[:-1])

    def renyi_divergence(self, phi_p, phi_q, alpha):
        """D_α(p ‖ q), 0 < α < 1, by the rules of both laws (`renyi_by_rules`)."""
        shape = np.broadcast_shapes(phi_p.shape, phi_q.shape)
        flat = [np.broadcast_to(x, shape).reshape(-1, shape[-1]) for x in (phi_p, phi_q)]
        terms = np.empty((2, len(flat[0])))
        for own, rows in enumerate(flat):
            for index, y, w in self._rules(rows):
                log_p, log_q = (
                    self.log_density(tiled(x[index], len(y)), y.reshape(-1)).reshape(y.shape)
                    for x in flat
                )
                with np.errstate(divide="ignore"):
                    log_w = (log_p, log_q)[own] if w is None else np.log(w)
                terms[own, index] = log_rule_term(log_w, log_p, log_q, alpha)
        return (np.logaddexp(*terms) / (alpha - 1)).reshape(shape[:-1])

    def support_upper(self, phi, tail):
        """Discrete: a count above which each row's mass is below ``tail``."""
        flat = phi.reshape(-1, phi.shape[-1])
        upper = np.empty(len(flat), dtype=int)
        for index, y, _ in self._rules(flat):
            pmf = np.exp(self.log_density(tiled(flat[index], len(y)), y.reshape(-1)))
            left = 1 - np.cumsum(pmf.reshape(y.shape), 0)
            upper[index] = np.argmax(left < tail, 0)
        return upper.reshape(phi.shape[:-1])

    def family(self):
        """The likelihood as a `pm_sens.families.Family` over its leaf parameters."""
        return Family(
            self.name,
            "generic",
            self.labels,
            lambda phi, **_: self.fisher_information(phi),
            lambda p, q, **_: self.kl_divergence(p, q),
            lambda phi, y, **_: self.log_density(phi, y),
            entropy=None if self.discrete else self.entropy,
            renyi_divergence=lambda p, q, alpha, **_: self.renyi_divergence(p, q, alpha),
            renyi_above_one=False,
            support_upper=(lambda phi, tail, **_: self.support_upper(phi, tail))
            if self.discrete
            else None,
        )

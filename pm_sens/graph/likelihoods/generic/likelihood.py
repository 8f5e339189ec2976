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
  the part's bounds (`pm_sens.graph.likelihoods.generic.rules`: where each
  part is centred and how it is scaled). A mixture's components are
  integrated one by one, so separated modes are all resolved.

These give the Fisher information ``E[s sᵀ]``, the entropy, the KL
divergence and the moments of the likelihood as a `pm_sens.families.Family`.
"""

from functools import partial

import numpy as np
from pymc.distributions.continuous import (
    AsymmetricLaplaceRV,
    ExGaussianRV,
    MoyalRV,
    SkewNormalRV,
    SkewStudentTRV,
)
from pymc.distributions.mixture import _BaseMixtureRV
from pytensor.tensor.random.basic import (
    CauchyRV,
    GumbelRV,
    LaplaceRV,
    LogisticRV,
    NormalRV,
    StudentTRV,
)

from pm_sens.families import Family
from pm_sens.families._base import log1p_gap, whitening_of
from pm_sens.families._renyi import log_rule_term
from pm_sens.graph.likelihoods.generic.graph import N_NODES, TAIL, LikelihoodGraph
from pm_sens.graph.likelihoods.generic.leaves import distribution_inputs
from pm_sens.graph.likelihoods.generic.rules import blocks, locate
from pm_sens.graph.model.queries import is_distribution

#: location families of the real line, and their location's position among the
#: distribution's parameters: the law at location m is the law at 0 shifted by m
LOCATIONS = {
    AsymmetricLaplaceRV: 2,
    CauchyRV: 0,
    ExGaussianRV: 0,
    GumbelRV: 0,
    LaplaceRV: 0,
    LogisticRV: 0,
    MoyalRV: 0,
    NormalRV: 0,
    SkewNormalRV: 0,
    SkewStudentTRV: 2,
    StudentTRV: 1,
}


class GenericLikelihood(LikelihoodGraph):
    """Log density, score and expectations of one observed variable as a `Family`.

    Parameters are those of `LikelihoodGraph`.
    """

    def __init__(self, rv, model_rvs, *, n_nodes=N_NODES, tail=TAIL):
        super().__init__(rv, model_rvs, n_nodes=n_nodes, tail=tail)
        self._per_row = None
        #: a mixture's component of each node of the continuous rule (P,)
        self._owners = None
        #: largest |Σ weights − 1| of the rules this likelihood has used (see
        #: `expectation`): a record of its own numerics, never reset by a call
        self.mass_error = 0.0
        #: the columns of the locations that move the law together (`_location_columns`)
        self.locations = _location_columns(rv, self.leaves)

    def log_density(self, phi, y):
        """The log density ``log p(y | φ)``, broadcasting ``phi`` (..., M) against ``y`` (...).

        The axes along which only ``y`` varies become the node axis of the
        compiled log density, so each row's parameters are used once.
        """
        shape = np.broadcast_shapes(phi.shape[:-1], np.shape(y))
        if 0 in shape:
            return np.zeros(shape)
        phi = phi.reshape((1,) * (len(shape) + 1 - phi.ndim) + phi.shape)
        nodes = [a for a, n in enumerate(shape) if n > 1 and phi.shape[a] == 1]
        rows = [a for a in range(len(shape)) if a not in nodes]
        row_shape = tuple(shape[a] for a in rows)
        phi = phi[tuple(0 if a in nodes else slice(None) for a in range(len(shape)))]
        phi = np.broadcast_to(phi, (*row_shape, phi.shape[-1])).reshape(-1, phi.shape[-1])
        y = np.broadcast_to(np.asarray(y, dtype=self._rv.dtype), shape).transpose(nodes + rows)
        out = self._logp_at(y.reshape(-1, len(phi)), phi)
        return out.reshape(y.shape).transpose(np.argsort(nodes + rows))

    @staticmethod
    def _by_rows(function, y, phi):
        """``function``'s outputs at nodes ``y`` (P, R) of rows ``phi`` (R, M), block by block."""
        out = None
        for rows in blocks(len(phi), len(y)):
            parts = function(np.ascontiguousarray(y[:, rows]), *np.ascontiguousarray(phi[rows].T))
            if out is None:
                out = [np.empty(y.shape) for _ in parts]
            for whole, part in zip(out, parts, strict=True):
                whole[:, rows] = part
        return out

    def _derivatives(self, y, phi, order, own_components=False):
        """The log density and, up to ``order``, its derivatives at nodes of rows.

        At nodes ``y`` (P, R) of rows ``phi`` (R, M): the log density (P, R),
        with ``order >= 1`` the score (P, R, M), with ``order == 2`` ∂²log p
        (P, R, n) at the pairs of columns of `_second_pairs`. ``own_components``:
        of ``log(w_k p_k)`` of each node's own component k, for a mixture of
        continuous laws.
        """
        if order == 0:
            return [self._logp_at(y, phi)]
        if own_components:
            function = self._own_function(order)
        else:
            function = self._second_function() if order == 2 else self.functions["score"]
        logp, *outputs = self._by_rows(function, y, phi)
        m = phi.shape[-1]
        derivatives = [np.stack(outputs[:m], -1)]
        if order == 2 and own_components:
            derivatives.append(np.stack(outputs[m:], -1))
        elif order == 2:  # the dense M × M, k-major: its upper triangle
            i, j = np.triu_indices(m)
            derivatives.append(np.stack([outputs[m + k] for k in i * m + j], -1))
        return [logp, *derivatives]

    def _second_pairs(self, own_components):
        """The pairs (2, n) of columns i ≤ j whose second derivatives `_derivatives` gives.

        All pairs, except of a mixture's own components: those that enter a
        common component (`graph.OwnComponents`); the others' are 0.
        """
        if own_components:
            return self.functions["own"].pairs
        return np.array(np.triu_indices(len(self.labels)))

    def _own_function(self, order):
        """`_derivatives`' function for ``log(w_k p_k)`` of each node's own component k."""
        return partial(self.functions["own"], order, self._owners)

    def _logp_at(self, y, phi):
        """The log density at nodes ``y`` (P, R) of rows ``phi`` (R, M)."""
        return self._by_rows(self.functions["logp"], y, phi)[0]

    def _rules(self, flat, cells_per_value=1):
        """Blocks of rows with their rule: (row indices, nodes (P, r), weights (P, r)).

        Discrete rows are grouped by the support they need (0..K−1, K a power of
        2), so a few rows with large counts do not widen every row's sum; their
        weights are None (the pmf, computed with the score).
        """
        if self.discrete:
            sizes, _ = self._support_sizes(flat)
            for top in np.unique(sizes):
                index = np.flatnonzero(sizes == top)
                for rows in blocks(len(index), top * cells_per_value):
                    nodes = np.broadcast_to(np.arange(top)[:, None], (top, len(index[rows])))
                    yield index[rows], nodes, None
            return
        if self._per_row is None:
            self._per_row = len(self._continuous_rule(flat[:1])[0])
        index = np.arange(len(flat))
        for rows in blocks(len(flat), self._per_row * cells_per_value):
            yield index[rows], *self._continuous_rule(flat[rows])

    def _continuous_rule(self, phi):
        """Nodes and weights (P, R) of continuous rows ``phi`` (R, M).

        For a mixture, each node's component (P,), the same for every row, is
        kept in ``_owners``.
        """
        columns = list(np.ascontiguousarray(phi.T))
        located = []
        for functions in self.functions["locate"]:
            located += locate(functions, columns)
        nodes, weights, *owners = self.functions["nodes"](*columns, *located)
        if owners:
            self._owners = owners[0]
        return nodes, weights

    def _support_sizes(self, phi):
        """Per row, K (a power of 2, ≥ 16) with the mass above K − 1 below ``tail``.

        From PyMC's logcdf when it has one (one evaluation per row and try),
        else from the pmf summed over 0..K − 1, each try adding K/2..K − 1 and
        a row's K the count where its sum passes ``1 − tail``, rounded up to a
        quarter of its power of 2 (a beta-binomial with 41 trials sums 48
        counts, not 64; rows come in at most four sizes per octave).

        Returns the sizes (R,) and, where they came from the pmf, the pmf and
        log pmf (W, R) at 0..W − 1 it summed (`_tables`); else None.
        """
        sizes, mass = np.zeros(len(phi), dtype=int), np.zeros(len(phi))
        low, top, logcdf = 0, 16, self.functions["logcdf"]
        summed = []  # (rows, first count, log pmf and pmf (counts, rows)) of each try
        while np.any(sizes == 0):
            pending = np.flatnonzero(sizes == 0)
            rows = phi[pending]
            if logcdf is not None:
                upper = np.full(len(rows), top - 1, dtype=self._rv.dtype)
                left = -np.expm1(logcdf(upper, *np.ascontiguousarray(rows.T))[0])
                sizes[pending[left < self.tail]] = top
            else:
                log_pmf = self.log_density(rows[None], np.arange(low, top)[:, None])
                pmf = np.exp(log_pmf)
                summed.append((pending, low, log_pmf, pmf))
                sums = mass[pending] + np.cumsum(pmf, 0)
                held = sums >= 1 - self.tail  # (counts, rows)
                done = held[-1]
                needed = low + np.argmax(held[:, done], 0) + 1
                step = max(top // 8, 1)  # a quarter of the octave low..top
                sizes[pending[done]] = np.maximum(-(-needed // step) * step, 16)
                mass[pending] = sums[-1]
            if top >= 2**24:  # the tail is too heavy to sum: use what there is
                sizes[sizes == 0] = top
            low, top = top, top * 2
        return sizes, _tables(summed, sizes) if summed else None

    def expectation(self, phi, integrand, order=1, own_components=False, outer=False):
        """``E[f]`` per row, summing ``integrand(y, logp[, score[, second, pairs]])`` by the rule.

        ``phi`` (..., M); ``y`` and ``logp`` are (P, R) over the rule's P nodes,
        ``score`` (P, R, M) with ``order >= 1``; with ``order == 2``, ``second``
        (P, R, n) holds ∂²log p in the ``pairs`` (2, n) of columns i ≤ j
        (`_second_pairs`: the others' ∂²log p and score products are 0); the
        integrand returns (P, R, ...) arrays. Records in
        ``mass_error`` the largest |Σ weights − 1| seen: how well the rules
        integrate the density.

        ``own_components``: for the derivatives of ``E[f]`` (an integrand ``f s``
        or ``f (s sᵀ + ∂s)``) of a mixture of continuous laws, component by
        component: at each node, ``logp`` and its derivatives are those of
        ``log(w_k p_k)`` of the node's own component k (`_own_function`).

        ``outer``: ``E[f fᵀ]`` (..., A, A) of an integrand f (P, R, A).
        """
        flat = phi.reshape(-1, phi.shape[-1])
        own_components = own_components and order >= 1 and "own" in self.functions
        pairs = [self._second_pairs(own_components)] if order == 2 else []
        out = None
        for index, y, w in self._rules(flat, 1 + (order == 2) * flat.shape[1]):
            logp, *derivatives = self._derivatives(y, flat[index], order, own_components)
            w = np.exp(logp) if w is None else w
            # nodes without mass (or that underflowed onto a boundary) may score nan
            w = np.where(np.isfinite(logp) & (w > 0), w, 0.0)
            error = float(np.max(np.abs(w.sum(0) - 1)))
            self.mass_error = max(self.mass_error, error)
            if self.discrete and error > 1e-6:
                raise ValueError(
                    f"the {self.name!r} likelihood puts mass {error:.3g} outside "
                    "0, 1, 2, …, the values pm_sens sums over: discrete likelihoods with "
                    "negative values are not supported"
                )
            with np.errstate(over="ignore", invalid="ignore"):  # far nodes weigh 0
                value = integrand(y, logp, *derivatives, *pairs)
            # nodes without mass add nothing, whatever their value (±inf, nan)
            flat_value = np.where((w > 0)[..., None], value.reshape(*w.shape, -1), 0.0)
            flat_value = self._finite_where_negligible(w, flat_value)
            if outer:  # Σ_p w v vᵀ: one matrix product per row
                weighted = (w[..., None] * flat_value).transpose(1, 2, 0)
                block = np.matmul(weighted, flat_value.transpose(1, 0, 2))
            else:
                block = np.einsum("pr,prk->rk", w, flat_value)
                block = block.reshape(block.shape[:1] + value.shape[2:])
            if out is None:
                out = np.empty((len(flat), *block.shape[1:]))
            out[index] = block
        return out.reshape(*phi.shape[:-1], *out.shape[1:])

    def _distinct(self, phi, compute):
        """``compute`` of the distinct rows of ``phi`` (..., M) moved by −`_shift`, spread back.

        For what moving a law does not change (entropy, variance, Fisher
        information): rows that differ only in where the law sits share one
        rule — the ExGaussian's μ = X b, whose σ and ν are each draw's, or a
        Normal mixture whose component means all move with x — and so do
        repeated rows (a grid value, a permutation). Moved rows are compared
        with their locations rounded to 2⁻⁴⁰ of the largest (the rounding of
        ``(c_k + b x) − shift``). ``compute`` maps (U, M) rows to (U, ...).
        """
        distinct, spread = self._distinct_rows(phi)
        return spread(compute(distinct)).copy()

    def _distinct_rows(self, phi):
        """`_distinct`'s rows (U, M), and the function spreading (U, ...) back over phi's rows.

        The spread arrays are read-only views where rows share a row's value
        (a law that is each draw's).
        """
        rows, keys = phi, phi
        if self.locations is not None:
            rows = phi.copy()
            rows[..., self.locations] -= self._shift(phi)[..., None]
            keys = _rounded_locations(rows, self.locations, np.abs(phi[..., self.locations]))
        if keys.ndim > 2 and np.all(keys == keys[..., :1, :]):
            # the same law along the rows (each draw's): one row per draw, found
            # without sorting the rows
            rows, keys = rows[..., :1, :], keys[..., :1, :]
        flat = rows.reshape(-1, phi.shape[-1])
        _, first, back = np.unique(
            keys.reshape(flat.shape), axis=0, return_index=True, return_inverse=True
        )

        def spread(values):
            values = values[back.ravel()]
            values = values.reshape(*rows.shape[:-1], *values.shape[1:])
            return np.broadcast_to(values, (*phi.shape[:-1], *values.shape[rows.ndim - 1 :]))

        return flat[first], spread

    def _shift(self, phi):
        """How far each row's law is moved from where `_distinct` computes it (...).

        The mean of its locations: the moved law sits about 0, where its
        moments' derivatives lose the fewest digits to ``c² E[1] + 2cE[z] + E[z²]``.
        """
        return phi[..., self.locations].mean(-1)

    def fisher_information(self, phi):
        """``E[s sᵀ]`` (..., M, M) of the leaf parameters."""
        return self._distinct(phi, self._information)

    def whitening(self, phi, given):
        """`pm_sens.families.Family.whitening` of the leaf parameters ``given``.

        Computed on the distinct rows and spread back as views: a mixture's
        information, each draw's, would otherwise be copied to every row
        (M × M values each) and whitened there.
        """
        distinct, spread = self._distinct_rows(phi)
        scales, corr = whitening_of(self._information(distinct), given)
        return spread(scales), None if corr is None else spread(corr)

    def _information(self, rows):
        """``E[s sᵀ]`` (U, M, M) of rows (U, M)."""
        return self.expectation(rows, lambda y, logp, s: s, outer=True)

    def entropy(self, phi):
        """``−E[log p]`` (...); point masses enter with their log mass."""
        return self._distinct(phi, lambda rows: self.expectation(rows, lambda y, logp: -logp, 0))

    def entropy_and_moments(self, phi):
        """The entropy, mean and variance (each (...)) by the same rule's nodes.

        One evaluation of the log density at each row's nodes gives all three,
        where permutations and grids need the entropy of each draw's law and
        the moments of the mixture over draws. The variance is taken about
        the mean at location 0, then the mean moved to the row's location.
        """

        def integrand(y, logp):
            return np.stack([-logp, y, y * y], -1)

        def at_location_zero(rows):
            entropy, mean, square = self.expectation(rows, integrand, order=0).T
            return np.stack([entropy, mean, square - mean**2], -1)

        entropy, mean, variance = np.moveaxis(self._distinct(phi, at_location_zero), -1, 0)
        if self.locations is not None:
            mean = mean + self._shift(phi)
        return entropy, mean, variance

    def raw_moments(self, phi, varying, order, powers=2):
        """``E[y]`` and ``E[y²]`` and their derivatives in the ``varying`` parameters.

        By the score identity ``∂E[f]/∂φ_j = E[f s_j]`` and
        ``∂²E[f]/∂φ_j∂φ_k = E[f (s_j s_k + ∂_k s_j)]``. ``powers=1``: ``E[y]``
        alone (a mean needs no ``E[y²]``). A location family's from its law at
        location 0 (`_moved_moments`).

        Returns
        -------
        list of ndarray
            values (..., K); with ``order >= 1`` first derivatives (..., K, V);
            with ``order == 2`` second derivatives (..., K, V, V); K = ``powers``.
        """
        if self.locations is not None:
            return self._moved_moments(phi, varying, order, powers)
        return self._raw_moments(phi, varying, order, range(1, powers + 1))

    def _moved_moments(self, phi, varying, order, powers):
        """`raw_moments` of a law that moves with its locations, from those of z at 0.

        For any c, the law at φ is c + z with z the law at φ moved by −c (its
        locations less c), so that ``E[y] = cE[1] + E[z]`` and
        ``E[y²] = c²E[1] + 2cE[z] + E[z²]``, and each derivative in φ the same
        sum of z's derivatives. The mass E[1] is a mixture's Σ w (PyMC does not
        normalize its weights), else 1: its first derivatives are 1 in a weight
        (0 in a weight of exactly 0, as z's: `Leaf.per_point_components`) and 0
        in the other parameters, its second 0. With c the row's `_shift`, z's
        moments and their derivatives take one rule per distinct moved row
        (`_distinct`).
        """
        shapes = [(2,), (2, len(varying)), (2, len(varying), len(varying))][: order + 1]

        def at_location_zero(rows):
            parts = self._raw_moments(rows, varying, order, (1, 2))
            return np.concatenate([p.reshape(len(rows), -1) for p in parts], -1)

        moved = self._distinct(phi, at_location_zero)
        sizes = np.cumsum([int(np.prod(shape)) for shape in shapes])[:-1]
        weights = [m for m, leaf in self._columns() if leaf.weights]
        in_weights = np.isin(varying, weights)
        masses = [
            phi[..., weights].sum(-1) if weights else np.ones(phi.shape[:-1]),
            (phi[..., varying] != 0) & in_weights,
            0.0,
        ]
        location = self._shift(phi)
        axis = phi.ndim - 1  # of the powers
        out = []
        for k, (part, shape) in enumerate(zip(np.split(moved, sizes, -1), shapes, strict=True)):
            one, two = np.moveaxis(part.reshape(*phi.shape[:-1], *shape), axis, 0)
            c = location[(...,) + (None,) * k]
            moments = [c * masses[k] + one, c * c * masses[k] + 2 * c * one + two]
            out.append(np.stack(moments[:powers], axis))
        return out

    def _columns(self):
        """(column, leaf) of each column of the leaf parameters."""
        return list(enumerate(leaf for leaf in self.leaves for _ in range(leaf.size)))

    def _raw_moments(self, phi, varying, order, exponents):
        """`raw_moments` by the rule at each row, of ``E[y**k]`` for k in ``exponents``."""
        v, powers = len(varying), len(exponents)
        # the second derivatives' pairs of columns among the varying ones, as
        # pairs of positions in ``varying`` (set by the integrand: the rule's pairs)
        at = {}

        def integrand(y, logp, score=None, second=None, pairs=None):
            powers_of_y = np.stack([y**k for k in exponents], -1)  # (P, R, K)
            out = [powers_of_y]
            if order >= 1:
                first = powers_of_y[..., :, None] * score[..., None, varying]
                out.append(first.reshape(*y.shape, -1))
            if order == 2:
                position = np.full(len(self.labels), -1)
                position[varying] = np.arange(v)
                kept = np.flatnonzero((position[pairs] >= 0).all(0))
                i, j = pairs[:, kept]
                at["pairs"] = position[i], position[j]
                outer = score[..., i] * score[..., j] + second[..., kept]  # (P, R, n)
                out.append((powers_of_y[..., :, None] * outer[..., None, :]).reshape(*y.shape, -1))
            return np.concatenate(out, -1)

        flat = self.expectation(phi, integrand, order, own_components=True)
        flat = flat.reshape(-1, flat.shape[-1])
        parts = [flat[:, :powers]]
        if order >= 1:
            parts.append(flat[:, powers : powers * (1 + v)].reshape(-1, powers, v))
        if order == 2:
            i, j = at["pairs"]
            second = np.zeros((len(flat), powers, v, v))
            second[..., i, j] = second[..., j, i] = flat[:, powers * (1 + v) :].reshape(
                len(flat), powers, -1
            )
            parts.append(second)
        return [p.reshape(*phi.shape[:-1], *p.shape[1:]) for p in parts]

    def _finite_where_negligible(self, w, values):
        """``values`` (nodes, rows, ...), 0 where not finite at a node weighing below ``tail``.

        Far in a tail PyMC's log density or its derivatives may be nan or
        overflow (a mixture's log density at 1e-319 of mass, a skew normal's
        log erfc at 1e-200): such nodes add nothing to an expectation.
        """
        if np.isfinite(values).all():
            return values
        negligible = (w < self.tail).reshape(w.shape + (1,) * (values.ndim - w.ndim))
        return np.where(negligible & ~np.isfinite(values), 0.0, values)

    def kl_divergence(self, phi_p, phi_q):
        """KL(p ‖ q) by the rule of p, as ``E_p[g(q/p − 1)]``, ``g(u) = u − log(1+u)``."""
        shape = np.broadcast_shapes(phi_p.shape, phi_q.shape)
        phi_p = np.broadcast_to(phi_p, shape).reshape(-1, shape[-1])
        phi_q = np.broadcast_to(phi_q, shape).reshape(-1, shape[-1])
        out = np.empty(len(phi_p))
        for index, y, w in self._rules(phi_p):
            logp, logq = (self._logp_at(y, x[index]) for x in (phi_p, phi_q))
            w = np.exp(logp) if w is None else w
            with np.errstate(invalid="ignore", over="ignore"):
                gap = log1p_gap(np.expm1(logq - logp))
                terms = np.where(w > 0, w * gap, 0.0)
            out[index] = self._finite_where_negligible(w, terms).sum(0)
        return out.reshape(shape[:-1])

    def renyi_divergence(self, phi_p, phi_q, alpha):
        """D_α(p ‖ q), 0 < α < 1, by the rules of both laws (`renyi_by_rules`)."""
        shape = np.broadcast_shapes(phi_p.shape, phi_q.shape)
        flat = [np.broadcast_to(x, shape).reshape(-1, shape[-1]) for x in (phi_p, phi_q)]
        terms = np.empty((2, len(flat[0])))
        for own, rows in enumerate(flat):
            for index, y, w in self._rules(rows):
                log_p, log_q = (self._logp_at(y, x[index]) for x in flat)
                with np.errstate(divide="ignore"):
                    log_w = (log_p, log_q)[own] if w is None else np.log(w)
                terms[own, index] = log_rule_term(log_w, log_p, log_q, alpha)
        return (np.logaddexp(*terms) / (alpha - 1)).reshape(shape[:-1])

    def pmf_table(self, phi):
        """Discrete: the pmf of 0..W−1 (W arrays (...)) and the entropy (...) per row.

        Each row's pmf is summed over its own support (`_support_sizes`),
        from the values that found it where it was found by summing the pmf;
        W is the widest, the counts beyond a row's support have probability 0.
        """
        flat = phi.reshape(-1, phi.shape[-1])
        sizes, tables = self._support_sizes(flat)
        if tables is None:
            log_pmf = np.full((sizes.max(), len(flat)), -np.inf)
            for index, y, _ in self._rules(flat):
                log_pmf[: len(y), index] = self._logp_at(y, flat[index])
            pmf = np.exp(log_pmf)
        else:
            pmf, log_pmf = tables
        np.copyto(log_pmf, 0.0, where=pmf == 0)  # 0 · log 0 = 0, not 0 · −inf
        entropy = -np.einsum("kr,kr->r", pmf, log_pmf)
        width = len(pmf)
        return tuple(pmf.reshape(width, *phi.shape[:-1])), entropy.reshape(phi.shape[:-1])

    def support_upper(self, phi, tail):
        """Discrete: a count above which each row's mass is below ``tail``."""
        flat = phi.reshape(-1, phi.shape[-1])
        upper = np.empty(len(flat), dtype=int)
        for index, y, _ in self._rules(flat):
            left = 1 - np.cumsum(np.exp(self._logp_at(y, flat[index])), 0)
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
            pmf_table=(lambda phi, **_: self.pmf_table(phi)) if self.discrete else None,
            fisher_factors=lambda phi, given, **_: self.whitening(phi, given),
        )


def _location_columns(rv, leaves):
    """The columns of the leaf parameters that move ``rv``'s law together, or None.

    A location family at the top (not a censored or truncated law, whose bounds
    do not move with it) has its location's column; a mixture of location
    families, each component's location's columns (a `NormalMixture`'s K
    means): the law at locations ℓ + c is the law at ℓ moved by c. Each
    location must be a leaf of its own (not also another parameter, as in
    ``mu = sigma``, nor a constant: a law whose location does not vary has no
    columns to move).
    """
    node_params = [p for p, _ in distribution_inputs(rv.owner)]
    mixture = isinstance(rv.owner.op, _BaseMixtureRV)
    components = node_params[1:] if mixture else [rv]
    if not all(is_distribution(c) for c in components):
        return None
    locations, others = [], node_params[:1] if mixture else []
    for component in components:
        position = LOCATIONS.get(type(component.owner.op))
        if position is None:
            return None
        params = [p for p, _ in distribution_inputs(component.owner)]
        locations.append(params[position])
        others += [p for i, p in enumerate(params) if i != position]
    if any(o is location for o in others for location in locations):
        return None
    columns, start = [], 0
    for leaf in leaves:
        if any(leaf.var is location for location in locations):
            if leaf.size > 1 and not mixture:  # one law per point, one location
                return None
            columns += range(start, start + leaf.size)
        start += leaf.size
    found = {id(leaf.var) for leaf in leaves}
    if not columns or not all(id(location) in found for location in locations):
        return None
    return columns


def _rounded_locations(rows, locations, magnitudes):
    """Moved ``rows`` (..., M) with their locations rounded to 2⁻⁴⁰ of the largest.

    Keys for rows whose moved locations agree but for rounding
    (`GenericLikelihood._distinct`); ``magnitudes``: the locations' sizes
    before they were moved. The other columns as they are.
    """
    if len(locations) < 2:  # a single location moved to 0 is exactly 0
        return rows
    largest = float(np.max(magnitudes, initial=0.0))
    if not np.isfinite(largest) or largest == 0:
        return rows
    quantum = 2.0 ** (np.floor(np.log2(largest)) - 40)
    keys = rows.copy()
    keys[..., locations] = np.round(rows[..., locations] / quantum)
    return keys


def _tables(summed, sizes):
    """The pmf and log pmf (W, R) at 0..W − 1 from `_support_sizes`' tries.

    Both 0 from each row's size on.
    """
    pmf, log_pmf = np.zeros((2, sizes.max(), len(sizes)))
    for rows, low, log_p, p in summed:
        counts = min(len(pmf) - low, len(p))
        if counts > 0:
            pmf[low : low + counts, rows] = p[:counts]
            log_pmf[low : low + counts, rows] = log_p[:counts]
    pmf[np.arange(len(pmf))[:, None] >= sizes] = 0.0
    return pmf, log_pmf

"""The `Family` record and small array helpers shared by the family modules."""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special

SUPPORTS = (
    "real",
    "positive",
    "unit",
    "count",
    "binary",
    "binomial",
    "categorical",
    "multivariate",
    "multinomial",
    "simplex",
)


@dataclass(frozen=True)
class Family:
    """A predictive family in its mean–variance parametrization.

    Attributes
    ----------
    name : str
        Identifier used in ``family=`` and in result attrs.
    support : str
        One of :data:`SUPPORTS`; an override must match the likelihood's support.
    parameters : tuple of str
        Names of the components of ``phi``: ``("mean", "variance")`` for
        two-parameter families, ``("mean",)`` or ``("p",)`` for one-parameter
        ones, ``("p",)`` with a trailing class axis for the categorical.
    fisher_information : callable
        ``fisher_information(phi, **fixed) -> (..., M, M)`` for ``phi`` of shape
        ``(..., M)``; ``fixed`` holds parameters that never vary (Binomial ``n``).
    kl_divergence : callable
        ``kl_divergence(phi_p, phi_q, **fixed) -> (...)``: KL(p ‖ q), written to
        stay accurate when p and q are close (finite differences need that).
    log_density : callable
        ``log_density(phi, y, **fixed) -> (...)``: log pdf or pmf at y.
    entropy : callable, optional
        ``entropy(phi) -> (...)`` in closed form (continuous families).
    support_upper : callable, optional
        Discrete families: ``support_upper(phi, tail, **fixed)``, the smallest
        count above which the mass is below ``tail``.
    support_window : callable, optional
        Discrete families: ``support_window(low, high, tail, **fixed) ->
        (lower, upper)``, integer bounds per row holding all but ``tail`` of the
        mass of every law whose parameters lie between ``low`` and ``high``
        (componentwise minima and maxima over the draws, (..., M)).
    pmf_recursion : callable, optional
        Discrete families of Panjer's (a, b, 0) class, possibly modified at 0:
        ``pmf_recursion(phi, **fixed) -> (a, b, log_base, zero, scale)``. On
        y >= 1 the pmf is ``scale`` times a base pmf with ``p(y)/p(y−1) = a + b/y``
        and log pmf ``log_base(y)``; at 0 it is ``zero``. ``zero`` and ``scale``
        are None for the base law itself. Lets support sums run by recurrence
        (`pm_sens.measures.entropy`) instead of a log pmf per count.
    pmf_table : callable, optional
        Discrete families with a small support ``0..W−1``: ``pmf_table(phi) ->
        (pmf, entropy)``, the probabilities of 0..W−1 (W arrays (...)) and the
        entropy (...), in closed form. Lets support sums take them per draw
        instead of a log pmf per count.
    graph_pmf_table : callable, optional
        `pmf_table` written for any array namespace: ``graph_pmf_table(xp,
        *columns) -> (pmf, entropy)`` of the parameters' columns, so that a
        compiled graph sums the tables over draws on a device
        (`pm_sens.graph.engine.compile_predictive`'s ``draw_sums``).
    graph_log_pmf_table : callable, optional
        The log pmf of 0..W−1 written for any array namespace:
        ``graph_log_pmf_table(xp, *columns) -> log_pmf`` (W arrays (...), as
        ``log_density`` gives them: −inf where a probability is 0), so that a
        compiled graph sums each count's density over draws (in log space) and
        the observed count's is read from them.
    graph_log_density : callable, optional
        `log_density` written for any array namespace: ``graph_log_density(xp,
        y, *columns, **fixed) -> log density`` (...) at y of the parameters'
        columns (and the fixed parameters: a binomial's trials, a Wald's shift),
        so that a compiled graph sums the observed y's density over draws (in
        log space) on a device. Where it serves as ``log_density`` too, ``xp``
        is `NUMPY`.
    fisher_factors : callable, optional
        ``fisher_factors(phi, given, **fixed) -> (scales (..., K), corr (..., K, K)
        or None)`` for the K parameters listed in ``given``, with ``I =
        diag(scales) corr diag(scales)`` on them (None: corr is the identity),
        computed without forming I, so that R-sens stays finite wherever it is
        representable (a Poisson rate of 1e300, whose squared derivative
        overflows); or computed on fewer rows than ``phi``'s and spread back
        (a generic likelihood's distinct laws). `diagonal_factors` builds it
        for a diagonal I. Without it, both come from ``fisher_information``.
    renyi_divergence : callable, optional
        ``renyi_divergence(phi_p, phi_q, alpha, **fixed) -> (...)``: the Rényi
        divergence of order ``alpha`` (≠ 1) (`pm_sens.families._renyi`); level
        sensitivity at ``alpha != 1`` needs it.
    renyi_above_one : bool
        Whether ``renyi_divergence`` holds for ``alpha > 1`` too (closed forms),
        not only for ``0 < alpha < 1`` (sums and rules built from both laws).
    whitened_hessian : callable, optional
        Families held in another parametrization than mean–variance (for range):
        ``whitened_hessian(phi, jac, hess, **fixed) -> (u, corr)``, the second
        derivatives mapped to the mean–variance parametrization by the chain
        rule and whitened there (R-sens2 is not invariant to the
        parametrization; the papers pin mean–variance). Without it, `whitened`
        of ``hess``.
    mean_variance_hessian : callable, optional
        Families held in another parametrization whose information is costly
        (the negative binomial's α): ``mean_variance_hessian(phi, jac, hess)
        -> hess``, the mean–variance second derivatives pulled back to the
        family's parameters (``J ∂²(m, v)``, ``J`` the Jacobian of the family's
        parameters in (m, v)), which the family's own whitening — the first
        order's — whitens to the mean–variance R-sens2.
    mean_variance : tuple, optional
        Families held in another parametrization: ``(to_mean_variance,
        family)``, ``to_mean_variance(phi, derivatives, trailing) -> (phi,
        derivatives)`` mapping the parameters and their first derivatives (by
        the chain rule) to ``family``, the same law in mean–variance (a
        moment-matched family's raw moments: `raw_moment_family`). Level
        pairs (`pm_sens.measures.level_pairs`) are taken there.
    """

    name: str
    support: str
    parameters: tuple[str, ...]
    fisher_information: Callable[..., np.ndarray]
    kl_divergence: Callable[..., np.ndarray]
    log_density: Callable[..., np.ndarray]
    entropy: Callable[..., np.ndarray] | None = None
    support_upper: Callable[..., np.ndarray] | None = None
    support_window: Callable[..., tuple] | None = None
    pmf_recursion: Callable[..., tuple] | None = None
    pmf_table: Callable[..., tuple] | None = None
    graph_pmf_table: Callable[..., tuple] | None = None
    graph_log_pmf_table: Callable[..., tuple] | None = None
    graph_log_density: Callable[..., object] | None = None
    fisher_factors: Callable[..., tuple] | None = None
    whitened_hessian: Callable[..., tuple] | None = None
    mean_variance_hessian: Callable[..., list] | None = None
    renyi_divergence: Callable[..., np.ndarray] | None = None
    renyi_above_one: bool = True
    mean_variance: tuple | None = None

    @property
    def discrete(self) -> bool:
        """Whether the family has a pmf on 0, 1, 2, … (entropies by summation)."""
        return self.support_upper is not None

    @property
    def second_moment(self) -> str | None:
        """What moment matching needs besides the mixture mean, or None.

        ``"variance"``: the mixture variance (law of total variance);
        ``"scale2"``: the same with each draw's squared scale in place of its
        variance (Student-t, whose variance needs ν > 2).
        """
        second = self.parameters[1:2]
        return second[0] if second in (("variance",), ("scale2",)) else None

    def whitening(self, phi, given, **fixed):
        """The information's square-root diagonal and correlation on ``given``.

        Parameters
        ----------
        phi : ndarray, shape (..., M)
            The family's parameters.
        given : list of int
            The K parameters (indices into the M) to whiten.
        **fixed
            Parameters the family holds fixed (Binomial ``n``).

        Returns
        -------
        scales : ndarray (..., K)
            ``s_m = sqrt(I_mm)``.
        corr : ndarray (..., K, K) or None
            ``I_mk / (s_m s_k)``; None when I is diagonal on ``given`` (at every
            point, for families without ``fisher_factors``).
        """
        if self.fisher_factors is not None:
            return self.fisher_factors(phi, given, **fixed)
        return whitening_of(self.fisher_information(phi, **fixed), given)

    def graph_scales(self, xp, components, given):
        """`whitening`'s scales as expressions in the array namespace ``xp``, or None.

        ``components``: the family's M parameters, each an ``xp`` array;
        ``given``: the K parameters to whiten. A list of K arrays
        ``s_m = sqrt(I_mm)`` where the information is diagonal and its
        square roots are written for any namespace (`diagonal_factors`), so
        that a compiled graph (``xp = pytensor.tensor``) computes them with
        the derivatives; None otherwise (`whitening` in NumPy).
        """
        scales = getattr(self.fisher_factors, "graph_scales", None)
        return None if scales is None else [scales[m](xp, *components) for m in given]

    def whitened(self, phi, derivatives, trailing, **fixed):
        """Derivatives scaled by the information's square-root diagonal (`whitening`).

        Parameters
        ----------
        phi : ndarray, shape (..., M)
            The family's parameters.
        derivatives : list of M arrays of shape (..., *T), or None where a
            parameter does not vary (taken as 0)
        trailing : int
            ``len(T)``: derivative axes after those of ``phi[..., 0]``.
        **fixed
            Parameters the family holds fixed (Binomial ``n``).

        Returns
        -------
        u : list of arrays (..., *T)
            ``u_m = s_m ∂φ_m`` for the parameters that vary, ``s_m = sqrt(I_mm)``.
        corr : ndarray (..., K, K) or None
            ``I_mk / (s_m s_k)`` over those parameters; None when I is diagonal.
            ``Jᵀ I J = Σ_mk u_m corr_mk u_k``.
        """
        given = varying_parameters(derivatives)
        return whitened_by(*self.whitening(phi, given, **fixed), derivatives, trailing)

    @property
    def has_point_masses(self) -> bool:
        """Whether a member can be one value: a count law of mean 0 (a zero exposure)."""
        return self.support == "count" and "mean" in self.parameters

    def point_mass(self, phi):
        """Where the law at ``phi`` (..., M) is one value, (...) bool.

        A count law of mean 0 (a Poisson or negative binomial times an exposure
        of 0) is the point mass at 0: its Fisher information is infinite, and a
        divergence rate there has no value (the predictive cannot move
        smoothly off a point mass).
        """
        if not self.has_point_masses:
            return np.zeros(phi.shape[:-1], bool)
        return phi[..., self.parameters.index("mean")] <= 0

    def in_mean_variance(self, phi, derivatives=None, trailing=0):
        """``(family, phi, derivatives)`` in the mean–variance parametrization.

        See ``mean_variance``; unchanged for a family held in it.
        """
        if self.mean_variance is None:
            return self, phi, derivatives
        to_mean_variance, family = self.mean_variance
        return family, *to_mean_variance(phi, derivatives, trailing)

    def whitened_second_order(self, phi, jac, hess, whitening=None, **fixed):
        """`whitened` second derivatives (..., D, D) in the mean–variance parametrization.

        ``jac`` and ``hess`` are lists over the parameters as in `whitened`
        (None where a parameter does not vary); ``whitening``: `whitening` of
        the parameters whose ``jac`` is given, where already computed.
        """
        if self.whitened_hessian is not None:
            return self.whitened_hessian(phi, jac, hess, **fixed)
        if self.mean_variance_hessian is not None:
            hess = self.mean_variance_hessian(phi, jac, hess)
        # the first order's whitening holds the parameters whose jac is given; a
        # pulled-back Hessian may have more (a constant α moves with μ in v)
        if whitening is not None and varying_parameters(hess) == varying_parameters(jac):
            return whitened_by(*whitening, hess, 2)
        return self.whitened(phi, hess, 2, **fixed)


def raw_moment_family(family, parameters, matched, whitened_hessian):
    """The moment-matched `Family` of ``family``, held in the mixture's raw moments.

    Raw moments average over draws chunk by chunk; every function maps them to
    ``family``'s parameters first (``matched(phi)[0]``), and ``mean_variance``
    maps them with their derivatives. Families held this way: the multivariate
    Normal's, the Dirichlet's and the Dirichlet-multinomial's.
    """

    def on_matched(function):
        if function is None:
            return None
        return lambda phi, *rest, **fixed: function(matched(phi)[0], *rest, **fixed)

    def kl_divergence(phi_p, phi_q, **fixed):
        return family.kl_divergence(matched(phi_p)[0], matched(phi_q)[0], **fixed)

    return Family(
        family.name,
        family.support,
        parameters,
        on_matched(family.fisher_information),
        kl_divergence,
        on_matched(family.log_density),
        on_matched(family.entropy),
        support_upper=on_matched(family.support_upper),
        pmf_table=on_matched(family.pmf_table),
        whitened_hessian=whitened_hessian,
        mean_variance=(matched, family),
    )


#: most count values a sum over a discrete family's support covers for one row
MAX_SUPPORT = 2**24


def check_support(family_name, widths, what):
    """Refuse sums over a support that cannot be held (rates beyond the data's scale).

    ``widths``: the count values each row's sum covers; one beyond int64 has
    wrapped around (a width below 1) and one beyond float is not finite.
    """
    widths = np.asarray(widths, dtype=float)
    if np.any(~np.isfinite(widths) | (widths > MAX_SUPPORT) | (widths < 1)):
        raise ValueError(
            f"the {family_name} predictive puts mass on counts beyond the first "
            f"{MAX_SUPPORT:,} at some points, more than its {what} can be summed over: "
            "the posterior's rates there are far beyond any data's scale (often priors "
            "too wide for a log link, such as bambi's defaults on unscaled predictors). "
            "Check the rates (kind='mean' needs no support sum) and the priors"
        )


_TINY = np.finfo(float).tiny


def clip_probability(p, xp=np):
    """Keep probabilities that round to 0 or 1 off the boundary (in the namespace ``xp``).

    A saturated probability has zero derivative too (e.g. ``∂p = βp(1−p)``);
    clipping turns ``0 · ∞`` into the limit 0 instead of nan.
    """
    return xp.clip(p, _TINY, 1 - np.finfo(float).epsneg)


def clip_positive(x, xp=np):
    """Keep a rate or mean that underflowed to 0 positive (see `clip_probability`)."""
    return xp.maximum(x, _TINY)


def graph_log_beta(xp, a, b):
    """``log B(a, b)`` as log Γ's in the namespace ``xp`` (PyTensor's has no ``betaln``)."""
    return xp.gammaln(a) + xp.gammaln(b) - xp.gammaln(a + b)


def softplus(x):
    """``log(1 + e^x)``, exact on both tails (3x faster than ``np.logaddexp(0, x)``)."""
    out = np.abs(x)
    np.negative(out, out=out)
    np.exp(out, out=out)
    np.log1p(out, out=out)
    out += np.maximum(x, 0)
    return out


class _NumPyWithSpecial:
    """NumPy as a namespace a graph form takes, with ``gammaln`` (SciPy's) and `softplus`.

    PyTensor's namespace has both; a family's ``graph_log_density`` written
    for it then serves as its NumPy ``log_density`` too, one definition of
    each formula.
    """

    gammaln = staticmethod(special.gammaln)
    softplus = staticmethod(softplus)

    def __getattr__(self, name):
        return getattr(np, name)


#: `_NumPyWithSpecial`'s one instance
NUMPY = _NumPyWithSpecial()


def log1p_gap(u):
    """``u − log(1 + u)`` (≥ 0), accurate for small ``u``.

    KL divergences between nearby members of a family reduce to sums of
    ``p · log1p_gap(u)`` terms whose first-order parts cancel exactly.
    """
    u = np.asarray(u, dtype=float)
    small = np.abs(u) < 1e-3
    series = u**2 * (1 / 2 - u * (1 / 3 - u * (1 / 4 - u / 5)))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(small, series, u - np.log1p(np.where(small, 0.0, u)))


def stack_matrix(rows):
    """Stack nested lists of broadcastable arrays into a ``(..., M, M)`` array."""
    arrays = [np.broadcast_arrays(*row) for row in rows]
    shape = np.broadcast_shapes(*(a[0].shape for a in arrays))
    return np.stack([np.stack([np.broadcast_to(x, shape) for x in row], -1) for row in arrays], -2)


def diagonal_matrix(*entries):
    """``(..., M, M)`` diagonal matrix from M broadcastable arrays."""
    entries = np.broadcast_arrays(*entries)
    zeros = np.zeros_like(entries[0])
    return stack_matrix(
        [[e if j == i else zeros for j in range(len(entries))] for i, e in enumerate(entries)]
    )


def reparametrize(info, jacobian):
    """Fisher information after a change of variables: ``Jᵀ I J``.

    ``jacobian[..., a, b] = ∂θ_a/∂φ_b`` maps the new parameters φ to the ones θ
    in which ``info`` is expressed.
    """
    return np.einsum("...ab,...ac,...cd->...bd", jacobian, info, jacobian)


def whitening_of(info, given):
    """`Family.whitening` from the information ``info`` (..., M, M) on ``given``."""
    info = info[..., given, :][..., :, given]
    scales = np.sqrt(np.maximum(np.diagonal(info, axis1=-2, axis2=-1), 0))
    if len(given) < 2 or not np.any(info[..., ~np.eye(len(given), dtype=bool)]):
        return scales, None
    outer = scales[..., :, None] * scales[..., None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        return scales, np.where(outer > 0, info / outer, 0.0)


def whitened_by(scales, corr, derivatives, trailing):
    """`Family.whitened` with the whitening (``scales``, ``corr``) already computed.

    ``scales`` (..., K) are those of the K parameters whose ``derivatives``
    are not None, in order.
    """
    expand = (Ellipsis,) + (None,) * trailing
    given = varying_parameters(derivatives)
    return [derivatives[m] * scales[..., i][expand] for i, m in enumerate(given)], corr


def varying_parameters(derivatives):
    """The parameters (indices) whose ``derivatives`` are given (not None)."""
    return [m for m, d in enumerate(derivatives) if d is not None]


def diagonal_factors(*scales, in_graph=True):
    """`Family.fisher_factors` of a diagonal information.

    Takes one function per parameter, ``scale_m(xp, *columns) = sqrt(I_mm)``
    of the parameters' columns in the array namespace ``xp``; only the
    parameters asked for are computed (a negative binomial's α information is
    a sum over the support). ``in_graph``: the functions use ``xp``'s
    operations alone, so that a compiled graph can compute them beside the
    derivatives (`Family.graph_scales`); false where they call NumPy or SciPy
    whatever ``xp`` is.
    """

    def fisher_factors(phi, given):
        columns = [phi[..., m] for m in range(phi.shape[-1])]
        return np.stack([scales[m](np, *columns) for m in given], -1), None

    fisher_factors.graph_scales = scales if in_graph else None
    return fisher_factors


def expanded(x, trailing):
    """``x`` (...) with ``trailing`` axes of length 1 appended, to meet derivatives."""
    return x[(Ellipsis,) + (None,) * trailing]


def outer(d):
    """``∂_d ∂_e`` from first derivatives (..., D): (..., D, D)."""
    return d[..., :, None] * d[..., None, :]


def kl_terms(log_p, log_q):
    """``Σ_y p log(p/q)`` over the last axis, by terms that stay finite.

    The last axis: p's support window (log masses), or a rule's nodes (the
    rule's log weights added to both log densities). Each term is
    ``p g(q/p − 1) = q − p − p log(q/p)``, which sums to the KL because
    ``Σ (q − p) = 0``: near (|log q/p| < 1) it is written through ``g``,
    accurate at O(δ²) (finite differences); far apart (a level change), where
    q/p overflows, as ``q − p − p log(q/p)``, and then ``Σ (q − p)`` over the
    window, no longer 0 when q puts mass beyond p's support, is taken off.
    """
    support = np.isfinite(log_p)
    with np.errstate(invalid="ignore"):  # −inf − (−inf) outside p's support: not summed
        ratio = log_q - log_p
    near = np.abs(ratio) < 1
    p = np.exp(log_p)
    with np.errstate(invalid="ignore", over="ignore"):
        terms = np.where(
            near,
            p * log1p_gap(np.expm1(np.where(near, ratio, 0.0))),
            np.exp(log_q) - p - p * ratio,
        )
    total = np.where(support, terms, 0.0).sum(-1)
    far = (~near & support).any(-1)
    if np.any(far):
        gap = np.where(support, np.exp(log_q) - p, 0.0).sum(-1)
        total = np.where(far, total - gap, total)
    return total


def point_mass_kl(log_masses_p, log_masses_q):
    """``Σ p log(p/q)`` over point masses (a censored law's bounds), 0 where p has none.

    Takes sequences of log masses, one array per point, under p and under q.
    """
    total = 0.0
    for log_p, log_q in zip(log_masses_p, log_masses_q, strict=True):
        with np.errstate(invalid="ignore"):
            term = np.exp(log_p) * (log_p - log_q)
        total = total + np.where(np.isfinite(log_p), term, 0.0)
    return total


def point_mass_entropy(log_masses):
    """``−Σ P log P`` over point masses, 0 where there is none."""
    total = 0.0
    for log_mass in log_masses:
        with np.errstate(invalid="ignore"):
            total = total - np.where(np.isfinite(log_mass), np.exp(log_mass) * log_mass, 0.0)
    return total


def point_mass_renyi_terms(log_masses_p, log_masses_q, alpha):
    """``α log p + (1 − α) log q`` at each point mass, −inf where p has none.

    Their ``logsumexp`` with the interior's term, over ``α − 1``, is the Rényi divergence.
    """
    terms = []
    for log_p, log_q in zip(log_masses_p, log_masses_q, strict=True):
        with np.errstate(invalid="ignore"):
            terms.append(
                np.where(np.isneginf(log_p), -np.inf, alpha * log_p + (1 - alpha) * log_q)
            )
    return terms

"""Posterior draws of the free variables a predictive needs, optionally thinned."""

from dataclasses import dataclass

import numpy as np
import xarray as xr

from pm_sens._core.arguments import inform_once, is_lazy, native_array
from pm_sens.graph.frontends.trees import draw_numbers, tree_draw_positions, tree_inputs
from pm_sens.graph.model.queries import data_value

#: the dims of posterior draws
SAMPLE_DIMS = ("chain", "draw")


@dataclass
class Draws:
    """Posterior draws flattened over (chain, draw), with the kept coordinates."""

    values: list  # one array (S, *shape) per free RV: NumPy, or dask when lazily loaded
    chain: np.ndarray
    draw: np.ndarray
    #: sizes of the posterior's dask chunks along ``draw``, when lazily loaded
    draw_chunks: tuple | None = None

    def within_chain(self, chain_index, start, stop):
        """Draws ``start:stop`` of one chain (values stay lazy if they are)."""
        offset = chain_index * len(self.draw)
        return Draws(
            [v[offset + start : offset + stop] for v in self.values],
            self.chain[chain_index : chain_index + 1],
            self.draw[start:stop],
        )

    def chunk(self, start, stop):
        """Draws ``start:stop`` of every variable, read into memory (`native_array`)."""
        return [native_array(v[start:stop]) for v in self.values]

    def spread(self, count):
        """``count`` draws spread over the posterior, the first and last included, in memory."""
        picked = np.unique(np.linspace(0, self.count - 1, count).astype(int))
        return [native_array(v[picked]) for v in self.values]

    @property
    def lazy(self) -> bool:
        """Whether the draws are read lazily (dask-backed)."""
        return any(is_lazy(v) for v in self.values)

    @property
    def count(self) -> int:
        """Number of draws S."""
        return len(self.chain) * len(self.draw)


def _posterior_dataset(idata):
    if isinstance(idata, xr.DataTree) and "posterior" in idata.children:
        return idata["posterior"].to_dataset()
    raise ValueError(
        f"idata={type(idata).__name__} has no 'posterior' group; pass the DataTree "
        "returned by pm.sample (groups: posterior, ...)"
    )


def _expected_shape(model, rv):
    dims = model.named_vars_to_dims.get(rv.name)
    if dims:
        return tuple(
            len(model.coords[d]) if model.coords.get(d) is not None else None for d in dims
        )
    return rv.type.shape


def _check_finite_draws(name, array, chain, draw):
    """Posterior draws must be finite; name the variable and the first bad draw."""
    finite = np.isfinite(array)
    if finite.all():
        return
    bad = ~finite.reshape(*array.shape[:2], -1).all(-1)
    c, d = np.argwhere(bad)[0]
    raise ValueError(
        f"idata.posterior[{name!r}] has {int(bad.sum())} draw(s) with non-finite values "
        f"(nan or inf), the first at chain={chain[c].item()!r}, draw={draw[d].item()!r}; every "
        "draw must be finite (a diverging or failed sampler? drop those draws)"
    )


def posterior_draws(idata, model, free_rvs, num_draws=None, random_seed=None, names=None):
    """Draws of ``free_rvs`` from ``idata.posterior``, checked against the model.

    With ``num_draws``, keeps ``num_draws // n_chains`` (at least one) draw
    positions chosen at random without replacement, the same in every chain.
    With a BART variable among them (`pm_sens.graph.frontends.trees`), the draws are
    read into memory: its trees are evaluated in this process only.
    ``names`` maps free variables to posterior variables of another name.
    """
    posterior = _posterior_dataset(idata)
    if names:
        posterior = posterior.rename({v: k for k, v in names.items() if v in posterior})
    trees = {v: v.tag.trees_of for v in free_rvs if hasattr(v.tag, "trees_of")}
    free_rvs = [trees.get(v, v) for v in free_rvs]
    missing = [rv.name for rv in free_rvs if rv.name not in posterior]
    if missing:
        raise ValueError(
            f"idata.posterior lacks {missing}, free variable(s) of the model that "
            f"{'it' if len(missing) == 1 else 'they'} the predictions depend on; "
            f"it holds {sorted(posterior.data_vars)}"
        )
    for rv in free_rvs:
        array = posterior[rv.name]
        if array.dims[:2] != SAMPLE_DIMS:
            raise ValueError(
                f"idata.posterior[{rv.name!r}] has dims {array.dims}; "
                "expected ('chain', 'draw', ...)"
            )
        expected = _expected_shape(model, rv)
        got = array.shape[2:]
        if len(got) != len(expected) or any(
            e is not None and e != g for e, g in zip(expected, got, strict=False)
        ):
            raise ValueError(
                f"idata.posterior[{rv.name!r}] has shape {got} per draw but the model's "
                f"{rv.name!r} has shape {expected}; was idata sampled from this model?"
            )
    chain = posterior["chain"].values
    draw = posterior["draw"].values
    numbers = draw_numbers(draw)
    keep = slice(None)
    if num_draws is not None and num_draws < len(chain) * len(draw):
        per_chain = max(1, num_draws // len(chain))
        rng = np.random.default_rng(random_seed)
        keep = np.sort(rng.choice(len(draw), size=per_chain, replace=False))
        draw = draw[keep]
    values, draw_chunks = [], None
    for rv in free_rvs:
        if rv in trees.values():
            values.append(_tree_draws(rv, posterior[rv.name][:, keep], numbers[keep]))
            continue
        # NumPy, or dask for a lazily opened posterior: read chunk by chunk later
        array = posterior[rv.name].data[:, keep].astype(rv.dtype, copy=False)
        if trees:  # evaluated where pymc-bart holds the trees: here, not on a cluster
            array = native_array(array)
        if not is_lazy(array):
            _check_finite_draws(rv.name, array, chain, draw)
        if is_lazy(array) and draw_chunks is None:
            draw_chunks = array.chunks[1]
        values.append(array.reshape(-1, *array.shape[2:]))
    return Draws(values=values, chain=chain, draw=draw, draw_chunks=draw_chunks)


def _tree_draws(rv, draws, numbers):
    """The BART variable ``rv``'s draws as positions in pymc-bart's history of trees (S,).

    Checked on each chain's first and last draw (`pm_sens.graph.frontends.trees`);
    ``numbers``: each kept draw's number within its chain.
    """
    ends = draws.isel(draw=[0, -1]).values  # two draws per chain, even when lazy
    training_X = data_value(tree_inputs(rv))
    positions, share = tree_draw_positions(rv, training_X, ends, numbers)
    if share < 1:
        inform_once(
            rv.owner.op,
            f"pymc-bart fitted the BART variable {rv.name!r} on jittered copies of the "
            f"repeated values in its columns of whole numbers, so its trees reproduce "
            f"{share:.0%} of idata.posterior[{rv.name!r}] at the training rows (all of it "
            "at the rows it left unmoved, which pm_sens checks). pm_sens evaluates the "
            "trees at the rows' own values, as pymc-bart's predictions, plot_pdp and "
            "variable importance do.",
        )
    return positions

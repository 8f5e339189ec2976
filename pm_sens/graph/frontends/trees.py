"""BART: pymc-bart's sums of trees evaluated at the points, draw by posterior draw.

A BART variable's posterior draws are its values at the model's rows only. The
trees of each draw are held by pymc-bart (on the variable's op, in the Python
session that ran ``pm.sample``), and pymc-bart evaluates them at new rows. In
a copy of the predictive's graph, the BART variable becomes `TreeSums`: the
sum of trees of one posterior draw at the rows of its ``X``, so every measure
that evaluates the predictive at moved points (finite-difference KL, levels,
permutations, grids) sees the trees move with the inputs. The draw is a
per-draw integer, the position of the draw in pymc-bart's history, found by
`tree_draw_positions` and checked against the posterior's values.

Sums of trees are piecewise constant in the inputs: their derivatives are zero
almost everywhere, so no derivative-based measure is defined on them.
"""

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import grad_undefined
from pytensor.graph.basic import Apply, Constant
from pytensor.graph.op import Op
from pytensor.graph.replace import _vectorize_node
from pytensor.graph.traversal import graph_inputs

from pm_sens.graph.model.queries import bart_variables, replace_rebuilding


class TreeSums(Op):
    """The sums of trees of chosen posterior draws at the rows of ``X``.

    ``TreeSums(bart_op, name, outputs)(X, draws)`` with ``X`` (rows, columns)
    and ``draws`` (k,) positions in pymc-bart's history gives (k, outputs,
    rows): ``outputs`` sums of trees per row (1, or a BART variable of shape
    ``(outputs, rows)``, e.g. a mean and a scale).
    """

    __props__ = ("bart_op", "variable", "outputs")

    def __init__(self, bart_op, variable, outputs):
        self.bart_op = bart_op
        self.variable = variable  # the BART variable's name, for messages
        self.outputs = outputs

    def make_node(self, X, draws):
        """X (rows, columns) as float64 and draws (k,) give (k, outputs, rows)."""
        X = pt.as_tensor_variable(X).astype("float64")
        draws = pt.as_tensor_variable(draws)
        shape = (draws.type.shape[0], self.outputs, X.type.shape[0])
        return Apply(self, [X, draws], [pt.tensor(dtype="float64", shape=shape)])

    def perform(self, node, inputs, output_storage):
        """pymc-bart's own evaluation of the trees of the chosen draws."""
        X, draws = inputs
        output_storage[0][0] = trees_sampler(self.bart_op).sample_posterior(
            np.ascontiguousarray(X, dtype=np.float64), draws.tolist(), None
        )

    def infer_shape(self, node, shapes):
        """(draws, outputs, rows)."""
        return [(shapes[1][0], self.outputs, shapes[0][0])]

    def L_op(self, inputs, outputs, output_grads):
        """Undefined: callers refuse derivatives first (`pm_sens.graph.frontends.piecewise`)."""
        comment = "sums of trees are piecewise constant: no derivative is defined on them"
        return [grad_undefined(self, i, x, comment) for i, x in enumerate(inputs)]


@_vectorize_node.register(TreeSums)
def _vectorize_tree_sums(op, node, X, draws):
    """Draws batched along a leading axis: one call over all of them, not one per draw."""
    if X.type.ndim != 2:
        raise NotImplementedError("the inputs of trees are not batched over draws")
    flat = op(X, draws.reshape((-1,)))
    return flat.reshape((*draws.shape, op.outputs, X.shape[0])).owner


def trees_sampler(bart_op):
    """pymc-bart's evaluator of the trees of every posterior draw of a BART variable.

    Raises our error when the op holds no trees (a model built anew, or a
    posterior read from disk: pymc-bart keeps the trees in the session that
    fitted the model, not in idata).
    """
    from pymc_bart.utils import _get_posterior_sampler

    if not len(bart_op.all_trees):
        raise ValueError(
            f"the BART variable's trees are not here: pymc-bart keeps the trees of each "
            f"posterior draw on the model's BART variable, in the Python session that "
            f"ran pm.sample (they are not saved in idata); analyse the model and idata "
            f"of that session ({type(bart_op).__name__} holds none)"
        )
    return _get_posterior_sampler(bart_op)


def trees_at_points(model, params):
    """Replace each BART variable of ``params`` by its trees at the rows of its ``X``.

    Returns the new parameters. Each BART variable's posterior draw is a
    scalar integer symbol (`tree_draw_symbols`), tagged with the variable: the
    position of the draw in pymc-bart's history (`tree_draw_positions`).
    """
    found = bart_variables(model, params)
    if not found:
        return params
    replacements = {}
    for rv in found:
        outputs = _output_count(rv)
        draw = pt.scalar(rv.name, dtype="int64")
        draw.tag.trees_of = rv
        X = tree_inputs(rv)
        trees = TreeSums(rv.owner.op, rv.name, outputs)(X, draw[None])[0]
        replacements[rv] = trees[0] if rv.type.ndim == 1 else trees
    return replace_rebuilding(params, replacements, keep=model.free_RVs)


def tree_inputs(rv):
    """The BART variable's X, (rows, columns), without the batch axes PyMC adds.

    A NumPy X becomes a constant named ``X_<variable>``, as ``X @ beta`` names
    its array (`pm_sens.graph.model.per_row.numpy_input_names`).
    """
    X = rv.owner.op.dist_params(rv.owner)[0]
    if isinstance(X, Constant):
        return pt.constant(X.data.reshape(X.data.shape[-2:]), name=X.name or f"X_{rv.name}")
    while X.type.ndim > 2:  # a BART variable of shape (outputs, rows) broadcasts X
        X = X[0]
    return X


def _output_count(rv):
    """Sums of trees per row: 1 for a vector, the first axis of ``(outputs, rows)``."""
    if rv.type.ndim == 1:
        return 1
    if rv.type.ndim == 2 and rv.type.shape[0] is not None:
        return rv.type.shape[0]
    raise ValueError(
        f"the BART variable {rv.name!r} has shape {rv.type.shape}; pm_sens evaluates "
        "BART variables with one value per row, or several as (outputs, rows) with "
        "a fixed number of outputs (shape=(2, n))"
    )


def tree_draw_symbols(outputs):
    """The per-draw symbols of `trees_at_points` that ``outputs`` depend on."""
    return [v for v in graph_inputs(outputs) if getattr(v.tag, "trees_of", None) is not None]


def tree_draw_positions(rv, training_X, end_values, draw_numbers):
    """Where each posterior draw of the BART variable ``rv`` sits in pymc-bart's history.

    pymc-bart stores each chain's trees in the order the chains finished, and
    ``idata`` may hold a slice of the draws: each chain of the posterior is
    matched with the history whose trees reproduce its values at the
    training rows ``training_X`` that pymc-bart's sampler saw unmoved
    (`jittered_rows`). ``end_values``: (chain, 2, [outputs,] rows), the values
    of each chain's first and last kept draw; ``draw_numbers``: (draw,), each
    kept draw's number within its chain (`draw_numbers`). Returns (chain ·
    draw,) integer positions, and the share of the end draws' values at all
    training rows that the trees reproduce (1 unless rows were jittered).
    """
    sampler = trees_sampler(rv.owner.op)
    offsets = np.cumsum([0] + [s.n_draws for s in sampler._chain_samplers])
    X = np.ascontiguousarray(training_X, dtype=np.float64)
    unmoved = ~jittered_rows(rv, X)
    positions, shares = [], []
    for chain, values in enumerate(end_values):
        # per history: the share of the two draws' values it reproduces at the
        # unmoved rows (which must be all) and at every row
        agreement = {}
        for start, stop in zip(offsets[:-1], offsets[1:], strict=True):
            if draw_numbers.max() >= stop - start:
                continue
            trees = sampler.sample_posterior(X, (start + draw_numbers[[0, -1]]).tolist(), None)
            same = np.isclose(trees, values.reshape(2, -1, X.shape[0]), rtol=1e-7, atol=1e-9)
            agreement[start] = (same[..., unmoved].mean(), same.mean())
        best = max(agreement, key=agreement.get, default=None)
        if best is None or agreement[best][0] < 1:
            share = 0.0 if best is None else agreement[best][0]
            raise ValueError(_unmatched_chain(rv.name, chain, share))
        positions.append(best + draw_numbers)
        shares.append(agreement[best][1])
    return np.concatenate(positions), min(shares)


def jittered_rows(rv, X):
    """The training rows pymc-bart's sampler moved before growing trees, (rows,) bool.

    bartrs (0.4) adds N(0, (sd/12)²) noise to every repeat of a value in a
    column of whole numbers split by the continuous rule (the default),
    keeping each value's first occurrence: splits fall between the moved
    values and the draws are the trees at them, while pymc-bart evaluates
    the trees at the rows' own values. Only the unmoved rows can be checked
    against the draws.
    """
    rules = list(getattr(rv.owner.op, "split_rules", None) or [])
    rules += ["ContinuousSplit"] * (X.shape[1] - len(rules))
    moved = np.zeros(X.shape[0], dtype=bool)
    for column, rule in zip(X.T, rules, strict=True):
        values = column[~np.isnan(column)]
        if "Continuous" not in str(rule) or np.any(values % 1) or not np.std(values) > 0:
            continue
        first = np.zeros(X.shape[0], dtype=bool)
        first[np.unique(column, return_index=True)[1]] = True
        moved |= ~first & ~np.isnan(column)
    return moved


def _unmatched_chain(name, chain, share):
    """The error for a chain of the posterior whose draws no history of trees reproduces.

    ``share``: the largest share of its values at the training rows that a
    history reproduces.
    """
    return (
        f"the trees pymc-bart holds for the BART variable {name!r} do not reproduce "
        f"idata.posterior[{name!r}] in chain {chain} (at most {share:.0%} of its values "
        "at the training rows). "
        "idata and the model must come from a pm.sample call of this session, with the "
        "training data unchanged since (no pm.set_data); and pymc-bart keeps only the "
        "first chain's trees when the chains are sampled one after another (cores=1): "
        "sample with cores= the number of chains, or pass the chains it holds "
        "(idata.sel(chain=[0]))"
    )


def draw_numbers(draw_coords):
    """Each draw's number within its chain: its ``draw`` coordinate, or its position."""
    coords = np.asarray(draw_coords)
    if coords.dtype.kind in "iu" and (coords >= 0).all():
        return coords.astype(np.int64)
    return np.arange(len(coords))

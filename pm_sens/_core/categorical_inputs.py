"""Categorical inputs: their levels and the points moved to each level.

A group index, a treatment arm, a flag or declared one-hot columns is a
categorical input: it has no derivative, and is compared level by level.
Here: which levels each input has and how often (`Levels`), its values at
new points, the points set to each level, which orders ``alpha`` its
divergences exist for, and which derivative columns it replaces in the
result. The divergences' math is `pm_sens.measures.levels`; their pass over
draws is `pm_sens.local.stacked_passes.level_measures`.
"""

from dataclasses import dataclass, replace

import numpy as np

from pm_sens import families
from pm_sens._core.arguments import as_name_list, is_lazy, warn
from pm_sens._core.points import current_value, feature_columns
from pm_sens.graph.compile.nodes import is_float
from pm_sens.graph.model.queries import data_value, indexed_lengths


@dataclass
class Levels:
    """A categorical input: its levels, how often the points hold each, and their own.

    Sensitivity to it compares the predictive at each point's own level with the
    predictive at the other levels (a level change, not a rate).
    """

    variable: object  # the integer input, or None for declared one-hot columns
    label: str
    levels: np.ndarray  # (L,) the valid values (labels of the one-hot patterns)
    weights: np.ndarray  # (L,) the levels' frequency among the points
    own: np.ndarray  # (N,) position in ``levels`` of each point's own level
    #: one-hot columns: ``(input, column or None for a 1-D input)`` and the
    #: values they take at each level, (L, columns)
    columns: list | None = None
    patterns: np.ndarray | None = None

    @property
    def own_values(self):
        """Each point's level as a number: its value, or its pattern's position."""
        return (self.levels[self.own] if self.columns is None else self.own).astype(float)


def _index_length(predictive, var):
    """The length of what an integer input indexes (its levels 0..n−1), or None."""
    if var not in predictive.indexed_lengths:
        predictive.indexed_lengths[var] = indexed_lengths(predictive.parameter_list, var)
    lengths = predictive.indexed_lengths[var] + [
        len(data_value(base)) for base, index in predictive.group_inputs.values() if index is var
    ]
    return min(lengths) if lengths else None


def _valid_levels(predictive, var, values):
    """Levels of an integer input: 0..n−1 if it indexes, else the values it holds.

    The values it holds in the model's data and at the points.
    """
    length = _index_length(predictive, var)
    if length is not None:
        return np.arange(length)
    return np.unique(np.concatenate([np.asarray(current_value(var, predictive)), values]))


def check_levels(predictive, points):
    """An integer index at the points must be within what it indexes.

    (Out of range, a compiled graph would read other memory, or wrap around.)
    """
    for var in points.per_point:
        if is_float(var) or is_lazy(points.values[var]) or np.ndim(points.values[var]) != 1:
            continue
        _check_index_values(predictive, var, np.asarray(points.values[var]))


def _check_index_values(predictive, var, values):
    length = _index_length(predictive, var)
    bad = values[(values < 0) | (values >= length)] if length is not None else []
    if len(bad):
        raise ValueError(
            f"points[{var.name!r}] holds the level {bad[0].item()!r}, which {var.name!r} "
            f"does not have; valid: 0..{length - 1}, the length of what it indexes"
        )


def resolve_levels(predictive, level_inputs, points):
    """`Levels` of each categorical input at the points (checked by `check_levels`)."""
    out = []
    for var in level_inputs:
        # dask-backed points: the integer column is read once (the levels'
        # frequencies are over all the points), the inputs stay lazy
        values = np.asarray(points.values[var])
        _check_index_values(predictive, var, values)
        levels = _valid_levels(predictive, var, values)
        own = np.searchsorted(levels, values)
        out.append(Levels(var, var.name, levels, _level_weights(own, len(levels)), own))
    return out


def level_values(points, predictive, level, chosen):
    """Data values for the points as they are, then one copy of them per level.

    ``chosen`` are positions in ``level.levels``. In each copy every point holds
    that level; group-level values read through the index (``u[idx]``) follow it.
    """
    copies = len(chosen) + 1
    values = {
        var: np.concatenate([value] * copies) if var in points.per_point else value
        for var, value in points.values.items()
    }
    if level.columns is not None:
        for j, (var, column) in enumerate(level.columns):
            at_levels = np.repeat(level.patterns[chosen, j], points.n_points)
            target = values[var] if column is None else values[var][:, column]
            target[points.n_points :] = at_levels
        return values
    own = np.asarray(points.values[level.variable])
    chosen = level.levels[chosen]
    codes = np.concatenate([own, np.repeat(chosen, points.n_points)])
    values[level.variable] = codes.astype(level.variable.dtype)
    for copy, (base, index) in predictive.group_inputs.items():
        if index is level.variable:
            values[copy] = data_value(base)[codes]
    return values


def one_hot_levels(points, predictive, inputs, categorical):
    """`Levels` of feature columns declared as one categorical input each.

    ``categorical`` maps a name to the labels of its columns (e.g. one-hot
    columns of a design matrix). Its levels are the distinct rows those
    columns take in the model's data.
    """
    if categorical is None:
        return []
    if not isinstance(categorical, dict):
        raise TypeError(
            f"categorical={categorical!r} is not valid; give a dict {{name: [feature labels]}}"
        )
    owners = feature_columns(points, inputs)
    taken = set()
    out = []
    for name, labels in categorical.items():
        labels = as_name_list(f"categorical[{name!r}]", labels)
        unknown = [label for label in labels if label not in points.features]
        repeated = [label for label in labels if label in taken]
        if unknown or repeated or name in points.features:
            problem = (
                f"names the unknown feature(s) {unknown}"
                if unknown
                else f"repeats {repeated}, already in another group"
                if repeated
                else "is the name of a feature"
            )
            raise ValueError(
                f"categorical[{name!r}] {problem}; valid: columns among {points.features}, "
                "each in one group, under a new name"
            )
        taken |= set(labels)
        columns = [owners[points.features.index(label)] for label in labels]

        def table(values, columns=columns):
            return np.column_stack(
                [values[v] if c is None else values[v][:, c] for v, c in columns]
            )

        data = table({v: np.asarray(current_value(v, predictive)) for v, _ in columns})
        patterns = np.unique(data, axis=0)
        at_points = table(points.values)
        own = np.array([_row_position(patterns, row) for row in at_points])
        if np.any(own < 0):
            row = at_points[np.flatnonzero(own < 0)[0]]
            raise ValueError(
                f"points hold {dict(zip(labels, row.tolist(), strict=True))} in the columns "
                f"of categorical[{name!r}], a combination the model's data does not have; "
                f"valid: {patterns.tolist()}"
            )
        names = np.array([_pattern_label(row, labels) for row in patterns])
        weights = _level_weights(own, len(patterns))
        out.append(Levels(None, name, names, weights, own, columns, patterns))
    return out


def _level_weights(own, n_levels):
    """Each level's frequency among the points; all alike when the points share one."""
    counts = np.bincount(own, minlength=n_levels).astype(float)
    if np.count_nonzero(counts) < 2:
        counts = np.ones(n_levels)
    return counts / counts.sum()


def _row_position(rows, row):
    """Position of ``row`` among ``rows``, or −1."""
    hits = np.flatnonzero(np.all(rows == row, axis=1))
    return int(hits[0]) if hits.size else -1


def _pattern_label(row, labels):
    """A one-hot row by the column that is 1 (``"reference"`` if none), else its values."""
    if set(np.unique(row)) <= {0, 1} and row.sum() <= 1:
        return labels[int(np.argmax(row))] if row.sum() else "reference"
    return ", ".join(f"{label}={value:g}" for label, value in zip(labels, row, strict=True))


#: the families with a closed-form Rényi divergence of any order, for messages
_RENYI_FAMILIES = sorted(
    {f.name for f in families.MOMENT_FAMILIES.values() if f.renyi_divergence and f.renyi_above_one}
)


def levels_for_alpha(ctx, alpha, chosen, family):
    """The context without its categorical inputs if the family lacks a Rényi divergence.

    At ``alpha != 1`` level sensitivity needs the family's Rényi divergence of
    that order (above 1 only closed forms: `pm_sens.families._renyi`); without
    it they are left out with a warning, or, chosen by the user (``inputs=``,
    ``categorical=``) they are an error then.
    """
    if not ctx.levels or alpha == 1:
        return ctx
    if family.renyi_divergence is not None and (alpha < 1 or family.renyi_above_one):
        return ctx
    labels = [level.label for level in ctx.levels]
    why = (
        f"their level sensitivity at alpha={alpha!r} is a Rényi divergence, which pm_sens "
        f"has for every alpha > 0 for the {_RENYI_FAMILIES} families (closed forms), and "
        f"for 0 < alpha < 1 for the others, not for the {family.name!r} one at this alpha"
        " (above 1 its integral can lie outside both laws, where no rule built from them "
        "reaches; its KL, at alpha=1, it has)"
    )
    if chosen or not ctx.inputs:
        raise ValueError(
            f"alpha={alpha!r} is not valid with the categorical inputs {labels}: {why}; "
            "pass alpha=1" + (", or inputs= without them" if ctx.inputs else "")
        )
    warn(f"the categorical inputs {labels} are left out: {why}; pass alpha=1 to rank them")
    return replace(ctx, levels=[])


def rate_pairs_name(level):
    """Where a categorical input's pairs with the continuous inputs are kept."""
    return f"rate_pairs_{level.label}"


def contrast_name(first, second):
    """Where the pair of two categorical inputs is kept."""
    return f"level_pairs_{first.label}_{second.label}"


#: Methods whose value for a categorical input is its level sensitivity; the
#: others (derivatives of the mean, VAR, second order) have none for a level change.
LEVEL_METHODS = ("rsens", "kl")


def shown_columns(ctx):
    """Which derivative columns are features of the result.

    One-hot columns declared as a categorical input are not: the input is.
    """
    grouped = {
        label
        for level in ctx.levels
        if level.columns is not None
        for label in _column_labels(ctx, level)
    }
    return np.array([f not in grouped for f in ctx.points.features], dtype=bool)


def _column_labels(ctx, level):
    """Feature labels of a one-hot group's columns."""
    owners = feature_columns(ctx.points, ctx.inputs)
    return [ctx.points.features[owners.index(column)] for column in level.columns]

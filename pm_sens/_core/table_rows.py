"""A wide table's rows: each row's joint predictive, from its cells.

Given the parameters, the cells of a row are independent: the row's joint
predictive is the product of its cells' and its Fisher information the sum of
theirs. An input moved by the same amount in every cell of a row (a per-row
covariate, or a per-cell one shifted along the row) moves the joint at the
rate ``sqrt(Σ_c R-sens_c²)`` (the same for the KL method and for R-sens2's
pairs), and the row's mixture log density is ``logsumexp_s Σ_c log p(y_c | λ_s)
− log S`` (docs: how_to/wide_tables.md, "A wide observation table").
"""

import numpy as np
import xarray as xr
from scipy import sparse

#: the rows' dim in the results
ROW_DIM = "table_row"
#: sensitivity measures whose squares add over the cells of a row
JOINT_MEASURES = ("rsens", "kl", "rsens2")


def with_row_joints(dataset, ctx):
    """``dataset`` with ``<measure>_row`` for each measure of `JOINT_MEASURES` in it.

    Dims as the cell's measure with the point dim replaced by ``table_row``;
    categorical inputs (the column index) are NaN: a level change of one
    cell's column is not a change of its row.
    """
    row, point_dim = ctx.predictive.table_row, ctx.points.point_dim
    rate = xr.DataArray((dataset["feature_kind"] != "level").values, dims="feature")
    joints = {}
    for name in JOINT_MEASURES:
        if name not in dataset:
            continue
        values = dataset[name]
        if "degenerate" in dataset:  # a cell whose predictive is one value: left out
            values = values.where(~dataset["degenerate"].astype(bool), 0.0)
        squares = (values**2).groupby(row).sum(point_dim)
        joint = np.sqrt(squares).rename({row: ROW_DIM})
        joint = joint.where(rate)
        if "feature_bis" in joint.dims:
            joint = joint.where(rate.rename(feature="feature_bis"))
        joint.attrs = {
            "nan": "the column index (feature_kind 'level') is a cell's, not a row's",
            "of": f"{name} of each row's joint predictive: sqrt of the sum of its cells' squares"
            + (
                " (cells whose predictive is one value left out)"
                if "degenerate" in dataset
                else ""
            ),
        }
        joints[f"{name}_row"] = joint
    return dataset.assign(joints)


def table_rows(ctx):
    """Each point's table row (codes 0..R−1, (N,)) and the rows' labels (R,), or None.

    None unless the points are a wide table's cells.
    """
    if ctx.predictive.table_row is None:
        return None
    var = next(v for v in ctx.points.per_point if v.name == ctx.predictive.table_row)
    labels, codes = np.unique(np.asarray(ctx.points.values[var]), return_inverse=True)
    return codes, labels


def row_indicator(codes, n_rows, copies):
    """Sparse (copies·N, copies·R): evaluation row → its table row within its copy.

    The evaluation rows are ``copies`` copies of the N points, one after another.
    """
    n = len(codes)
    columns = np.tile(codes, copies) + np.repeat(np.arange(copies) * n_rows, n)
    ones = np.ones(n * copies)
    shape = (n * copies, copies * n_rows)
    return sparse.csr_matrix((ones, (np.arange(n * copies), columns)), shape=shape)


def sum_over_rows(log_density, indicator):
    """Per draw, the log densities (S, copies·N) summed over each row's cells (S, copies·R)."""
    return np.asarray(indicator.T @ log_density.T).T

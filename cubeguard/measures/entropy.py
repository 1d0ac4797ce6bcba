"""Entropy of a table and the median entropy over sub-groups.

Shlomo (2009), section 4.1: "For each sub-group z defined by NUTS2*Gender*Banded age groups, the
following table of counts was calculated: Current Activity Status * Occupation * Educational
Attainment * Country of citizenship ... p_z(c) = D_z(c) / sum_c D_z(c) and the entropy:
-sum_c p_z(c) log(p_z(c)). The measure is the median of the entropy across all sub-groups z."
A low entropy means a sub-group's persons sit in few cells (attribute disclosure); protection that
'smooths' counts raises it. Natural logarithms; sub-groups with no persons have no entropy and are
left out of the median.

Examples:
    >>> round(entropy([1, 1, 1, 1]), 6)  # log 4
    1.386294
    >>> entropy([0, 7, 0])
    0.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import xarray as xr
from scipy.special import xlogy

from cubeguard.measures._arrays import BeforeAfter, Counts, check_nonnegative, check_same_cells, count_array, numeric
from cubeguard.measures.errors import MeasureConfigError
from cubeguard.measures.select import check_dims


def _row_entropies(rows: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Entropy of each row's distribution; rows with total 0 are dropped."""
    s = rows.sum(axis=1)
    keep = s > 0
    rows, s = rows[keep], s[keep]
    h: npt.NDArray[np.float64] = np.maximum(np.log(s) - xlogy(rows, rows).sum(axis=1) / s, 0.0)
    return h


def entropy(counts: Counts) -> float:
    """Entropy ``-sum_c p(c) log p(c)`` of a table's cell shares; ``nan`` for an all-zero table.

    Raises:
        NegativeCountError: if a count is negative.
    """
    x = numeric(count_array(counts)).astype(np.float64).reshape(1, -1)
    check_nonnegative(x, "entropy")
    h = _row_entropies(x)
    return float(h[0]) if h.size else math.nan


def median_entropy(table: xr.Dataset | xr.DataArray, group_dims: Sequence[str]) -> float:
    """Median over sub-groups ``z`` (codes on ``group_dims``) of the entropy of ``z``'s table.

    ``table`` is the table to assess (typically the interior of a cube, or a margin); the table of
    sub-group ``z`` has the cells of the other dimensions. ``nan`` when no sub-group has a person.

    Raises:
        MeasureConfigError: if a group dimension is not a dimension of the table.
        NegativeCountError: if a count is negative.
    """
    t = count_array(table)
    if not isinstance(t, xr.DataArray):
        raise MeasureConfigError("median entropy needs a table with named dimensions (a DataArray or a cube)")
    check_dims(t, group_dims, "median entropy groups")
    x = numeric(t.transpose(*group_dims, ...)).astype(np.float64)
    check_nonnegative(x, "entropy")
    n_groups = int(np.prod([t.sizes[d] for d in group_dims], dtype=np.int64))
    h = _row_entropies(x.reshape(n_groups, -1))
    return float(np.median(h)) if h.size else math.nan


def median_entropy_change(
    original: xr.Dataset | xr.DataArray, protected: xr.Dataset | xr.DataArray, group_dims: Sequence[str]
) -> BeforeAfter:
    """:func:`median_entropy` of the original and of the protected table (Shlomo 2009, 4.1)."""
    o, p = count_array(original), count_array(protected)
    if isinstance(o, xr.DataArray) and isinstance(p, xr.DataArray):
        check_same_cells(o, p)
    return BeforeAfter(median_entropy(o, group_dims), median_entropy(p, group_dims))  # type: ignore[arg-type]

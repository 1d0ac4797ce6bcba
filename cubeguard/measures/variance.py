"""Variance-based information loss: variance of the average cell size, one-way ANOVA R².

Handbook on SDC v2, 5.8: "SDC methods will have an impact on the variance of the average cell size
for the rows, columns or the entire table ... Another important variance to examine is the
'between'-variance when carrying out a one-way ANOVA test based on the table ... The goodness of fit
statistic R2 ... is based on the variance of the means between the groupings divided by the total
variance." Both are computed on the original and on the protected table and compared.

Examples:
    >>> import xarray as xr
    >>> t = xr.DataArray([[4, 0], [0, 4]], dims=("REGION", "AGE"))
    >>> anova_r2(t, "AGE")
    1.0
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import xarray as xr

from cubeguard.measures._arrays import BeforeAfter, check_nonnegative, check_same_cells, count_array, numeric
from cubeguard.measures.errors import MeasureConfigError
from cubeguard.measures.select import check_dims


def _table(table: xr.Dataset | xr.DataArray) -> xr.DataArray:
    t = count_array(table)
    if not isinstance(t, xr.DataArray):
        raise MeasureConfigError("this measure needs a table with named dimensions (a DataArray or a cube)")
    return t


def average_cell_size_variance(table: xr.Dataset | xr.DataArray, by: Sequence[str] = ()) -> float:
    """Variance of the average cell size of the rows defined by ``by`` (Handbook on SDC v2, 5.8).

    For every combination of codes on the ``by`` dimensions (a "row"), the average count of its
    cells; then the population variance of these averages. With ``by=()`` the "rows" are the single
    cells, i.e. the variance of the cell counts of the entire table.
    """
    t = _table(table)
    check_dims(t, by, "average cell size variance")
    values = numeric(t).astype(np.float64)
    if values.size == 0:
        return math.nan
    axes = tuple(i for i, d in enumerate(t.dims) if d not in set(by))
    means = values.mean(axis=axes) if by and axes else values
    return float(np.var(means))


def average_cell_size_variance_change(
    original: xr.Dataset | xr.DataArray, protected: xr.Dataset | xr.DataArray, by: Sequence[str] = ()
) -> BeforeAfter:
    """:func:`average_cell_size_variance` of the original and of the protected table."""
    o, p = _table(original), _table(protected)
    check_same_cells(o, p)
    return BeforeAfter(average_cell_size_variance(o, by), average_cell_size_variance(p, by))


def anova_r2(table: xr.Dataset | xr.DataArray, target_dim: str, scores: Mapping[str, float] | None = None) -> float:
    """R² of a one-way ANOVA of a numeric target across the groups of the table's other dimensions.

    Each person counted in cell ``(g, t)`` has the score of target code ``t`` (by default its
    position 0, 1, ... along ``target_dim``, right for ordered classes such as age bands) and
    belongs to group ``g``, the combination of codes on every other dimension. ``R² = SSB / SST``
    with ``SSB = sum_g n_g (mean_g - mean)**2`` and ``SST = sum_persons (score - mean)**2``; ``nan``
    when every person has the same score.

    Raises:
        MeasureConfigError: if ``target_dim`` is not a dimension, or a code has no score.
        NegativeCountError: if a count is negative.
    """
    t = _table(table)
    check_dims(t, [target_dim], "ANOVA target")
    codes = [str(c) for c in t.coords[target_dim].values] if target_dim in t.coords else []
    if scores is None:
        s = np.arange(t.sizes[target_dim], dtype=np.float64)
    else:
        missing = [c for c in codes if c not in scores]
        if missing or not codes:
            raise MeasureConfigError(
                f"ANOVA scores lack code(s) {missing[:5]} of {target_dim!r}; give a score for each"
            )
        s = np.array([scores[c] for c in codes], dtype=np.float64)
    f = numeric(t.transpose(..., target_dim)).astype(np.float64)
    check_nonnegative(f, "ANOVA R²")
    f = f.reshape(-1, s.size)
    n_g = f.sum(axis=1)
    total = n_g.sum()
    if total == 0:
        return math.nan
    sum_g = f @ s
    mean = sum_g.sum() / total
    sst = float((f.sum(axis=0) * (s - mean) ** 2).sum())
    if sst == 0:
        return math.nan
    nz = n_g > 0
    ssb = float((n_g[nz] * (sum_g[nz] / n_g[nz] - mean) ** 2).sum())
    return min(1.0, ssb / sst)


def anova_r2_change(
    original: xr.Dataset | xr.DataArray,
    protected: xr.Dataset | xr.DataArray,
    target_dim: str,
    scores: Mapping[str, float] | None = None,
) -> BeforeAfter:
    """:func:`anova_r2` of the original and of the protected table."""
    o, p = _table(original), _table(protected)
    check_same_cells(o, p)
    return BeforeAfter(anova_r2(o, target_dim, scores), anova_r2(p, target_dim, scores))

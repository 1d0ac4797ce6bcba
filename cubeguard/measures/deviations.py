"""Distribution of deviations by table dimension and by cell size, laid out as in SAFE's report.

Höhne (2011), SAFE - a method for anonymising the German Census, section 3.1:

* Table 3: for each absolute deviation ``|protected - original|`` (rows ``0, 1, ...``), the number
  of table cells by *table dimension* (the number of variables of the table a cell belongs to,
  columns ``1, 2, 3, "4 or 5"``), then per dimension the cumulative percentage of cells with at most
  that deviation, and a last row with all cells;
* Table 4a: per original cell-size class (``1-9``, ``10-99``, ``100-999``, ...) the number of cells
  and the largest deviation;
* Table 4b: per cell-size class the cumulative percentage of cells with a deviation of at most
  ``0, 1, 2, ...``.

Höhne's cell totals of Table 3 and Table 4a are equal and his size classes start at 1, so cells with
an original count of 0 are left out unless ``include_zeros=True`` (then size class ``"0"``).
The table dimension of a cell is the number of cube dimensions on which it is not at the total
(:func:`cubeguard.measures.select.table_dimension`); dimensions ``>= top`` share one column ``"4+"``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt
import pandas as pd
import xarray as xr

from cubeguard.cubes.tree import hierarchies
from cubeguard.measures._arrays import count_array, pair
from cubeguard.measures.errors import MeasureConfigError


class SizeTables(NamedTuple):
    """Höhne (2011) Tables 4a (``cells``: count and maximal deviation) and 4b (``cumulative``)."""

    cells: pd.DataFrame
    cumulative: pd.DataFrame


def _deviations(
    original: xr.Dataset | xr.DataArray, protected: xr.Dataset | xr.DataArray, include_zeros: bool
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    o, p = pair(original, protected)
    if o.dtype.kind != "i" or p.dtype.kind != "i":
        raise MeasureConfigError("deviation tables need integer counts; round the protected cube first")
    keep = np.ones(o.shape, dtype=bool) if include_zeros else o != 0
    return o, np.abs(p - o), keep


def deviation_by_dimension(
    original: xr.Dataset | xr.DataArray,
    protected: xr.Dataset | xr.DataArray,
    *,
    top: int = 4,
    include_zeros: bool = False,
) -> pd.DataFrame:
    """Höhne (2011) Table 3: cells by deviation and table dimension, with cumulative percentages.

    Args:
        original: the original cube (all cells, totals included).
        protected: the protected cube with the same cells.
        top: table dimensions ``>= top`` are counted together in column ``f"{top}+"``.
        include_zeros: also count cells whose original count is 0.

    Returns:
        Rows ``0 .. max deviation`` and a last row ``"all"``; columns ``("cells", dim)`` and
        ``("cum_pct", dim)`` (percent of the dimension's cells with at most the row's deviation).
    """
    if top < 1:
        raise MeasureConfigError(f"top must be at least 1, got {top}")
    o, dev, keep = _deviations(original, protected, include_zeros)
    tdim = np.zeros(o.shape, dtype=np.int64)
    cube = count_array(original)
    if not isinstance(cube, xr.DataArray):
        raise MeasureConfigError("deviation_by_dimension needs cubes with hierarchy coordinates, not plain arrays")
    for axis, h in enumerate(hierarchies(cube).values()):
        shape = [1] * o.ndim
        shape[axis] = -1
        tdim = tdim + (h.parent >= 0).astype(np.int64).reshape(shape)
    group = np.minimum(tdim[keep], top)
    dev_k = dev[keep]
    n_dev = int(dev_k.max()) + 1 if dev_k.size else 1
    cells = np.bincount(dev_k * (top + 1) + group, minlength=n_dev * (top + 1)).reshape(n_dev, top + 1)
    present = _distinct(np.minimum(tdim, top)).tolist()  # every table dimension of the cube
    labels = [f"{g}+" if g == top else str(g) for g in present]
    counts = cells[:, present]
    n = counts.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        cum = np.where(n > 0, np.cumsum(counts, axis=0) / n * 100.0, np.nan)
    pairs = [("cells", lab) for lab in labels] + [("cum_pct", lab) for lab in labels]
    columns = pd.MultiIndex.from_tuples(pairs)
    body = np.hstack([counts.astype(np.float64), cum])
    total = np.concatenate([n.astype(np.float64), np.full(len(labels), np.nan)])
    index = pd.Index([*range(n_dev), "all"], dtype=object, name="deviation")
    out = pd.DataFrame(np.vstack([body, total]), index=index, columns=columns)
    out["cells"] = out["cells"].astype(np.int64)
    return out


def _distinct(values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The distinct values of small integers from -1 up, ascending: ``np.unique`` by counting.

    numpy 2.4's ``np.unique`` takes 0.33 s on a cube of 12M cells of a few values; ``bincount``
    0.01 s (the report's Höhne tables call it twice per cube).
    """
    if values.size == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.bincount(np.asarray(values, dtype=np.int64).ravel() + 1)) - 1


def size_class(counts: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """Decimal size class of each count: 0 for 1-9, 1 for 10-99, ...; -1 for counts below 1."""
    c = np.asarray(counts)
    powers = 10 ** np.arange(19, dtype=np.int64)
    return (np.searchsorted(powers, c, side="right") - 1).astype(np.int64)


def _class_label(k: int) -> tuple[str, int, int]:
    if k < 0:
        return "0", 0, 0
    lo, hi = 10**k, 10 ** (k + 1) - 1
    return f"{lo}-{hi}", lo, hi


def deviation_by_size(
    original: xr.Dataset | xr.DataArray | npt.ArrayLike,
    protected: xr.Dataset | xr.DataArray | npt.ArrayLike,
    *,
    include_zeros: bool = False,
) -> SizeTables:
    """Höhne (2011) Tables 4a and 4b: deviations by the size class of the original count.

    Returns:
        ``cells``: per size class (index ``"1-9"``, ``"10-99"``, ...) the columns ``from``, ``to``,
        ``cells`` and ``max_deviation``; ``cumulative``: per size class the percentage of its cells
        with a deviation of at most ``0, 1, ..., max`` (one column per deviation).
    """
    o, dev, keep = _deviations(original, protected, include_zeros)  # type: ignore[arg-type]
    cls = size_class(o[keep])
    dev_k = dev[keep]
    classes = _distinct(cls)
    n_dev = int(dev_k.max()) + 1 if dev_k.size else 1
    rows, cum_rows, labels = [], [], []
    for k in classes:
        d = dev_k[cls == k]
        label, lo, hi = _class_label(int(k))
        labels.append(label)
        rows.append((lo, hi, d.size, int(d.max())))
        cum_rows.append(np.cumsum(np.bincount(d, minlength=n_dev)) / d.size * 100.0)
    index = pd.Index(labels, name="size")
    cells = pd.DataFrame(rows, index=index, columns=["from", "to", "cells", "max_deviation"], dtype=np.int64)
    cumulative = pd.DataFrame(
        np.array(cum_rows).reshape(len(labels), n_dev), index=index, columns=pd.Index(range(n_dev), name="deviation")
    )
    return SizeTables(cells=cells, cumulative=cumulative)

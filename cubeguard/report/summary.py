"""What the report shows of one original/protected cube pair, reduced so that cubes can be pooled.

A :class:`CubeSummary` holds histograms rather than cells: cells per noise value, cells per distinct
(original, published) pair, and Höhne's deviation tables. All of them add up over cubes
(:func:`pool`), so a programme of many cubes gets pooled plots and tables (Höhne 2011 reports his
over all 430 tables) without keeping any cube in memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr

from cubeguard.measures._arrays import NumArray, numeric, pair
from cubeguard.measures.deviations import SizeTables, deviation_by_dimension, deviation_by_size
from cubeguard.report.errors import ReportError
from cubeguard.report.tables import pool_by_dimension, pool_by_size

_PAIR_COLUMNS = ["original", "protected"]


@dataclass(frozen=True)
class CubeSummary:
    """Histograms of one cube pair (or of many, pooled).

    Attributes:
        cells: number of cells, totals and subtotals included.
        noise: cells per noise value (index), over the cells with an original count of at least 1.
        noise_small: the same over the cells whose original count is one of ``small_values``.
        small_values: the original counts that make a cell small (Shlomo 2009, 4.1: 1 and 2).
        pairs: cells per distinct pair of counts; columns ``original``, ``protected``, ``cells``.
        by_dimension: Höhne (2011) Table 3 (see :func:`deviation_by_dimension`).
        by_size: Höhne (2011) Tables 4a and 4b (see :func:`deviation_by_size`).
    """

    cells: int
    noise: pd.Series
    noise_small: pd.Series
    small_values: tuple[int, ...]
    pairs: pd.DataFrame
    by_dimension: pd.DataFrame
    by_size: SizeTables


def _value_counts(values: NumArray) -> pd.Series:
    """Cells per value, sorted by value, as int64 (histograms over a small integer range)."""
    if values.dtype.kind in "iu" and values.size and int(values.max()) - int(values.min()) < 4 * values.size + 1024:
        lo = int(values.min())
        counts = np.bincount((values - lo).astype(np.int64))
        seen = np.flatnonzero(counts)
        return pd.Series(counts[seen], index=pd.Index(seen + lo, name="noise"), name="cells", dtype=np.int64)
    uniq, counts = np.unique(values, return_counts=True)
    return pd.Series(counts, index=pd.Index(uniq, name="noise"), name="cells", dtype=np.int64)


def _noise(protected: xr.Dataset | xr.DataArray, o: NumArray, p: NumArray) -> NumArray:
    """The step's recorded ``noise`` when the protected cube has one, else the deviation ``p - o``."""
    if isinstance(protected, xr.Dataset) and "noise" in protected.data_vars:
        return numeric(protected["noise"].values)
    return p - o


def _pair_counts(o: NumArray, p: NumArray) -> pd.DataFrame:
    """Cells per distinct (original, protected) pair, sorted by both: columns ``original``, ``protected``, ``cells``.

    One integer key per cell, ``original * width + (noise - lowest noise)``, counted with numpy's
    hashing ``unique``: the noise spans a few values, so the keys order the pairs as (original,
    protected) do. On the EU programme's 119 cubes: 0.8 s against 4.2 s for pandas' ``value_counts``.
    """
    if o.dtype.kind not in "iu" or p.dtype.kind not in "iu" or not o.size:
        flat = pd.DataFrame({"original": o.ravel(), "protected": p.ravel()})
        pairs = flat.value_counts(sort=False).rename("cells").sort_index().reset_index()
        return pairs.assign(cells=pairs["cells"].astype(np.int64))
    o64, noise = o.ravel().astype(np.int64), p.ravel().astype(np.int64) - o.ravel().astype(np.int64)
    low = int(noise.min())
    width = int(noise.max()) - low + 1
    keys, cells = np.unique(o64 * width + (noise - low), return_counts=True)
    original = keys // width
    protected = original + keys % width + low
    return pd.DataFrame(
        {"original": original.astype(o.dtype), "protected": protected.astype(p.dtype), "cells": cells.astype(np.int64)}
    )


def summarise(
    original: xr.Dataset | xr.DataArray, protected: xr.Dataset | xr.DataArray, *, small_values: Sequence[int] = (1, 2)
) -> CubeSummary:
    """Reduce an original/protected pair to the histograms of the report (load the cubes first).

    Raises:
        CubeMismatchError: if the cubes have different cells.
        MeasureConfigError: if a count is not an integer (the deviation tables need integers).
    """
    o, p = pair(original, protected)
    noise = _noise(protected, o, p)
    if noise.shape != o.shape:
        raise ReportError(f"the protected cube's noise has shape {noise.shape} but its counts {o.shape}")
    positive = o >= 1
    small = np.isin(o, np.asarray(small_values, dtype=o.dtype))
    return CubeSummary(
        cells=int(o.size),
        noise=_value_counts(noise[positive]),
        noise_small=_value_counts(noise[small]),
        small_values=tuple(int(v) for v in small_values),
        pairs=_pair_counts(o, p),
        by_dimension=deviation_by_dimension(original, protected),
        by_size=deviation_by_size(original, protected),
    )


def _add(series: Iterable[pd.Series]) -> pd.Series:
    out = pd.concat(list(series)).groupby(level=0).sum().sort_index()
    return out.astype(np.int64).rename("cells").rename_axis("noise")


def pool(summaries: Iterable[CubeSummary]) -> CubeSummary:
    """One summary of many cubes: every histogram and table added up.

    Raises:
        ReportError: if there is no summary, or the summaries count different values as small.
    """
    items = list(summaries)
    if not items:
        raise ReportError("pool needs at least one cube summary")
    smalls = {s.small_values for s in items}
    if len(smalls) > 1:
        raise ReportError(f"cube summaries count different values as small: {sorted(smalls)}; summarise them alike")
    pairs = pd.concat([s.pairs for s in items]).groupby(_PAIR_COLUMNS, sort=True)["cells"].sum().reset_index()
    return CubeSummary(
        cells=sum(s.cells for s in items),
        noise=_add(s.noise for s in items),
        noise_small=_add(s.noise_small for s in items),
        small_values=items[0].small_values,
        pairs=pairs,
        by_dimension=pool_by_dimension([s.by_dimension for s in items]),
        by_size=pool_by_size([s.by_size for s in items]),
    )

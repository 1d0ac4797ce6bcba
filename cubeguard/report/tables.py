"""Höhne's deviation tables pooled over many cubes, and in long form for Parquet.

Höhne (2011), SAFE - a method for anonymising the German Census, section 3.1, reports Tables 3, 4a
and 4b over all 430 controlled tables of the census at once. The per-cube tables come from
:mod:`cubeguard.measures.deviations`; this module adds them up: cell counts add, the cumulative
percentages are recomputed from the pooled counts (Table 4b's per-deviation counts are recovered
exactly from its percentages and the class totals, since both come from integers).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pandas as pd

from cubeguard.errors import InternalError
from cubeguard.measures.deviations import SizeTables
from cubeguard.report.errors import ReportError


def _dimension_key(label: str) -> int:
    return int(label.rstrip("+"))


def _dimension_counts(table: pd.DataFrame) -> tuple[list[str], npt.NDArray[np.int64]]:
    """Table 3's column labels and its cell counts (deviations by table dimensions), without ``"all"``."""
    if table.index[-1] != "all":
        raise InternalError("a Table 3 from deviation_by_dimension ends with the row 'all'")
    top = table.columns.get_level_values(0)
    labels = [str(c) for c in table.columns.get_level_values(1)[top == "cells"]]
    return labels, table.to_numpy()[:-1, np.flatnonzero(top == "cells")].astype(np.int64)


def pool_by_dimension(tables: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Add up Höhne (2011) Table 3 of several cubes, laid out as :func:`deviation_by_dimension`.

    Raises:
        ReportError: if ``tables`` is empty.
    """
    if not tables:
        raise ReportError("pool_by_dimension needs at least one table")
    parts = [_dimension_counts(t) for t in tables]
    labels = sorted({lab for labs, _ in parts for lab in labs}, key=_dimension_key)
    column = {lab: k for k, lab in enumerate(labels)}
    n_dev = max(max(c.shape[0] for _, c in parts), 1)
    values = np.zeros((n_dev, len(labels)), dtype=np.int64)
    for labs, counts in parts:
        values[: counts.shape[0], [column[lab] for lab in labs]] += counts
    n = values.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        cum = np.where(n > 0, np.cumsum(values, axis=0) / n * 100.0, np.nan)
    columns = pd.MultiIndex.from_tuples([("cells", lab) for lab in labels] + [("cum_pct", lab) for lab in labels])
    body = np.hstack([values.astype(np.float64), cum])
    total = np.concatenate([n.astype(np.float64), np.full(len(labels), np.nan)])
    index = pd.Index([*range(n_dev), "all"], dtype=object, name="deviation")
    out = pd.DataFrame(np.vstack([body, total]), index=index, columns=columns)
    out["cells"] = out["cells"].astype(np.int64)
    return out


def _exact_counts(tables: SizeTables) -> npt.NDArray[np.int64]:
    cells = tables.cells["cells"].to_numpy(np.float64)[:, None]
    cum = np.rint(tables.cumulative.to_numpy(np.float64) / 100.0 * cells).astype(np.int64)
    exact: npt.NDArray[np.int64] = np.diff(cum, axis=1, prepend=0) if cum.size else cum
    return exact


def size_counts(tables: SizeTables) -> pd.DataFrame:
    """Cells per size class (rows) and exact absolute deviation (columns), from Tables 4a and 4b."""
    return pd.DataFrame(_exact_counts(tables), index=tables.cumulative.index, columns=tables.cumulative.columns)


def pool_by_size(tables: Sequence[SizeTables]) -> SizeTables:
    """Add up Höhne (2011) Tables 4a and 4b of several cubes, laid out as :func:`deviation_by_size`.

    Raises:
        ReportError: if ``tables`` is empty.
    """
    if not tables:
        raise ReportError("pool_by_size needs at least one pair of tables")
    bounds: dict[str, tuple[int, int]] = {}
    for t in tables:
        bounds.update(
            zip(t.cells.index, zip(t.cells["from"].tolist(), t.cells["to"].tolist(), strict=True), strict=True)
        )
    labels = sorted(bounds, key=lambda lab: bounds[lab][0])
    row = {lab: k for k, lab in enumerate(labels)}
    n_dev = max(max(t.cumulative.shape[1] for t in tables), 1)
    exact = np.zeros((len(labels), n_dev), dtype=np.int64)
    max_dev = np.zeros(len(labels), dtype=np.int64)
    for t in tables:
        rows = [row[lab] for lab in t.cells.index]
        counts = _exact_counts(t)
        exact[np.ix_(rows, range(counts.shape[1]))] += counts
        max_dev[rows] = np.maximum(max_dev[rows], t.cells["max_deviation"].to_numpy(np.int64))
    n = exact.sum(axis=1)
    index = pd.Index(labels, name="size")
    cells = pd.DataFrame(
        {
            "from": [bounds[lab][0] for lab in labels],
            "to": [bounds[lab][1] for lab in labels],
            "cells": n,
            "max_deviation": max_dev,
        },
        index=index,
        dtype=np.int64,
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        cum = np.cumsum(exact, axis=1) / n[:, None] * 100.0
    cumulative = pd.DataFrame(cum, index=index, columns=pd.Index(range(n_dev), name="deviation"))
    return SizeTables(cells=cells, cumulative=cumulative)


def long_by_dimension(table: pd.DataFrame) -> pd.DataFrame:
    """Table 3 as one row per table dimension and deviation (columns as Parquet can store them)."""
    labels, counts = _dimension_counts(table)
    n = counts.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        cum = np.where(n > 0, np.cumsum(counts, axis=0) / n * 100.0, np.nan)
    n_dev = counts.shape[0]
    return pd.DataFrame(
        {
            "table_dimension": np.repeat(np.asarray(labels, dtype=object), n_dev),
            "deviation": np.tile(np.arange(n_dev, dtype=np.int64), len(labels)),
            "cells": counts.T.ravel(),
            "cum_pct": cum.T.ravel(),
        }
    )


def long_cumulative(tables: SizeTables) -> pd.DataFrame:
    """Table 4b as one row per size class and deviation."""
    cum = tables.cumulative
    return pd.DataFrame(
        {
            "size": np.repeat(np.asarray(cum.index, dtype=object), len(cum.columns)),
            "deviation": np.tile(np.asarray(cum.columns, dtype=np.int64), len(cum.index)),
            "cum_pct": cum.to_numpy(np.float64).ravel(),
        }
    )

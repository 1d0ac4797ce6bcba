"""The facts :mod:`cubeguard.gates` found on one cube, as the compact frame Great Expectations validates.

One frame per cube (one GX validation, one Data Docs page), a few hundred rows however large the cube,
in up to three tables told apart by the ``table`` column:

* ``published_values``: one row per distinct published value (``published``) up to the largest
  forbidden value, with its number of ``cells``, and one row (``above`` true) for the cells above it,
  ``published`` holding the smallest of their values; the forbidden-values expectation counts the
  cells whose value is forbidden (and refuses a forbidden value hidden in the row above);
* ``small_cells``: one row per small value (``original``) with its ``cells`` and the ``unchanged``
  ones; the small-cells expectation takes the share of the values it is told are small;
* ``additivity``: one row per dimension and code with children along it (``dimension``, ``parent``)
  with its ``cells``, the ``non_additive`` ones, the largest gap, and the sums of the parent's cells
  and of its children's cells; the additivity expectation adds up the violations and checks that a
  group reported additive has equal sums.

Numbers are nullable ``Int64`` (exact), absent where a column does not belong to a row's table.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd

from cubeguard.gates import CubeGateResult

TABLE = "table"
PUBLISHED_VALUES = "published_values"
SMALL_CELLS = "small_cells"
ADDITIVITY = "additivity"
PUBLISHED = "published"
ORIGINAL = "original"
EXAMPLE_SEPARATOR = "\n"
_GROUP_INTS = (
    "children",
    "cells",
    "new_cells",
    "non_additive",
    "new_non_additive",
    "max_gap",
    "parent_total",
    "children_total",
)
_INTS = (PUBLISHED, ORIGINAL, "unchanged", *_GROUP_INTS)


def rows(frame: pd.DataFrame, table: str) -> pd.DataFrame:
    """The rows of one table of a facts frame."""
    return frame[frame[TABLE] == table]


def cube_frame(result: CubeGateResult) -> pd.DataFrame:
    """The facts frame of one cube (see the module docstring).

    Examples:
        >>> import numpy as np, xarray as xr
        >>> from cubeguard.config.models import GateSpec
        >>> from cubeguard.gates import evaluate_cube
        >>> cube = xr.Dataset(
        ...     {"count": (["S"], np.array([5, 2, 4]))},
        ...     coords={"S": ["0", "1", "2"], "S.parent": ("S", ["", "0", "0"]), "S.depth": ("S", [0, 1, 1])},
        ... )
        >>> frame = cube_frame(evaluate_cube(cube, cube, {}, GateSpec(forbidden_values=[1]), additivity=True))
        >>> frame["table"].tolist()
        ['published_values', 'additivity']
        >>> frame[["published", "cells", "above", "non_additive"]].values.tolist()
        [[2, 3, True, <NA>], [<NA>, 1, <NA>, 1]]
    """
    tables: list[dict[str, npt.ArrayLike]] = []
    if result.forbidden is not None:
        f = result.forbidden
        listed = f.values <= max(f.forbidden)
        values, counts, above = f.values[listed], f.counts[listed], np.zeros(int(listed.sum()), dtype=bool)
        if not listed.all():
            values = np.append(values, f.values[~listed][0])
            counts = np.append(counts, f.counts[~listed].sum())
            above = np.append(above, True)
        tables.append({TABLE: PUBLISHED_VALUES, PUBLISHED: values, "cells": counts, "above": above})
    if result.small_cells is not None:
        s = result.small_cells
        tables.append({TABLE: SMALL_CELLS, ORIGINAL: s.values, "cells": s.cells, "unchanged": s.unchanged})
    if result.additivity is not None and result.additivity.groups:
        groups = result.additivity.groups
        table: dict[str, npt.ArrayLike] = {TABLE: ADDITIVITY}
        table |= {c: [getattr(g, c) for g in groups] for c in _GROUP_INTS}
        table |= {"dimension": [g.dim for g in groups], "parent": [g.parent for g in groups]}
        table["examples"] = [EXAMPLE_SEPARATOR.join(g.examples) for g in groups]
        tables.append(table)
    return _frame(tables)


def _frame(tables: list[dict[str, npt.ArrayLike]]) -> pd.DataFrame:
    """Stack tables of named columns; absent numbers are NA, absent texts None (built column-wise)."""
    sizes = [len(next(np.atleast_1d(v) for k, v in t.items() if k != TABLE)) for t in tables]
    columns: dict[str, object] = {
        TABLE: np.array([t[TABLE] for t, n in zip(tables, sizes, strict=True) for _ in range(n)], dtype=object)
    }
    for name in (*_INTS, "above"):
        kind = bool if name == "above" else np.int64
        parts = [np.asarray(t.get(name, np.zeros(n)), dtype=kind) for t, n in zip(tables, sizes, strict=True)]
        mask = [np.full(n, name not in t) for t, n in zip(tables, sizes, strict=True)]
        data, missing = np.concatenate([np.zeros(0, dtype=kind), *parts]), np.concatenate([np.zeros(0, bool), *mask])
        array = pd.arrays.BooleanArray if name == "above" else pd.arrays.IntegerArray
        columns[name] = array(data, missing)
    for name in ("dimension", "parent", "examples"):
        parts = [np.asarray(t.get(name, [None] * n), dtype=object) for t, n in zip(tables, sizes, strict=True)]
        columns[name] = np.concatenate([np.zeros(0, dtype=object), *parts])
    return pd.DataFrame(columns, copy=False)

"""The facts :mod:`cubeguard.gates` found on one cube, as the compact frame Great Expectations validates.

One frame per cube (one GX validation, one Data Docs page), a few hundred rows however large the cube,
in up to three tables told apart by the ``table`` column:

* ``published_values``: one row per distinct published value (``published``) with its number of
  ``cells``; the forbidden-values expectation counts the cells whose value is forbidden;
* ``small_cells``: one row per small value (``original``) with its ``cells`` and the ``unchanged``
  ones; the small-cells expectation takes the share of the values it is told are small;
* ``additivity``: one row per dimension and code with children along it (``dimension``, ``parent``)
  with its ``cells``, the ``non_additive`` ones, the largest gap, and the sums of the parent's cells
  and of its children's cells; the additivity expectation adds up the violations and checks that a
  group reported additive has equal sums.

Numbers are nullable ``Int64`` (exact), absent where a column does not belong to a row's table.
"""

from __future__ import annotations

import pandas as pd

from cubeguard.gates import CubeGateResult

TABLE = "table"
PUBLISHED_VALUES = "published_values"
SMALL_CELLS = "small_cells"
ADDITIVITY = "additivity"
PUBLISHED = "published"
ORIGINAL = "original"
EXAMPLE_SEPARATOR = "\n"
_INTS = (
    PUBLISHED,
    ORIGINAL,
    "cells",
    "unchanged",
    "children",
    "new_cells",
    "non_additive",
    "new_non_additive",
    "max_gap",
    "parent_total",
    "children_total",
)


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
        ['published_values', 'published_values', 'published_values', 'additivity']
        >>> frame[["published", "cells", "non_additive"]].sum().tolist()
        [11, 4, 1]
    """
    records: list[dict[str, object]] = []
    if result.forbidden is not None:
        f = result.forbidden
        records += [
            {TABLE: PUBLISHED_VALUES, PUBLISHED: int(v), "cells": int(c)}
            for v, c in zip(f.values.tolist(), f.counts.tolist(), strict=True)
        ]
    if result.small_cells is not None:
        s = result.small_cells
        records += [
            {TABLE: SMALL_CELLS, ORIGINAL: v, "cells": n, "unchanged": u}
            for v, n, u in zip(s.values, s.cells, s.unchanged, strict=True)
        ]
    if result.additivity is not None:
        records += [
            {
                TABLE: ADDITIVITY,
                "dimension": g.dim,
                "parent": g.parent,
                "children": g.children,
                "cells": g.cells,
                "new_cells": g.new_cells,
                "non_additive": g.non_additive,
                "new_non_additive": g.new_non_additive,
                "max_gap": g.max_gap,
                "parent_total": g.parent_total,
                "children_total": g.children_total,
                "examples": EXAMPLE_SEPARATOR.join(g.examples),
            }
            for g in result.additivity.groups
        ]
    columns = [TABLE, *_INTS, "dimension", "parent", "examples"]
    frame = pd.DataFrame.from_records(records, columns=columns)
    return frame.astype({c: "Int64" for c in _INTS} | {TABLE: object, "dimension": object, "parent": object})

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
        ['published_values', 'additivity']
        >>> frame[["published", "cells", "above", "non_additive"]].values.tolist()
        [[2, 3, True, <NA>], [<NA>, 1, <NA>, 1]]
    """
    tables: list[pd.DataFrame] = []
    if result.forbidden is not None:
        f = result.forbidden
        listed = f.values <= max(f.forbidden)
        table = pd.DataFrame({TABLE: PUBLISHED_VALUES, PUBLISHED: f.values[listed], "cells": f.counts[listed]})
        table["above"] = False
        if not listed.all():
            rest = {TABLE: PUBLISHED_VALUES, PUBLISHED: f.values[~listed][0], "cells": f.counts[~listed].sum()}
            table = pd.concat([table, pd.DataFrame([{**rest, "above": True}])], ignore_index=True)
        tables.append(table)
    if result.small_cells is not None:
        s = result.small_cells
        columns = {TABLE: SMALL_CELLS, ORIGINAL: list(s.values), "cells": list(s.cells), "unchanged": list(s.unchanged)}
        tables.append(pd.DataFrame(columns))
    if result.additivity is not None and result.additivity.groups:
        groups = result.additivity.groups
        ints = ("children", "cells", "new_cells", "non_additive", "new_non_additive", "max_gap")
        columns = {TABLE: ADDITIVITY, "dimension": [g.dim for g in groups], "parent": [g.parent for g in groups]}
        columns |= {c: [getattr(g, c) for g in groups] for c in (*ints, "parent_total", "children_total")}
        columns["examples"] = [EXAMPLE_SEPARATOR.join(g.examples) for g in groups]
        tables.append(pd.DataFrame(columns))
    if not tables:
        tables.append(pd.DataFrame({TABLE: pd.Series([], dtype=object)}))
    frame = pd.concat([t.astype({c: "Int64" for c in _INTS if c in t.columns}) for t in tables], ignore_index=True)
    frame = frame.reindex(columns=[TABLE, *_INTS, "above", "dimension", "parent", "examples"])
    return frame.astype(
        {c: "Int64" for c in _INTS} | {TABLE: object, "above": "boolean", "dimension": object, "parent": object}
    )

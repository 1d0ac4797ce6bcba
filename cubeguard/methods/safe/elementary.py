"""The elementary table of SAFE: the microdata recoded to their finest published categories.

Höhne (2011, section 2) starts from microdata whose variables are recoded to the most detailed level
intended for publication. Here a variable is a microdata column and its finest categories are the
coarsest partition of its raw values that every breakdown of the column refines into: two raw
values fall in one category when every breakdown puts them in the same bottom code (values outside
every breakdown form one category too). The elementary table holds one cell per combination of
categories that occurs, with its count of records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa

from cubeguard.cubes.encode import column_positions
from cubeguard.cubes.hierarchy import Breakdown

IntArray = npt.NDArray[np.int64]


#: The prefix of a SAFE variable that is a population's membership, not a column.
POPULATION = "population "


@dataclass(frozen=True)
class Elementary:
    """The elementary table and where every record lies in it.

    Attributes:
        columns: the SAFE variables, in the order of ``cats``' columns: microdata columns, then
            ``"population <name>"`` for each population a controlled table counts other than all
            persons (its members and the others; records never move between them).
        cats: per elementary cell, its category of every variable.
        counts: per elementary cell, its records.
        cell: per record, its elementary cell.
        positions: per breakdown id (or ``"population <name>"``), per category of its variable, the
            bottom position (-1: outside; a population has one position, 0, for its members).
    """

    columns: tuple[str, ...]
    cats: IntArray
    counts: IntArray
    cell: IntArray
    positions: dict[str, IntArray]

    @property
    def fixed(self) -> npt.NDArray[np.bool_]:
        """Per variable, whether moves must keep it (population memberships)."""
        return np.array([c.startswith(POPULATION) for c in self.columns], dtype=bool)

    @property
    def moved_columns(self) -> tuple[str, ...]:
        """The microdata columns a move may change."""
        return tuple(c for c in self.columns if not c.startswith(POPULATION))


def elementary(
    frame: pd.DataFrame, breakdowns: Sequence[Breakdown], members: dict[str, npt.NDArray[np.bool_]]
) -> Elementary:
    """The elementary table of ``frame`` over the columns ``breakdowns`` read and the populations in ``members``."""
    parts: dict[str, list[tuple[str, IntArray]]] = {}
    for bd in breakdowns:
        values = pa.array(frame[bd.column].to_numpy(), from_pandas=True)
        parts.setdefault(bd.column, []).append((bd.id, column_positions(values, bd).astype(np.int64)))
    columns = sorted(parts)
    for name, inside in sorted(members.items()):
        columns.append(POPULATION + name)
        parts[POPULATION + name] = [(POPULATION + name, np.where(inside, 0, -1).astype(np.int64))]
    record_cats = np.empty((len(frame), len(columns)), dtype=np.int64)
    positions: dict[str, IntArray] = {}
    for v, column in enumerate(columns):
        per_key = np.stack([p for _, p in parts[column]])
        rows, inverse = np.unique(per_key.T, axis=0, return_inverse=True)
        record_cats[:, v] = inverse.ravel()
        for b, (key, _) in enumerate(parts[column]):
            positions[key] = rows[:, b].copy()
    cats, cell, counts = _cells(record_cats)
    return Elementary(tuple(columns), cats, counts, cell, positions)


def _cells(record_cats: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    """Distinct rows of ``record_cats`` (sorted), each record's row, and each row's count."""
    n, width = record_cats.shape
    sizes = record_cats.max(axis=0, initial=-1) + 1 if n else np.zeros(width, np.int64)
    if float(np.prod(sizes.astype(np.float64))) < 2.0**62:
        key = np.zeros(n, dtype=np.int64)
        for v in range(width):
            key = key * int(sizes[v]) + record_cats[:, v]
        _, first, inverse, counts = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
        return record_cats[first], inverse.astype(np.int64).ravel(), counts.astype(np.int64)
    cats, inverse, counts = np.unique(record_cats, axis=0, return_inverse=True, return_counts=True)
    return cats.astype(np.int64), inverse.astype(np.int64).ravel(), counts.astype(np.int64)

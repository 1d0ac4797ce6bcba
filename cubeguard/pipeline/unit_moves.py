"""Which interior cell of a cube each record falls in, and the persons a swap moves between cells.

The entropy risk ``r#`` of a swapped table needs the unit transitions ``F#_ij`` of Handbook on SDC
v2, 5.9: the units in cell ``i`` before the swap and in cell ``j`` after. They are read off the
microdata before and after a pre-tabular step, records paired by person id (by row when the data
have none), with the cells of :class:`~cubeguard.cubes.tabulate.Tabulator`: a record's interior
cell is the flat C-order position of its bottom codes, as the tabulation kernels add it.

Only the records whose cell changed need to be kept (:class:`CellMoves`): the others stay, so the
cube before the swap is the cube after it less the arrivals plus the departures (:func:`undo_moves`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa

from cubeguard.cubes.encode import column_positions, population_mask
from cubeguard.cubes.spec import PopulationSpec
from cubeguard.cubes.tabulate import CubePlan
from cubeguard.errors import CubeguardError
from cubeguard.measures.transitions import Transitions, check_transitions, merged, with_stayers

IntArray = npt.NDArray[np.int64]


def interior_cells(
    plan: CubePlan, populations: dict[str, PopulationSpec], household_ref: str | None, batch: pa.RecordBatch
) -> IntArray:
    """Flat interior cell of each record of ``batch`` in the cube (C order of the bottom cells).

    -1 for a record outside the cube's population or with a code outside a classification: the
    records :class:`~cubeguard.cubes.tabulate.Tabulator` does not add to the cube's interior.
    """
    pop = populations[plan.population]
    inside = population_mask(batch, pop.where, household_ref if pop.unit == "households" else None)
    cell = np.zeros(batch.num_rows, dtype=np.int64)
    stride = 1
    for bd in reversed(plan.breakdowns):
        position = column_positions(batch.column(bd.column), bd).astype(np.int64)
        inside &= position >= 0
        cell += position * stride
        stride *= bd.n_bottom
    return np.where(inside, cell, -1)


def paired_rows(before: pd.DataFrame, after: pd.DataFrame, person_id: str | None) -> IntArray:
    """Row of ``after`` holding each person of ``before``: by person id if both have it, else by row.

    Raises:
        CubeguardError: when the person ids do not pair the two frames one to one.
    """
    if person_id is None or person_id not in before or person_id not in after:
        if len(before) != len(after):
            raise CubeguardError("the microdata before and after the swap have different rows; keep every record")
        return np.arange(len(before), dtype=np.int64)
    ids = pd.Index(after[person_id])
    rows = ids.get_indexer(before[person_id]) if ids.is_unique else np.full(len(before), -1)
    if len(before) != len(after) or (rows < 0).any():
        raise CubeguardError(
            f"the person ids in column {person_id!r} do not pair the records before and after the swap; keep them unique"
        )
    return np.asarray(rows, dtype=np.int64)


def unit_transitions(before_cells: IntArray, after_cells: IntArray, cells: int) -> Transitions | None:
    """Persons moving between interior cells (``after_cells`` paired row by row with ``before_cells``).

    ``None`` when a person is in the cube on one side only (the swap moved someone into or out of
    the cube's population): the Handbook's ``F#`` then does not add up to both tables.
    """
    inside = before_cells >= 0
    if not np.array_equal(inside, after_cells >= 0):
        return None
    ones = np.ones(int(inside.sum()), dtype=np.int64)
    return merged(Transitions(before_cells[inside], after_cells[inside], ones), cells)


class CellMoves(NamedTuple):
    """The units a pre-tabular step moved out of their interior cell of one cube, one entry each.

    ``before[n]`` and ``after[n]`` are the flat interior cells of a moved unit before and after the
    step; -1 is outside the cube's population (or its classifications). Units whose cell did not
    change are not listed.
    """

    before: IntArray
    after: IntArray

    @classmethod
    def of_records(cls, before_cells: IntArray, after_cells: IntArray) -> CellMoves:
        """The records (paired row by row) whose cell differs before and after."""
        moved = before_cells != after_cells
        return cls(before_cells[moved], after_cells[moved])

    @classmethod
    def joined(cls, parts: list[CellMoves]) -> CellMoves:
        """The moves of several batches of records as one."""
        empty = np.empty(0, dtype=np.int64)
        return cls(
            np.concatenate([empty, *(p.before for p in parts)]), np.concatenate([empty, *(p.after for p in parts)])
        )

    @property
    def within(self) -> bool:
        """Whether every moved unit is in the cube before and after, so that ``F#`` adds up to both tables."""
        return bool(np.array_equal(self.before >= 0, self.after >= 0))

    def transitions(self) -> Transitions:
        """The moved units as transitions (one unit each); only for moves :attr:`within` the cube."""
        return Transitions(self.before, self.after, np.ones(self.before.size, dtype=np.int64))


def undo_moves(after: IntArray, moves: CellMoves) -> IntArray:
    """The flat interior counts before the step: ``after`` less the arrivals plus the departures."""
    k = after.size
    arrived = np.bincount(moves.after[moves.after >= 0], minlength=k)
    left = np.bincount(moves.before[moves.before >= 0], minlength=k)
    return np.asarray(after.ravel() - arrived + left, dtype=np.int64)


def check_moves(before: IntArray, after: IntArray, moves: CellMoves) -> None:
    """Raise unless ``moves`` turn the interior counts ``before`` into ``after`` (Handbook on SDC v2, 5.9).

    :func:`~cubeguard.measures.transitions.check_transitions` on ``F#``: the moved units and the
    stayers, with one more cell for "outside the cube's population" holding the units that move
    in or out of it. Every stayer count must be non-negative: a cell cannot lose more units than
    it held.

    Raises:
        MeasureConfigError: when the moves do not fit the two tables.
    """
    k = before.size
    i, j = np.where(moves.before < 0, k, moves.before), np.where(moves.after < 0, k, moves.after)
    b = np.append(before.ravel(), np.int64((moves.before < 0).sum()))
    a = np.append(after.ravel(), np.int64((moves.after < 0).sum()))
    check_transitions(with_stayers(Transitions(i, j, np.ones(i.size, dtype=np.int64)), b), b, a)

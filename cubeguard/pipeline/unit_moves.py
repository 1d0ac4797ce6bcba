"""Which interior cell of a cube each record falls in, and the persons a swap moves between cells.

The entropy risk ``r#`` of a swapped table needs the unit transitions ``F#_ij`` of Handbook on SDC
v2, 5.9: the units in cell ``i`` before the swap and in cell ``j`` after. They are read off the
microdata before and after a pre-tabular step, records paired by person id (by row when the data
have none), with the cells of :class:`~cubeguard.cubes.tabulate.Tabulator`: a record's interior
cell is the flat C-order position of its bottom codes, as the tabulation kernels add it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa

from cubeguard.cubes.encode import column_positions, population_mask
from cubeguard.cubes.spec import PopulationSpec
from cubeguard.cubes.tabulate import CubePlan
from cubeguard.errors import CubeguardError
from cubeguard.measures.transitions import Transitions, merged

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

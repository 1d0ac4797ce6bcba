"""Small cells: few original small cells may be published unchanged.

Shlomo (2009), section 4.1: the disclosure risk left in a frequency table is measured by the small
cells (original 1s and 2s) that the protection did not change. The share is that of
:func:`cubeguard.measures.risk.small_cells_unchanged`, taken over every cell of the cube (totals and
subtotals included: a small subtotal discloses as much as a small interior cell), tallied per small
value and slab by slab with :func:`cubeguard.measures.risk.small_cells_tally`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from cubeguard.gates.slabs import IntArray
from cubeguard.measures.risk import small_cells_tally

SMALL_VALUES = (1, 2)


@dataclass(frozen=True)
class SmallCellFacts:
    """What the small-cells check found on one cube.

    Attributes:
        values: the small values, as given.
        cells: per small value, the cells with that original value.
        unchanged: per small value, those of them published unchanged.
    """

    values: tuple[int, ...]
    cells: tuple[int, ...]
    unchanged: tuple[int, ...]

    @property
    def share(self) -> float:
        """Share of the original small cells published unchanged; NaN without small cells."""
        return unchanged_share(sum(self.cells), sum(self.unchanged))


def unchanged_share(cells: int, unchanged: int) -> float:
    """``unchanged / cells``, NaN when ``cells`` is 0 (as :func:`~cubeguard.measures.risk.small_cells_unchanged`)."""
    return unchanged / cells if cells else math.nan


def passes(share: float | None, bound: float) -> bool:
    """The small-cells verdict: the share is at most ``bound``; a cube without small cells passes."""
    return share is None or math.isnan(share) or share <= bound


class SmallCellTally:
    """Small cells and unchanged ones per small value, accumulated over slabs."""

    def __init__(self, values: Iterable[int] = SMALL_VALUES) -> None:
        self.values = tuple(int(v) for v in values)
        self.cells = np.zeros(len(self.values), dtype=np.int64)
        self.unchanged = np.zeros(len(self.values), dtype=np.int64)

    def add(self, original: IntArray, protected: IntArray) -> None:
        """Tally one slab pair."""
        o, p = original.reshape(-1), protected.reshape(-1)
        for i, v in enumerate(self.values):
            n, same = small_cells_tally(o, p, (v,))
            self.cells[i] += n
            self.unchanged[i] += same

    def facts(self) -> SmallCellFacts:
        """The cube's facts."""
        return SmallCellFacts(self.values, tuple(map(int, self.cells)), tuple(map(int, self.unchanged)))

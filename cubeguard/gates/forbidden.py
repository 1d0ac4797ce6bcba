"""Forbidden values: no published cell takes a value the release promises never to publish.

Handbook on SDC v2 (Hundepool et al. 2024), 5.4: a p-table with ``js > 0`` never publishes the counts
``1..js``; a release that promises "no published 1s and 2s" lists them in
``GateSpec.forbidden_values``. Totals are checked too: a published total of 1 discloses as much as an
interior 1. The facts are the distribution of published values (each distinct value and its number
of cells), from which the count of forbidden cells follows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from cubeguard.gates.slabs import IntArray

_DENSE = 1 << 12  # values below this are tallied with bincount, the rest with unique


@dataclass(frozen=True)
class ForbiddenFacts:
    """What the forbidden-values check found on one cube.

    Attributes:
        forbidden: the forbidden values, ascending.
        cells: published cells (totals included) whose value is forbidden.
        values: every distinct published value, ascending.
        counts: the number of cells with each of ``values``.
    """

    forbidden: tuple[int, ...]
    cells: int
    values: IntArray = field(repr=False)
    counts: IntArray = field(repr=False)

    @property
    def passed(self) -> bool:
        """The verdict: no published cell takes a forbidden value."""
        return passes(self.cells)


def passes(cells: int) -> bool:
    """The forbidden-values verdict on a count of offending cells."""
    return cells == 0


def forbidden_cells(values: npt.ArrayLike, counts: npt.ArrayLike, forbidden: Iterable[int]) -> int:
    """Cells whose value is forbidden, from a distribution of published values.

    Examples:
        >>> forbidden_cells([0, 1, 2, 7], [10, 3, 1, 2], [1, 2])
        4
    """
    v, c = np.asarray(values, dtype=np.int64), np.asarray(counts, dtype=np.int64)
    return int(c[np.isin(v, np.fromiter(forbidden, dtype=np.int64))].sum())


class ValueTally:
    """The distribution of published values, accumulated over slabs."""

    def __init__(self) -> None:
        self.dense = np.zeros(_DENSE, dtype=np.int64)
        self.sparse: list[tuple[IntArray, IntArray]] = []

    def add(self, slab: IntArray) -> None:
        """Count the values of one slab."""
        flat = slab.reshape(-1)
        small = (flat >= 0) & (flat < _DENSE)
        if small.all():
            self.dense += np.bincount(flat, minlength=_DENSE)
            return
        self.dense += np.bincount(flat[small], minlength=_DENSE)
        values, counts = np.unique(flat[~small], return_counts=True)
        self.sparse.append((values, counts.astype(np.int64)))

    def distribution(self) -> tuple[IntArray, IntArray]:
        """Distinct values (ascending) and their counts."""
        seen = np.flatnonzero(self.dense)
        values = [seen.astype(np.int64), *(v for v, _ in self.sparse)]
        counts = [self.dense[seen], *(c for _, c in self.sparse)]
        all_values, all_counts = np.concatenate(values), np.concatenate(counts)
        order = np.argsort(all_values, kind="stable")
        all_values, all_counts = all_values[order], all_counts[order]
        if not all_values.size:
            return all_values, all_counts
        starts = np.flatnonzero(np.r_[True, all_values[1:] != all_values[:-1]])
        return all_values[starts], np.add.reduceat(all_counts, starts)

    def facts(self, forbidden: Iterable[int]) -> ForbiddenFacts:
        """The facts for ``forbidden`` (the distribution is kept whatever the forbidden set)."""
        values, counts = self.distribution()
        bad = tuple(sorted({int(v) for v in forbidden}))
        return ForbiddenFacts(bad, forbidden_cells(values, counts, bad), values, counts)

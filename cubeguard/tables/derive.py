"""Tables derived from finer tables already tabulated, instead of another pass over the records.

Counts and key sums add up exactly (integers; key sums modulo 2**64), and so do the sums of a mean's
whole-number column and the key sums of its non-zero records, so a table summed from the
bottom cells of a finer one, one that crosses the same variables at levels that refine the
table's (and maybe more variables, summed out), has the same counts and cell keys as a table
tabulated from the records, hence the same published values. Two selections of one hierarchy
nest code by code, and a coarse bottom code covers a contiguous range of fine bottom codes (both
are in pre-order), so a code of the table, totals included, covers one range of the finer
table's bottom positions per dimension, and deriving the whole table is one pass per dimension
(:func:`cubeguard.tables.expand.gather`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from cubeguard.cubes.hierarchy import Breakdown
from cubeguard.tables.expand import Ranges, gather

#: Additive fields of a table's cells by name (``counts``, ``key_sums``, and for a mean's column
#: ``sums.<column>``, ``nz_key_sums.<column>``): its bottom cells, or (:data:`Full`) every cell, totals included.
Bottoms = Mapping[str, npt.NDArray[Any]]
Full = dict[str, npt.NDArray[Any]]
COUNTS = ("counts", "key_sums")


class Refinements:
    """:func:`refinement` of pairs of breakdowns, computed once per pair (a lookup per table after that)."""

    def __init__(self) -> None:
        self._known: dict[tuple[int, int], npt.NDArray[np.intp] | None] = {}

    def __call__(self, fine: Breakdown, coarse: Breakdown) -> npt.NDArray[np.intp] | None:
        """First fine bottom position of each coarse bottom code, or None."""
        key = (id(fine), id(coarse))
        if key not in self._known:
            self._known[key] = refinement(fine, coarse)
        return self._known[key]


def refinement(fine: Breakdown, coarse: Breakdown) -> npt.NDArray[np.intp] | None:
    """First fine bottom position of each coarse bottom code; None when ``fine`` does not refine ``coarse``."""
    if fine.classification is not coarse.classification:
        return None
    cls = fine.classification
    leaves = np.array([k for k in range(len(cls.codes)) if not cls.children[k]], dtype=np.intp)
    f, c = fine.leaf_bottom[leaves], coarse.leaf_bottom[leaves]
    to_coarse = np.full(fine.n_bottom, -1, dtype=np.int64)
    to_coarse[f] = c
    if (to_coarse[f] != c).any() or (to_coarse < 0).any() or (np.diff(to_coarse) < 0).any():
        return None  # a fine code spans two coarse ones, or the order differs
    starts = np.searchsorted(to_coarse, np.arange(coarse.n_bottom))
    if (starts >= fine.n_bottom).any() or (
        to_coarse[np.minimum(starts, fine.n_bottom - 1)] != np.arange(coarse.n_bottom)
    ).any():
        return None
    return starts


@dataclass(frozen=True)
class Entry:
    """The bottom cells of one tabulated table: its breakdowns and additive fields (:data:`Bottoms`)."""

    breakdowns: tuple[Breakdown, ...]
    fields: Bottoms

    @property
    def cells(self) -> int:
        """Bottom cells."""
        return int(self.fields["counts"].size)


class BottomCache:
    """Bottom cells of tabulated tables, by population and filters, bounded by cells; thread-safe."""

    def __init__(self, cells: int, refines: Refinements) -> None:
        self.cells = cells
        self.refines = refines
        self._entries: OrderedDict[tuple[object, ...], Entry] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    def add(self, scope: tuple[object, ...], bds: list[Breakdown], bottoms: Bottoms) -> None:
        """Keep the bottom cells of ``bds`` tabulated in ``scope`` (population, filters)."""
        key = (scope, tuple(b.id for b in bds))
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = Entry(tuple(bds), bottoms)
            self._held += bottoms["counts"].size
            while self._held > self.cells and len(self._entries) > 1:
                _, old = self._entries.popitem(last=False)
                self._held -= old.cells

    def derive(self, scope: tuple[object, ...], bds: list[Breakdown]) -> Full | None:
        """The table of ``bds`` (margins included) summed from a kept finer table of the same scope, if there is one."""
        with self._lock:
            candidates = [(k, e) for k, e in self._entries.items() if k[0] == scope]
        for key, entry in reversed(candidates):
            plan = plan_from(entry.breakdowns, bds, self.refines)
            if plan is not None:
                with self._lock:
                    if key in self._entries:
                        self._entries.move_to_end(key)
                return expanded(entry, plan, bds, COUNTS)
        return None


def plan_from(
    source: tuple[Breakdown, ...], bds: list[Breakdown], refines: Refinements
) -> list[tuple[int, npt.NDArray[np.intp]]] | None:
    """For each wanted breakdown, the source axis that refines it and its range starts."""
    plan: list[tuple[int, npt.NDArray[np.intp]]] = []
    for bd in bds:
        for axis, src in enumerate(source):
            starts = refines(src, bd)
            if starts is not None and axis not in [a for a, _ in plan]:
                plan.append((axis, starts))
                break
        else:
            return None
    return plan


def expanded(
    entry: Entry, plan: list[tuple[int, npt.NDArray[np.intp]]], bds: list[Breakdown], names: tuple[str, ...]
) -> Full | None:
    """The fields ``names`` of the table of ``bds``, margins included, summed from ``entry`` along ``plan``.

    A code of ``bds[d]`` covers a range of its bottom positions, and each of those a range of the
    source axis's (``starts`` from :func:`plan_from`), so it covers one range of the source's bottom
    positions. None when ``entry`` lacks one of the fields.
    """
    if any(name not in entry.fields for name in names):
        return None
    axes: list[tuple[int, Ranges]] = []
    for (axis, starts), bd in zip(plan, bds, strict=True):
        bounds = np.append(starts, entry.fields["counts"].shape[axis]).astype(np.int64)
        axes.append((axis, (bounds[bd.lo], bounds[bd.hi])))
    return {name: gather(entry.fields[name], axes) for name in names}

"""Linear programs for the cells bounds propagation leaves narrow (tau-ARGUS's audit, HiGHS).

Propagation (:mod:`cubeguard.attack.intervals`) treats one relation at a time; an intruder who
solves ``min`` and ``max`` of a cell over every relation at once may get further (Handbook on SDC
v2, 5.2; Hundepool et al. 2024). Solving the whole cube per cell is out of reach for census
cubes, so each target gets the relations around it, ``hops`` relations deep and at most
``max_cells`` cells: dropping relations only widens an LP's interval, so the result still holds
the original (never a false certainty). The LP relaxation is exact for one- and two-dimensional
hierarchical tables (their constraint matrices are network matrices); in more dimensions its
integer rounding ``[ceil(min), floor(max)]`` is a valid, possibly wider, interval.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence

import numpy as np
import scipy.optimize
import scipy.sparse

from cubeguard.attack.intervals import UNBOUNDED, IntArray, Relations
from cubeguard.errors import InternalError

_TOLERANCE = 1e-6


def refine(lo: IntArray, hi: IntArray, axes: Sequence[Relations], cells: Iterable[int], hops: int = 2,
           max_cells: int = 400, deadline: float = math.inf) -> int:  # fmt: skip
    """Narrow the intervals of ``cells`` (flat C-order indices) in place by LP; returns the cells narrowed.

    Stops at ``deadline`` (``time.monotonic()``); the cells left keep their intervals.
    """
    shape = lo.shape
    index = _RelationIndex(axes)
    narrowed = 0
    for cell in cells:
        if time.monotonic() > deadline:
            break
        if lo.flat[cell] == hi.flat[cell]:
            continue
        variables, rows = _neighbourhood(cell, shape, index, hops, max_cells)
        low, high = _extremes(cell, variables, rows, lo, hi)
        if low > lo.flat[cell] or high < hi.flat[cell]:
            lo.flat[cell], hi.flat[cell] = max(low, lo.flat[cell]), min(high, hi.flat[cell])
            narrowed += 1
    return narrowed


def refine_all(lo: IntArray, hi: IntArray, axes: Sequence[Relations]) -> None:
    """Every cell's interval from one LP over every relation of the cube (small cubes: tests, tiny tables)."""
    cells = list(range(lo.size))
    rows = _all_rows(lo.shape, axes)
    for cell in cells:
        low, high = _extremes(cell, cells, rows, lo, hi)
        lo.flat[cell], hi.flat[cell] = max(low, lo.flat[cell]), min(high, hi.flat[cell])


class _RelationIndex:
    """Per axis: the relation a position is a child in, and the one it is the parent of (-1: none)."""

    def __init__(self, axes: Sequence[Relations]) -> None:
        self.axes = axes
        self.as_child: list[dict[int, int]] = []
        self.as_parent: list[dict[int, int]] = []
        for rel in axes:
            self.as_parent.append({int(p): r for r, p in enumerate(rel.parents)})
            self.as_child.append(
                {int(c): r for r in range(rel.parents.size) for c in rel.kids[rel.ptr[r] : rel.ptr[r + 1]]}
            )

    def relations(self, coords: tuple[int, ...]) -> list[tuple[int, int]]:
        """(axis, relation) pairs that hold the cell at ``coords``."""
        out = []
        for k, c in enumerate(coords):
            for found in (self.as_child[k].get(c), self.as_parent[k].get(c)):
                if found is not None:
                    out.append((k, found))
        return out

    def members(self, k: int, r: int, coords: tuple[int, ...]) -> list[tuple[int, ...]]:
        """The cells of relation ``r`` along axis ``k`` through ``coords``: parent first, then children."""
        rel = self.axes[k]
        positions = [int(rel.parents[r]), *map(int, rel.kids[rel.ptr[r] : rel.ptr[r + 1]])]
        return [(*coords[:k], p, *coords[k + 1 :]) for p in positions]


def _neighbourhood(
    cell: int, shape: tuple[int, ...], index: _RelationIndex, hops: int, max_cells: int
) -> tuple[list[int], list[list[int]]]:
    """Cells and relations (flat members, parent first) within ``hops`` relations of ``cell``."""
    start = tuple(int(x) for x in np.unravel_index(cell, shape))
    seen_cells = {start}
    seen_rows: set[tuple[int, int, tuple[int, ...]]] = set()
    rows: list[list[int]] = []
    frontier = [start]
    for _ in range(hops):
        grown: list[tuple[int, ...]] = []
        for coords in frontier:
            for k, r in index.relations(coords):
                members = index.members(k, r, coords)
                key = (k, r, members[0])
                if key in seen_rows or len(seen_cells | set(members)) > max_cells:
                    continue
                seen_rows.add(key)
                rows.append([int(np.ravel_multi_index(m, shape)) for m in members])
                grown.extend(m for m in members if m not in seen_cells)
                seen_cells.update(members)
        frontier = grown
    return sorted(int(np.ravel_multi_index(c, shape)) for c in seen_cells), rows


def _all_rows(shape: tuple[int, ...], axes: Sequence[Relations]) -> list[list[int]]:
    index = _RelationIndex(axes)
    rows = []
    for k, rel in enumerate(axes):
        for r in range(rel.parents.size):
            for coords in np.ndindex(*shape[:k], 1, *shape[k + 1 :]):
                members = index.members(k, r, tuple(int(x) for x in coords))
                rows.append([int(np.ravel_multi_index(m, shape)) for m in members])
    return rows


def _extremes(cell: int, variables: Sequence[int], rows: Sequence[Sequence[int]], lo: IntArray,
              hi: IntArray) -> tuple[int, int]:  # fmt: skip
    """``[ceil(min), floor(max)]`` of ``cell`` subject to ``rows`` (parent = sum of children) and the bounds."""
    column = {v: n for n, v in enumerate(variables)}
    data, r_idx, c_idx = [], [], []
    for r, members in enumerate(rows):
        for n, m in enumerate(members):
            data.append(1.0 if n == 0 else -1.0)
            r_idx.append(r)
            c_idx.append(column[m])
    a_eq = scipy.sparse.csr_array((data, (r_idx, c_idx)), shape=(len(rows), len(variables)))
    bounds = [(float(lo.flat[v]), None if hi.flat[v] >= UNBOUNDED else float(hi.flat[v])) for v in variables]
    objective = np.zeros(len(variables))
    out = []
    for sign in (1.0, -1.0):
        objective[column[cell]] = sign
        found = scipy.optimize.linprog(objective, A_eq=a_eq, b_eq=np.zeros(len(rows)), bounds=bounds, method="highs")
        if found.status == 3:  # unbounded above
            out.append(UNBOUNDED)
            continue
        if found.status != 0:
            raise InternalError(f"the interval LP of a cell ended with status {found.status} ({found.message}); "
                                "a method's bounds are wrong or this is a bug in cubeguard")  # fmt: skip
        value = sign * float(found.fun)
        out.append(int(np.ceil(value - _TOLERANCE)) if sign > 0 else int(np.floor(value + _TOLERANCE)))
    return out[0], min(out[1], UNBOUNDED)

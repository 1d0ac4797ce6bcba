"""The intruder's system: every cube's intervals, tied by additivity, shared cells and linked populations.

:func:`solve` alternates bounds propagation within each cube (:func:`~cubeguard.attack.intervals.propagate`)
with what ties cubes together, until nothing changes:

* shared cells (with a :class:`~cubeguard.attack.cells.CellIndex`): one set of units published in several cubes of a population has one
  original count, so its intervals intersect (differencing across tables, Handbook on SDC v2, 5.2);
* linked cells (``links``): persons in households of size ``k`` are ``k`` times those households,
  cell by cell of the household variables (the persons-households link of the table service).

Then the cells it leaves narrow get their linear programs (:mod:`cubeguard.attack.lp`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from numba import njit

from cubeguard.attack.cells import CellIndex, CodeBook, CubeView, by_population
from cubeguard.attack.intervals import UNBOUNDED, IntArray, propagate
from cubeguard.attack.lp import refine

FloatArray = npt.NDArray[np.float64]
#: A method's published bounds: (published counts, interior mask) -> (lo, hi), ``hi`` may be inf.
Bounder = Callable[[IntArray, npt.NDArray[np.bool_]], tuple[FloatArray, FloatArray]]


@dataclass(frozen=True)
class Limits:
    """How far the intruder's linear programs go (they are the slow part).

    Attributes:
        lp_width: targets left at most this wide (and not exact) get linear programs.
        lp_cells: at most this many linear programs per cube (the rest keep their propagated interval).
        hops: relations around a target that its linear program holds.
        rounds: at most this many rounds of propagation and merging.
        lp_seconds: at most about this long in linear programs per attack (the rest keep their
            propagated intervals; cubes are taken smallest first).
    """

    lp_width: int = 6
    lp_cells: int = 50
    hops: int = 2
    rounds: int = 30
    lp_seconds: float = 30.0


@dataclass(frozen=True)
class Link:
    """Persons cells of household size ``k`` against households cells: ``persons = k * households``.

    Attributes:
        variable: the household-size variable.
        sizes: its codes that hold one size, with the size.
        persons: the persons population; households: the households population.
    """

    variable: str
    sizes: Mapping[str, int]
    persons: str
    households: str


@dataclass
class Intervals:
    """The intervals of every cube, as the system narrows them."""

    views: Sequence[CubeView]
    lo: list[IntArray] = field(default_factory=list)
    hi: list[IntArray] = field(default_factory=list)


def start(views: Sequence[CubeView], bounds: Mapping[str, Bounder | None]) -> Intervals:
    """Each cell's interval from its published count and its cube's method bounds (none: ``[0, inf)``)."""
    out = Intervals(views)
    for v in views:
        bounder = bounds.get(v.cube)
        if bounder is None:
            lo, hi = np.zeros(v.published.shape), np.full(v.published.shape, np.inf)
        else:
            lo, hi = bounder(v.published, v.interior)
        out.lo.append(np.maximum(np.ceil(np.asarray(lo, dtype=np.float64)), 0).astype(np.int64))
        high = np.asarray(hi, dtype=np.float64)
        out.hi.append(np.where(high >= UNBOUNDED, UNBOUNDED, np.floor(np.minimum(high, UNBOUNDED))).astype(np.int64))
    return out


def solve(state: Intervals, limits: Limits, index: CellIndex | None = None, link: Link | None = None) -> None:
    """Narrow ``state`` in place: propagation, shared cells (with an ``index``), linked cells (``link``), to a fixed point."""
    ties = (
        _Ties.of(state.views, index, link)
        if index is None
        else index.memo(("ties", _ids(state.views), _link_key(link)), lambda: _Ties.of(state.views, index, link))
    )
    for _ in range(limits.rounds):
        for n, v in enumerate(state.views):
            propagate(state.lo[n], state.hi[n], v.axes)
        if not ties.apply(state):
            break


def _ids(views: Sequence[CubeView]) -> tuple[str, ...]:
    return tuple(v.cube for v in views)


def _link_key(link: Link | None) -> tuple[object, ...] | None:
    return None if link is None else (link.variable, link.persons, link.households, tuple(sorted(link.sizes.items())))


def refine_targets(state: Intervals, limits: Limits, deadline: float | None = None) -> None:
    """Linear programs for the small original cells left narrow but not exact (scoring only looks at those).

    Until ``deadline`` (``time.monotonic()``; default ``limits.lp_seconds`` from now).
    """
    deadline = time.monotonic() + limits.lp_seconds if deadline is None else deadline
    for n in sorted(range(len(state.views)), key=lambda k: state.views[k].published.size):
        v = state.views[n]
        if v.original is None or time.monotonic() > deadline:
            continue
        lo, hi = state.lo[n], state.hi[n]
        width = hi - lo
        cells = np.flatnonzero(np.isin(v.original, (1, 2)) & (width > 0) & (width <= limits.lp_width))
        refine(lo, hi, v.axes, cells[: limits.lp_cells].tolist(), hops=limits.hops, deadline=deadline)


@dataclass(frozen=True)
class _Ties:
    """Cells of different cubes with one original (merge groups) or a fixed ratio (links).

    Only the tied cells are gathered each round (``members``: per cube, the flat positions of its
    cells that are tied to a cell of another cube), so a release of many cubes that share few cells
    costs little more than its cubes alone.
    """

    members: list[IntArray]  # per cube, flat positions of its tied cells (the tied array, in order)
    order: IntArray  # positions in the tied array, grouped by key
    starts: IntArray  # first position of each group in ``order``
    pairs: tuple[IntArray, IntArray, IntArray] | None  # (persons, households, k): positions in the tied array

    @classmethod
    def of(cls, views: Sequence[CubeView], index: CellIndex | None, link: Link | None) -> _Ties:
        sizes = [v.published.size for v in views]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        if index is None:
            empty = np.empty(0, dtype=np.int64)
            return cls([empty] * len(views), empty, empty, None)
        keys = index.of_views(views)
        grouped = _shared(keys) if len(views) > 1 else None
        pairs = _link_pairs(views, sizes, link) if link is not None else None
        marked = np.zeros(int(offsets[-1]), dtype=bool)
        for part in [g[0] for g in (grouped,) if g is not None] + [a for a in (pairs or ())[:2]]:
            marked[part] = True
        tied = np.flatnonzero(marked).astype(np.int64)
        del marked
        cut = np.searchsorted(tied, offsets)
        members = [tied[cut[n] : cut[n + 1]] - offsets[n] for n in range(len(views))]
        if grouped is not None:
            order, starts = np.searchsorted(tied, grouped[0]), grouped[1]
        else:
            order, starts = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        if pairs is not None:
            pairs = (np.searchsorted(tied, pairs[0]), np.searchsorted(tied, pairs[1]), pairs[2])
        return cls(members, order.astype(np.int64), starts, pairs)

    def apply(self, state: Intervals) -> bool:
        """Intersect tied intervals once; True if any changed."""
        lo = np.concatenate([a.ravel()[m] for a, m in zip(state.lo, self.members, strict=True)])
        hi = np.concatenate([a.ravel()[m] for a, m in zip(state.hi, self.members, strict=True)])
        new_lo, new_hi = lo.copy(), hi.copy()
        if self.order.size:
            glo = np.maximum.reduceat(lo[self.order], self.starts)
            ghi = np.minimum.reduceat(hi[self.order], self.starts)
            group = np.repeat(np.arange(self.starts.size), np.diff(np.append(self.starts, self.order.size)))
            new_lo[self.order], new_hi[self.order] = glo[group], ghi[group]
        if self.pairs is not None:
            p, h, k = self.pairs
            hlo = np.maximum(new_lo[h], -(-new_lo[p] // k))
            hhi = np.minimum(new_hi[h], np.where(new_hi[p] >= UNBOUNDED, UNBOUNDED, new_hi[p] // k))
            new_lo[h], new_hi[h] = hlo, hhi
            new_lo[p] = np.maximum(new_lo[p], k * hlo)
            new_hi[p] = np.minimum(new_hi[p], np.where(hhi >= UNBOUNDED, UNBOUNDED, k * hhi))
        changed = bool(np.any(new_lo != lo) or np.any(new_hi != hi))
        at = 0
        for n, m in enumerate(self.members):
            state.lo[n].ravel()[m] = new_lo[at : at + m.size]
            state.hi[n].ravel()[m] = new_hi[at : at + m.size]
            at += m.size
        return changed


def _shared(keys: list[IntArray]) -> tuple[IntArray, IntArray] | None:
    """Global flat positions of the cells published in two cubes or more, grouped by cell, and each group's start."""
    flat = np.concatenate(keys)
    order = _counting_order(flat)  # keys are dense: a counting sort, linear in the cells
    ranked = flat[order]
    del flat
    first = np.concatenate([[True], ranked[1:] != ranked[:-1]])
    group = np.cumsum(first) - 1
    size = np.bincount(group)
    keep = size[group] >= 2
    if not keep.any():
        return None
    kept_first = first[keep]
    return order[keep].astype(np.int64), np.flatnonzero(kept_first).astype(np.int64)


@njit(nogil=True, cache=True)
def _counting_order(keys):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Positions of dense non-negative ``keys`` sorted by key, stably (a counting sort)."""
    counts = np.zeros(keys.max() + 2 if keys.size else 1, dtype=np.int64)
    for k in keys:
        counts[k + 1] += 1
    for k in range(1, counts.size):
        counts[k] += counts[k - 1]
    out = np.empty(keys.size, dtype=np.int64)
    for n in range(keys.size):
        out[counts[keys[n]]] = n
        counts[keys[n]] += 1
    return out


def _link_pairs(views: Sequence[CubeView], sizes: list[int], link: Link) -> tuple[IntArray, IntArray, IntArray] | None:
    """Flat positions of (persons cell, households cell, size) with the same codes and a one-size code."""
    book = CodeBook(views, population=False)
    keys = book.keys(views)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    groups = by_population(views)
    if link.variable not in book.ids:
        return None
    size_of = {book.ids[link.variable][c]: k for c, k in link.sizes.items() if c in book.ids[link.variable]}
    found: dict[str, dict[int, int]] = {}
    sizes_at: dict[int, int] = {}
    for pop in (link.persons, link.households):
        table: dict[int, int] = {}
        for v in groups.get(pop, []):
            n = views.index(v)
            codes = book.code_ids(v, link.variable).ravel()
            at = np.flatnonzero(np.isin(codes, list(size_of)))
            for key, pos, code in zip(
                keys[n][at].tolist(), (at + offsets[n]).tolist(), codes[at].tolist(), strict=True
            ):
                table.setdefault(key, pos)
                sizes_at[key] = size_of[code]
        found[pop] = table
    common = sorted(set(found[link.persons]) & set(found[link.households]))
    if not common:
        return None
    p = np.array([found[link.persons][k] for k in common], dtype=np.int64)
    h = np.array([found[link.households][k] for k in common], dtype=np.int64)
    k = np.array([sizes_at[key] for key in common], dtype=np.int64)
    return p, h, k

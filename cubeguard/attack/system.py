"""The intruder's system: every cube's intervals, tied by additivity, shared cells and linked populations.

:func:`solve` alternates bounds propagation within each cube (:func:`~cubeguard.attack.intervals.propagate`)
with what ties cubes together, until nothing changes:

* shared cells (``merge``): one set of units published in several cubes of a population has one
  original count, so its intervals intersect (differencing across tables, Handbook on SDC v2, 5.2);
* linked cells (``links``): persons in households of size ``k`` are ``k`` times those households,
  cell by cell of the household variables (the persons-households link of the table service).

Then the cells it leaves narrow get their linear programs (:mod:`cubeguard.attack.lp`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from cubeguard.attack.cells import CodeBook, CubeView, by_population
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
    """

    lp_width: int = 6
    lp_cells: int = 50
    hops: int = 2
    rounds: int = 30


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


def solve(state: Intervals, limits: Limits, merge: bool = False, link: Link | None = None) -> None:
    """Narrow ``state`` in place: propagation, shared cells (``merge``), linked cells (``link``), to a fixed point."""
    ties = _Ties.of(state.views, merge, link)
    for _ in range(limits.rounds):
        for n, v in enumerate(state.views):
            propagate(state.lo[n], state.hi[n], v.axes)
        if not ties.apply(state):
            break


def refine_targets(state: Intervals, limits: Limits) -> None:
    """Linear programs for the small original cells left narrow but not exact (scoring only looks at those)."""
    for n, v in enumerate(state.views):
        if v.original is None:
            continue
        lo, hi = state.lo[n], state.hi[n]
        width = hi - lo
        cells = np.flatnonzero(np.isin(v.original, (1, 2)) & (width > 0) & (width <= limits.lp_width))
        refine(lo, hi, v.axes, cells[: limits.lp_cells].tolist(), hops=limits.hops)


@dataclass(frozen=True)
class _Ties:
    """Cells of different cubes with one original (merge groups) or a fixed ratio (links)."""

    order: IntArray  # flat positions over all cubes, grouped by key
    starts: IntArray  # first position of each group in ``order``
    sizes: list[int]  # cells per cube, to split the flat arrays
    pairs: tuple[IntArray, IntArray, IntArray] | None  # (persons flat, households flat, k)

    @classmethod
    def of(cls, views: Sequence[CubeView], merge: bool, link: Link | None) -> _Ties:
        sizes = [v.published.size for v in views]
        book = CodeBook(views)
        keys = [book.keys(v).ravel() for v in views]
        pops = sorted({v.population for v in views})
        population = np.concatenate(
            [np.full(s, pops.index(v.population), dtype=np.int64) for s, v in zip(sizes, views, strict=True)]
        )
        if merge and len(views) > 1:
            flat = np.concatenate(keys) * len(pops) + population if keys else np.empty(0, dtype=np.int64)
            order = np.argsort(flat, kind="stable")
            edge = np.flatnonzero(np.diff(flat[order])) + 1
            starts = np.concatenate([[0], edge]).astype(np.int64)
        else:
            order, starts = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        pairs = _link_pairs(views, keys, sizes, link, book) if link is not None else None
        return cls(order.astype(np.int64), starts, sizes, pairs)

    def apply(self, state: Intervals) -> bool:
        """Intersect tied intervals once; True if any changed."""
        lo, hi = np.concatenate([a.ravel() for a in state.lo]), np.concatenate([a.ravel() for a in state.hi])
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
        for n, part in enumerate(np.split(np.arange(lo.size), np.cumsum(self.sizes)[:-1])):
            state.lo[n].ravel()[:] = new_lo[part]
            state.hi[n].ravel()[:] = new_hi[part]
        return changed


def _link_pairs(views: Sequence[CubeView], keys: list[IntArray], sizes: list[int], link: Link,
                book: CodeBook) -> tuple[IntArray, IntArray, IntArray] | None:  # fmt: skip
    """Flat positions of (persons cell, households cell, size) with the same codes and a one-size code."""
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    groups = by_population(views)
    if link.variable not in book.ids:
        return None
    size_of = {book.ids[link.variable][c]: k for c, k in link.sizes.items() if c in book.ids[link.variable]}
    radix = book.radix[link.variable]
    base = len(book.ids[link.variable]) + 1
    found: dict[str, dict[int, int]] = {}
    for pop in (link.persons, link.households):
        table: dict[int, int] = {}
        for v in groups.get(pop, []):
            n = views.index(v)
            at = np.flatnonzero(np.isin((keys[n] // radix) % base, list(size_of)))
            for key, pos in zip(keys[n][at].tolist(), (at + offsets[n]).tolist(), strict=True):
                table.setdefault(key, pos)
        found[pop] = table
    common = sorted(set(found[link.persons]) & set(found[link.households]))
    if not common:
        return None
    p = np.array([found[link.persons][k] for k in common], dtype=np.int64)
    h = np.array([found[link.households][k] for k in common], dtype=np.int64)
    k = np.array([size_of[(key // radix) % base] for key in common], dtype=np.int64)
    return p, h, k

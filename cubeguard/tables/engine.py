"""Answer flexible-table queries from a release's key store, protected on the fly.

A table is tabulated from the key store with the release's classifications (every total and
subtotal, as a cube), then perturbed with the release's cell key step: the same p-table and the
same record keys, so a cell the table shares with a published cube (the same set of records) has
the identical published value (Thompson, Broadfoot and Elazar 2013; Handbook on SDC v2, 5.4). A
mean is published as m-hat / n-hat: the cell's sum perturbed with the cell key method for
magnitudes (R cellKey's ``ck_params_nums``, the step's ``magnitudes``; Gießing 2016) over its
published count, never m / n nor m / n-hat with the exact sum m (Handbook on SDC v2, 5.7). Rules
(Shlomo 2009, section 5) refuse a query first by its form, then by its published values, so a
refusal tells nothing a published table would not.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import xarray as xr

from cubeguard.config.load import Release
from cubeguard.config.tables import TablesSpec
from cubeguard.cubes.hierarchy import Breakdown
from cubeguard.cubes.model import labelled
from cubeguard.cubes.values import magnitude_cells
from cubeguard.errors import CubeguardError, InternalError
from cubeguard.methods.base import BoundsFunction, CellFunction, Magnitude
from cubeguard.tables.crossings import Crossings
from cubeguard.tables.derive import COUNTS, BottomCache, Full, Refinements
from cubeguard.tables.expand import gather, margins
from cubeguard.tables.households import Plan, SizeLink, check_identity, place, size_weights
from cubeguard.tables.kernel import FILTERED, OUTSIDE, empty_uint8, tabulate
from cubeguard.tables.keystore import KeyColumn, KeyStore, source_hash
from cubeguard.tables.means import published_means
from cubeguard.tables.query import TableQuery, TableRefused
from cubeguard.tables.rules import area_problems, check_form, check_values
from cubeguard.tables.values import tabulate_values, with_margins

CACHED_CELLS = 4_000_000  # answers kept for repeated queries, by their cells (about 100 MB)
FINE_CELLS = 500_000  # bottom cells of a table tabulated finer than asked, to derive others from
BOTTOM_CELLS = 16_000_000  # bottom cells kept for deriving (16 bytes each)


@dataclass(frozen=True)
class Answer:
    """A protected table: nothing unprotected.

    Attributes:
        query: what was asked.
        breakdowns: the table's axes, in the query's order.
        count: every cell's published count, totals and subtotals included (pre-order per axis).
        mean: m-hat / n-hat per cell when a mean was asked (NaN where the published count is 0).
        attrs: release id, population, filters and unit.
        withheld: per area withheld by a ``per_area`` query, its position on the first axis and the
            rule it broke; its cells hold 0 here (their published values never leave the engine)
            and are written as missing.
        mean_decimals: the decimals ``mean`` is rounded to (the mean's ``decimals``).
    """

    query: TableQuery
    breakdowns: tuple[Breakdown, ...]
    count: npt.NDArray[np.int64]
    mean: npt.NDArray[np.float64] | None
    attrs: dict[str, object]
    withheld: tuple[tuple[int, str], ...] = ()
    mean_decimals: int | None = None

    @functools.cached_property
    def table(self) -> xr.Dataset:
        """The table as a labelled Dataset (``count``, and ``mean`` when asked), built on first use."""
        data: dict[str, npt.NDArray[Any]] = {"count": self.count}
        if self.mean is not None:
            data["mean"] = self.mean
        return labelled(self.breakdowns, data, self.attrs)


class TableEngine:
    """Checks and answers queries on one release; safe to call from many threads.

    ``protect`` is the release's one post-tabular step on plain arrays (its
    :attr:`~cubeguard.methods.base.CubeMethod.cells`): the cell key method, or random rounding
    with independent margins and cell-key draws (both give a cell the same value in every table
    that holds it).
    """

    def __init__(
        self,
        release: Release,
        store: KeyStore,
        protect: CellFunction,
        release_id: str,
        magnitudes: dict[str, Magnitude] | None = None,
    ) -> None:
        if release.config.tables is None:
            raise CubeguardError(f"{release.path.name} has no 'tables' section; add one to serve flexible tables")
        if store.source_hash != source_hash(release.config):
            raise CubeguardError(
                f"the key store of release {release_id} was written from another version of {release.path.name} "
                "(only its 'tables' rules may change after a release); serve it with the config it was released "
                "with, or release again"
            )
        self.release = release
        self.spec: TablesSpec = release.config.tables
        self.store = store
        self.protect = protect
        self.magnitudes = magnitudes or {}
        self.release_id = release_id
        self.offered: dict[str, Breakdown] = {b: release.breakdowns[b] for b in self.spec.breakdowns}
        self._cache: OrderedDict[tuple[object, ...], Answer | TableRefused] = OrderedDict()
        self._cached_cells = 0
        self._refines = Refinements()  # the engine's breakdowns live as long as it does: ids stay unique
        self._bottoms = BottomCache(BOTTOM_CELLS, self._refines)
        #: columns of means whose perturbation needs only sums: the crossings hold their sums too
        self._summed = sorted({m.column for m in self.spec.means.values() if self._additive(m.column)})
        self.crossings = Crossings(
            self.offered,
            self.spec.max_dimensions,
            self.spec.precompute_cells,
            self._refines,
            store.folder / "crossings",
            COUNTS + tuple(f"{f}.{c}" for c in self._summed for f in ("sums", "nz_key_sums")),
        )
        self.passes = 0  # passes over the records so far
        self._lock = threading.Lock()
        self._link = SizeLink.of(release)
        #: the interval of original counts each published count can come from (set by :func:`.served.open_served`)
        self.bounds: BoundsFunction | None = None
        self._home_masks: dict[str, npt.NDArray[np.uint8]] = {}
        if self._link is not None:
            self._check_link(self._link)

    def answer(self, query: TableQuery) -> Answer:
        """The protected table, or :class:`TableRefused` naming the rule; repeated queries come from a cache."""
        key = query.key()
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
        if found is None:
            found = self._compute(query)
            self._remember(key, found)
        if isinstance(found, TableRefused):
            raise TableRefused(
                found.rule, str(found), found.parameter
            )  # a fresh one: re-raising one object grows its traceback
        return found

    def _remember(self, key: tuple[object, ...], found: Answer | TableRefused) -> None:
        """Keep ``found``, dropping the least recently asked answers beyond :data:`CACHED_CELLS`."""
        with self._lock:
            if key in self._cache:
                return
            self._cache[key] = found
            self._cached_cells += _cells(found)
            while self._cached_cells > CACHED_CELLS and len(self._cache) > 1:
                _, old = self._cache.popitem(last=False)
                self._cached_cells -= _cells(old)

    def build_crossings(self, workers: int = 2) -> None:
        """Tabulate the planned finest crossings of the default population (see :mod:`cubeguard.tables.crossings`)."""
        population = self.spec.populations[0]

        def bottoms(bds: list[Breakdown]) -> Full:
            query = TableQuery(breakdowns=[b.id for b in bds], population=population)
            if not self._summed:
                return dict(zip(COUNTS, self._tabulated(query, bds), strict=True))
            out: Full = {}
            for column in self._summed:
                cells = self._bottom_values(query, bds, column, 0)
                out |= {"counts": cells["counts"], "key_sums": cells["key_sums"]}
                out |= {f"{f}.{column}": cells[f] for f in ("sums", "nz_key_sums")}
            return out

        self.crossings.build(bottoms, workers)

    def derives(self, query: TableQuery) -> bool:
        """Whether some persons cells of ``query`` are household-size multiples of households counts."""
        return self._link is not None and self._link.plan(query, self.offered) is not None

    def tabulate(self, query: TableQuery) -> xr.Dataset:
        """The protected table without the rules (for checks inside cubeguard; never served as is)."""
        return self._protected(query).table

    def _compute(self, query: TableQuery) -> Answer | TableRefused:
        try:
            check_form(query, self.spec, self.offered)
            answer = self._protected(query)
            if query.per_area:
                return _areas_served(answer, area_problems(answer.count, answer.breakdowns, self.spec))
            check_values(answer.count, answer.breakdowns, self.spec)
        except TableRefused as refused:
            return refused
        return answer

    def _protected(self, query: TableQuery) -> Answer:
        bds = [self.offered[b] for b in query.breakdowns]
        cells = self._values(query, bds) if query.mean is not None else None
        counts, key_sums = (cells["counts"], cells["key_sums"]) if cells is not None else self._full(query, bds)
        published = self.protect(counts, key_sums, self.store.key_scale)
        plan = self._link.plan(query, self.offered) if self._link is not None else None
        if plan is not None:
            published = self._derived(query.population, plan, bds, published)
        attrs: dict[str, object] = {
            "key_scale": self.store.key_scale.label,
            "release_id": self.release_id,
            "population": query.population,
            "filters": dict(query.filters),
            "unit": self.release.config.populations[query.population].unit,
        }
        mean = self._mean(str(query.mean), cells, published) if cells is not None else None
        decimals = self.spec.means[str(query.mean)].decimals if mean is not None else None
        return Answer(query, tuple(bds), published, mean, attrs, mean_decimals=decimals)

    def _values(self, query: TableQuery, bds: list[Breakdown]) -> dict[str, npt.NDArray[Any]]:
        """Every cell's count, key sums, sum, extremes and top contributions of the mean's column.

        Summed from a crossing when the perturbation needs only sums (:attr:`Magnitude.additive`)
        and the table is of the default population without filters; otherwise one pass over the records.
        """
        column = self.spec.means[str(query.mean)].column
        magnitude = self._magnitude(str(query.mean))
        if column in self._summed and not query.filters and query.population == self.spec.populations[0]:
            found = self.crossings.derive(bds, (*COUNTS, f"sums.{column}", f"nz_key_sums.{column}"))
            if found is not None:
                return _summed_only(found, column)
        return with_margins(self._bottom_values(query, bds, column, magnitude.top_k), bds)

    def _bottom_values(
        self, query: TableQuery, bds: list[Breakdown], column: str, top_k: int
    ) -> dict[str, npt.NDArray[Any]]:
        """One pass over the records: the bottom cells' magnitude inputs for ``column``."""
        with self._lock:
            self.passes += 1
        return tabulate_values(
            tuple(self._pairs(bds, query.filters)),
            tuple(b.n_bottom for b in bds),
            self._mask(query.population),
            self.store.keys,
            self.store.values[column],
            top_k,
        )

    def _additive(self, column: str) -> bool:
        found = self.magnitudes.get(column)
        return found is not None and found.additive

    def _magnitude(self, name: str) -> Magnitude:
        found = self.magnitudes.get(self.spec.means[name].column)
        if found is None:
            raise InternalError(
                f"mean {name!r} passed the config check without a magnitude perturbation; this is a bug"
            )
        return found

    def _mean(
        self, name: str, cells: dict[str, npt.NDArray[Any]], published: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.float64]:
        """m-hat / n-hat per cell, to the mean's ``decimals``: the perturbed sum over the published count."""
        magnitude, scale = self._magnitude(name), self.store.key_scale
        if magnitude.sums is not None:
            sums = magnitude.sums(cells["counts"], cells["sums"], cells["key_sums"], cells["nz_key_sums"], scale)
        else:
            sums = magnitude.perturb(magnitude_cells(_with_extremes(cells), scale))
        return published_means(sums.reshape(published.shape), published, self.spec.means[name].decimals)

    def _full(self, query: TableQuery, bds: list[Breakdown]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]]:
        """Every cell, totals included: counts and exact key sums.

        The table is summed from a finer one tabulated before when there is one (a crossing
        tabulated when the release was opened, :mod:`cubeguard.tables.crossings`, or a table asked
        before); otherwise it is tabulated at the finest offered levels of its variables (up to
        :data:`FINE_CELLS` bottom cells), kept, and summed from that, so that later tables of the
        same variables at coarser levels, or of fewer of them, need no pass over the records.
        (Tables with a mean are tabulated from the records: :meth:`_values`.)
        """
        scope = (query.population, tuple(sorted(query.filters.items())))
        found = self.crossings.derive(bds) if scope == (self.spec.populations[0], ()) else None
        found = found or self._bottoms.derive(scope, bds)
        if found is None:
            fine = self._finest(bds)
            counts, key_sums = self._tabulated(query, fine)
            self._bottoms.add(scope, fine, {"counts": counts, "key_sums": key_sums})
            same = all(f is b for f, b in zip(fine, bds, strict=True))
            whole: Full = {"counts": margins(counts, bds), "key_sums": margins(key_sums, bds)}
            found = whole if same else self._bottoms.derive(scope, bds)
            if found is None:
                raise InternalError("a table could not be summed from the finer one just tabulated; this is a bug")
        return found["counts"], found["key_sums"]

    def _finest(self, bds: list[Breakdown]) -> list[Breakdown]:
        """The finest offered level of each variable that refines the asked one, within :data:`FINE_CELLS`."""
        fine = []
        for bd in bds:
            options = [o for o in self.offered.values() if self._refines(o, bd) is not None]
            fine.append(max(options, key=lambda o: o.n_bottom))
        return fine if math.prod(b.n_bottom for b in fine) <= FINE_CELLS else bds

    def _tabulated(
        self, query: TableQuery, bds: list[Breakdown]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]]:
        """Counts and key sums of the bottom cells, in one pass over the records."""
        shape = tuple(b.n_bottom for b in bds)
        return self._pass(self._pairs(bds, query.filters), shape, self._mask(query.population))

    def _pairs(
        self, bds: list[Breakdown], filters: dict[str, str], inner: int = 1
    ) -> list[tuple[npt.NDArray[np.uint16], npt.NDArray[np.int64]]]:
        """The kernel's (codes, weights) per axis and filter; ``inner`` cells per bottom cell of ``bds``."""
        shape = tuple(b.n_bottom for b in bds)
        strides = [inner * int(np.prod(shape[d + 1 :], dtype=np.int64)) for d in range(len(bds))]
        pairs = [(self._column(b).codes, _weights(b, self._column(b), s)) for b, s in zip(bds, strides, strict=True)]
        for bid, code in sorted(filters.items()):
            bd = self.offered[bid]
            pairs.append((self._column(bd).codes, _filter_weights(bd, code, self._column(bd))))
        return pairs

    def _pass(
        self,
        pairs: list[tuple[npt.NDArray[np.uint16], npt.NDArray[np.int64]]],
        shape: tuple[int, ...],
        mask: npt.NDArray[np.uint8],
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]]:
        """Counts and key sums of ``mask``'s records by the cells ``pairs`` give."""
        with self._lock:
            self.passes += 1
        counts = np.zeros(shape, dtype=np.int64)
        key_sums = np.zeros(shape, dtype=np.uint64)
        bad = tabulate(tuple(pairs), mask, self.store.keys, counts.reshape(-1), key_sums.reshape(-1))
        if bad:
            raise InternalError(
                f"{bad} record(s) of the key store have codes outside the classification; rerun the release"
            )
        return counts, key_sums

    def _sizes(self, link: SizeLink) -> tuple[list[int | None], tuple[npt.NDArray[np.uint16], npt.NDArray[np.int64]]]:
        """The size column's raw values, and its kernel pair: one cell per raw value, innermost."""
        column = self.store.columns[link.column]
        sizes = [v if isinstance(v, int) else None for v in column.dictionary]
        return sizes, (column.codes, np.arange(len(sizes), dtype=np.int64))

    def _home_mask(self, link: SizeLink, persons: str) -> npt.NDArray[np.uint8]:
        """The households of ``link`` whose members belong to ``persons`` (its filter reads household columns)."""
        with self._lock:
            found = self._home_masks.get(persons)
        if found is None:
            found, theirs = self._mask(link.households), self.store.populations[persons]
            if theirs is not None:
                found = found & theirs if found.size else np.asarray(theirs).copy()
            with self._lock:
                self._home_masks[persons] = found
        return found

    def _check_link(self, link: SizeLink) -> None:
        """Persons by raw size must be size x households: else the derived counts would be wrong."""
        sizes, pair = self._sizes(link)
        for pop in sorted(link.persons):
            persons, _ = self._pass([pair], (len(sizes),), self._mask(pop))
            households, _ = self._pass([pair], (len(sizes),), self._home_mask(link, pop))
            check_identity(link, pop, persons, households, sizes)

    def _derived(
        self, population: str, plan: Plan, bds: list[Breakdown], published: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64]:
        """``published`` with its whole-household cells by size as sums of size x the households' published counts."""
        assert self._link is not None
        sizes, pair = self._sizes(self._link)
        keep, weights = size_weights(plan, sizes)
        if keep.size == 0:
            return published
        homes = [bds[a] for a in plan.home_axes]
        shape = (*(b.n_bottom for b in homes), len(sizes))
        counts, key_sums = self._pass(
            [*self._pairs(homes, plan.filters, len(sizes)), pair], shape, self._home_mask(self._link, population)
        )
        raw = (np.arange(len(sizes), dtype=np.int64), np.arange(1, len(sizes) + 1, dtype=np.int64))
        axes = [*((d, (b.lo, b.hi)) for d, b in enumerate(homes)), (len(homes), raw)]
        households = self.protect(gather(counts, axes), gather(key_sums, axes), self.store.key_scale)
        out = np.array(published, dtype=np.int64, copy=True)
        place(plan, out, np.tensordot(households, weights, axes=([-1], [0])).astype(np.int64), keep)
        return out

    def _mask(self, population: str) -> npt.NDArray[np.uint8]:
        try:
            mask = self.store.populations[population]
        except KeyError:
            raise CubeguardError(
                f"the key store of release {self.release_id} has no population {population!r}; release again after "
                "changing tables.populations"
            ) from None
        return empty_uint8() if mask is None else mask

    def _column(self, bd: Breakdown) -> KeyColumn:
        try:
            return self.store.columns[bd.column]
        except KeyError:
            raise CubeguardError(
                f"the key store of release {self.release_id} has no column {bd.column!r}; release again after "
                "changing tables.breakdowns"
            ) from None


def _summed_only(found: Full, column: str) -> dict[str, npt.NDArray[Any]]:
    """Magnitude inputs of cells summed from a crossing: sums and key sums, no extremes or top contributions."""
    return {
        "counts": found["counts"],
        "key_sums": found["key_sums"],
        "sums": found[f"sums.{column}"],
        "nz_key_sums": found[f"nz_key_sums.{column}"],
    }


def _with_extremes(cells: dict[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[Any]]:
    """``cells``, with empty extremes and top contributions where they were summed only (an additive perturbation reads none)."""
    if "top" in cells:
        return cells
    shape = cells["counts"].shape
    empty = {"high": np.zeros(shape), "low": np.zeros(shape), "top": np.full((*shape, 1), np.nan)}
    return cells | empty | {"rank": np.full((*shape, 1), -1, dtype=np.int64)}


def _cells(found: Answer | TableRefused) -> int:
    return int(found.count.size) if isinstance(found, Answer) else 1


def _positions(bd: Breakdown, column: KeyColumn) -> npt.NDArray[np.int64]:
    """Bottom position of each dictionary entry (-1 for values no code covers, missing too)."""
    values = column.dictionary
    if bd.classification.dtype == "integer":
        ints = np.array([v if isinstance(v, int) else -(2**62) for v in values], dtype=np.int64)
        return bd.lookup_ints(ints).astype(np.int64)
    return bd.lookup_codes([str(v) if v is not None else "\0missing" for v in values]).astype(np.int64)


def _weights(bd: Breakdown, column: KeyColumn, stride: int) -> npt.NDArray[np.int64]:
    """Each dictionary entry's bottom position times ``stride`` (``OUTSIDE`` for unknown values)."""
    bottom = _positions(bd, column)
    return np.where(bottom < 0, OUTSIDE, bottom * stride)


def _filter_weights(bd: Breakdown, code: str, column: KeyColumn) -> npt.NDArray[np.int64]:
    """0 for dictionary entries under ``code``, ``FILTERED`` for the others (``OUTSIDE`` when unknown)."""
    k = bd.codes.index(code)
    bottom = _positions(bd, column)
    inside = (bottom >= bd.lo[k]) & (bottom < bd.hi[k])
    return np.where(bottom < 0, OUTSIDE, np.where(inside, 0, FILTERED)).astype(np.int64)


def _areas_served(answer: Answer, failed: Mapping[int, TableRefused]) -> Answer:
    """``answer`` with the areas that broke a rule withheld (0 here, missing when written), or refused whole.

    Raises:
        TableRefused: every area broke a rule (the grand total's rule is named).
    """
    if not failed:
        return answer
    first = answer.breakdowns[0]
    if len(failed) == answer.count.shape[0]:
        refused = failed[0]
        raise TableRefused(
            refused.rule, f"every code of {first.id} breaks a rule on its own; for the whole table: {refused}"
        )
    at = sorted(failed)
    count = answer.count.copy()
    count[at] = 0
    mean = None
    if answer.mean is not None:
        mean = answer.mean.copy()
        mean[at] = np.nan
    withheld = tuple((i, failed[i].rule) for i in at)
    return dataclasses.replace(answer, count=count, mean=mean, withheld=withheld)

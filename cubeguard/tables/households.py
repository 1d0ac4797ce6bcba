"""Persons counts by household size, derived from the households' published counts.

A cell of a persons table whose categories are all of household-level columns (geography,
tenure, ...) holds whole households. If it also fixes the household size to s, it holds exactly
s persons per household: persons = s x households. Perturbed independently, the persons cell and
the households cell of the same categories are two noisy views of one number, and an intruder
who intersects their noise ranges pins it down (a persons count of 3 and a households count of 0
for households of five persons: exactly one household; Handbook on SDC v2, 5.2 on linking
tables, 5.4 on the cell key method's consistency). So such a persons cell is published as
sum over the sizes s of its size category of s x h-hat(s), where h-hat(s) is the published count
(same records, same cell key, same value as in every households table) of the households of
size s in the cell: the persons figure is a function of published households figures and adds
nothing to them. Consistent by construction rather than by a rule on queries.

What it does not promise: persons cells that fix a person-level category (sex, age) are
perturbed as usual (their counts are not a multiple of any households count); a size category
that also covers persons outside private households (the size total, "not applicable") is
perturbed as usual too; the derived counts are multiples of the size, and their noise is the
households' noise times the size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cubeguard.config.load import Release
from cubeguard.config.tables import size_linked_persons
from cubeguard.cubes.hierarchy import Breakdown
from cubeguard.errors import CubeguardError
from cubeguard.tables.query import TableQuery


@dataclass(frozen=True)
class SizeLink:
    """What links persons and households tables of a release (``tables.household_size``)."""

    variable: str
    column: str
    households: str  # the households population
    persons: frozenset[str]  # persons populations whose filter reads household-level columns only
    homes: frozenset[str]  # household-level columns

    @classmethod
    def of(cls, release: Release) -> SizeLink | None:
        """The release's link, or None when its tables offer no household size."""
        spec = release.config.tables
        if spec is None or spec.household_size is None:
            return None
        link = spec.household_size
        homes = frozenset(release.config.input.household_columns)
        pops = release.config.populations
        persons = frozenset(size_linked_persons(spec, pops, homes))
        column = next(b.column for b in release.breakdowns.values() if b.classification.variable == link.variable)
        return cls(link.variable, column, link.population, persons, homes)

    def plan(self, query: TableQuery, offered: dict[str, Breakdown]) -> Plan | None:
        """Which cells of ``query`` are derived, or None when none is."""
        if query.population not in self.persons:
            return None
        if any(offered[b].column not in self.homes for b in query.filters):
            return None  # a person-level filter: no cell holds whole households
        bds = [offered[b] for b in query.breakdowns]
        size_axes = [a for a, b in enumerate(bds) if b.classification.variable == self.variable]
        size_filter = next((b for b in query.filters if offered[b].classification.variable == self.variable), None)
        if not size_axes and size_filter is None:
            return None
        totals: dict[int, int] = {}
        for a, bd in enumerate(bds):
            if bd.column not in self.homes:
                whole = np.flatnonzero((bd.lo == 0) & (bd.hi == bd.n_bottom))
                if whole.size == 0:
                    return None  # no total on a person-level axis: no cell holds whole households
                totals[a] = int(whole[0])
        size_bd = bds[size_axes[0]] if size_axes else offered[str(size_filter)]
        codes = (
            [offered[str(size_filter)].codes.index(query.filters[str(size_filter)])]
            if size_filter is not None
            else list(range(len(size_bd.codes)))
        )
        return Plan(
            size_axis=size_axes[0] if size_axes else None,
            size=size_bd,
            size_codes=codes,
            totals=totals,
            home_axes=[a for a in range(len(bds)) if a not in totals and a not in size_axes],
            filters={b: c for b, c in query.filters.items() if b != size_filter},
        )


@dataclass(frozen=True)
class Plan:
    """The derived cells of one persons table.

    Attributes:
        size_axis: the table's household-size axis (None when the size is a filter).
        size: the household-size breakdown (of the axis or the filter).
        size_codes: positions in ``size.codes`` of the codes derived from (the filter's one, or every code).
        totals: person-level axis -> position of its total code (derived cells lie there).
        home_axes: the other household-level axes, in the table's order.
        filters: household-level filters other than the size.
    """

    size_axis: int | None
    size: Breakdown
    size_codes: list[int]
    totals: dict[int, int]
    home_axes: list[int]
    filters: dict[str, str]


def size_weights(plan: Plan, sizes: list[int | None]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(derivable code positions, weights): ``weights[d, k]`` is size ``sizes[d]`` when code k covers it.

    A code is derivable when every raw value it covers is a household size of at least 1 (a code
    covering persons outside private households, size 0 or missing, is not).
    """
    cls = plan.size.classification
    keep, columns = [], []
    for k in plan.size_codes:
        covered = _covered(cls.children, cls.leaf_values, plan.size.selected[k])
        if not covered or any(not isinstance(v, int) or v < 1 for v in covered):
            continue
        keep.append(k)
        columns.append([s if s is not None and s in covered else 0 for s in sizes])
    weights = np.array(columns, dtype=np.int64).T.reshape(len(sizes), len(keep))
    return np.array(keep, dtype=np.int64), weights


def _covered(
    children: tuple[tuple[int, ...], ...], leaf_values: tuple[tuple[str | int, ...], ...], code: int
) -> set[str | int]:
    stack, values = [code], set[str | int]()
    while stack:
        x = stack.pop()
        stack.extend(children[x])
        values.update(leaf_values[x])
    return values


def place(plan: Plan, published: npt.NDArray[np.int64], derived: npt.NDArray[np.int64], keep: npt.NDArray[np.int64]) -> None:  # fmt: skip
    """Write ``derived`` (home axes in table order, then the kept size codes) into ``published`` in place."""
    view = published[tuple(plan.totals.get(a, slice(None)) for a in range(published.ndim))]
    if plan.size_axis is None:
        view[...] = derived[..., 0]
        return
    at = sum(1 for a in plan.home_axes if a < plan.size_axis)
    view[(slice(None),) * at + (keep,)] = np.moveaxis(derived, -1, at)


def check_identity(
    link: SizeLink,
    population: str,
    persons: npt.NDArray[np.int64],
    households: npt.NDArray[np.int64],
    sizes: list[int | None],
) -> None:
    """Refuse to serve when persons by size are not size x households (the link's premise)."""
    for d, s in enumerate(sizes):
        if isinstance(s, int) and s >= 1 and persons[d] != s * households[d]:
            raise CubeguardError(
                f"tables.household_size: population {population} has {int(persons[d]):,} persons in households of "
                f"size {s}, not {s} x {int(households[d]):,} households of population {link.households}; give "
                f"every member of a household its {link.column} and list household-level columns in "
                "input.household_columns"
            )

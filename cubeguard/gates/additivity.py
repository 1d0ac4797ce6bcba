"""Additivity: every total and subtotal equals the sum of its children, along every dimension.

A cube holds its margins in pre-order along each dimension, with a ``<dim>.parent`` coordinate
(:mod:`cubeguard.measures.select`), so a published table is additive when, for every dimension and
every code with children along it, the cell equals the sum of its children's cells with the other
coordinates fixed. Handbook on SDC v2 (Hundepool et al. 2024), 5.4: the cell key method gives up
additivity, controlled rounding (5.5) keeps it; releases that promise additive tables require it.

The check is vectorised per dimension: the children of all codes are gathered in parent order and
summed with one ``np.add.reduceat``. A cube is read in slabs along its leading dimension
(:mod:`cubeguard.gates.slabs`): the other dimensions are checked within each slab, the leading one
from the parent rows and running sums of their children kept across slabs. A cell that breaks
additivity along several dimensions counts once; it is attributed to the first dimension checked
(the leading dimension is checked last), which makes the per-group counts add up to the cube's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import xarray as xr

from cubeguard.gates.slabs import DEFAULT_SLAB_CELLS, IntArray, Layout, iter_slabs, layout

MAX_EXAMPLES = 5


@dataclass(frozen=True)
class GroupFacts:
    """One code with children along one dimension, over every combination of the other codes.

    Attributes:
        dim: the dimension.
        parent: the code whose cells are checked against the sum of its children.
        children: its number of children along ``dim``.
        cells: its cells (one per combination of the other dimensions' codes).
        new_cells: of those, the cells not already checked along a dimension checked before.
        non_additive: its cells that differ from the sum of their children along ``dim``.
        new_non_additive: of those, the ones not already found along a dimension checked before.
        max_gap: the largest ``|cell - sum of children|`` (0 when additive).
        parent_total: the sum of its cells.
        children_total: the sum of its children's cells.
        examples: the cube's example lines (see :class:`AdditivityFacts`) found in this group.
    """

    dim: str
    parent: str
    children: int
    cells: int
    new_cells: int
    non_additive: int
    new_non_additive: int
    max_gap: int
    parent_total: int
    children_total: int
    examples: tuple[str, ...] = ()


@dataclass(frozen=True)
class AdditivityFacts:
    """What the additivity check found on one cube.

    Attributes:
        checked: cells that have children along at least one dimension (totals and subtotals).
        violations: those of them that differ from the sum of their children along some dimension.
        max_gap: the largest ``|cell - sum of children|`` found (0 when additive).
        examples: up to :data:`MAX_EXAMPLES` violations, one readable line each.
        groups: one per (dimension, code with children), dimensions in the order checked.
    """

    checked: int
    violations: int
    max_gap: int
    examples: tuple[str, ...]
    groups: tuple[GroupFacts, ...] = field(repr=False, default=())

    @property
    def additive(self) -> bool:
        """The verdict: no total or subtotal differs from the sum of its children."""
        return passes(self.violations)


def passes(violations: int) -> bool:
    """The additivity verdict on a count of non-additive cells."""
    return violations == 0


@dataclass(frozen=True)
class _Dim:
    """How to gather the children of one dimension's codes in parent order."""

    order: IntArray  # child positions sorted by parent position
    starts: IntArray  # where each parent's children start in ``order``
    parents: IntArray  # the parent positions, ascending


def _gather(parent: IntArray) -> _Dim:
    kids = np.flatnonzero(parent >= 0)
    order = kids[np.argsort(parent[kids], kind="stable")]
    by = parent[order]
    starts = np.flatnonzero(np.r_[True, by[1:] != by[:-1]]) if by.size else np.zeros(0, dtype=np.int64)
    return _Dim(order.astype(np.int64), starts.astype(np.int64), by[starts].astype(np.int64))


class AdditivityTally:
    """Additivity facts of one cube, accumulated over its slabs (see the module docstring)."""

    def __init__(self, lay: Layout) -> None:
        self.layout = lay
        self.dims = [_gather(p) for p in lay.parent]
        n = [d.parents.size for d in self.dims]
        self.non_additive = [np.zeros(k, dtype=np.int64) for k in n]
        self.new_non_additive = [np.zeros(k, dtype=np.int64) for k in n]
        self.max_gap = [np.zeros(k, dtype=np.int64) for k in n]
        self.parent_total = [np.zeros(k, dtype=np.int64) for k in n]
        self.children_total = [np.zeros(k, dtype=np.int64) for k in n]
        self.examples: list[tuple[int, int, str]] = []  # (dim, group, line)
        self.violations = 0
        rest = lay.shape[1:]
        lead = self.dims[0]
        self.row_group = np.full(lay.shape[0], -1, dtype=np.int64)
        self.row_group[lead.parents] = np.arange(lead.parents.size)
        self.lead_values = np.zeros((lead.parents.size, *rest), dtype=np.int64)
        self.lead_sums = np.zeros((lead.parents.size, *rest), dtype=np.int64)
        self.lead_bad = np.zeros((lead.parents.size, *rest), dtype=bool)

    def _line(self, at: list[int], total: int, parts: int, k: int, g: int) -> str:
        lay = self.layout
        cell = ", ".join(f"{d}={lay.codes[i][at[i]]}" for i, d in enumerate(lay.dims))
        dim = self.dims[k]
        kids = int((dim.starts[g + 1] if g + 1 < dim.starts.size else dim.order.size) - dim.starts[g])
        return f"{cell}: {total} != {parts} = sum of {kids} children along {lay.dims[k]}"

    def _record(
        self, k: int, gap: npt.NDArray[np.int64], wrong: npt.NDArray[np.bool_], new: npt.NDArray[np.bool_]
    ) -> None:
        """Per-group counts of a dimension's parent cells (parent axis first)."""
        others = tuple(range(1, wrong.ndim))
        self.non_additive[k] += wrong.sum(axis=others, dtype=np.int64)
        self.new_non_additive[k] += new.sum(axis=others, dtype=np.int64)
        self.max_gap[k] = np.maximum(self.max_gap[k], np.abs(gap).max(axis=others, initial=0))

    def _examples(
        self, k: int, lo: int, values: npt.NDArray[np.int64], sums: npt.NDArray[np.int64], wrong: npt.NDArray[np.bool_]
    ) -> None:
        """Example lines from parent-axis-first arrays; ``lo``: offset of the leading dimension (k > 0)."""
        for idx in np.argwhere(wrong)[: MAX_EXAMPLES - len(self.examples)]:
            g, rest = int(idx[0]), [int(i) for i in idx[1:]]
            if k == 0:
                at = [int(self.dims[0].parents[g]), *rest]
            else:
                rest[0] += lo
                at = [*rest[:k], int(self.dims[k].parents[g]), *rest[k:]]
            total, parts = int(values[tuple(idx)]), int(sums[tuple(idx)])
            self.examples.append((k, g, self._line(at, total, parts, k, g)))

    def add(self, lo: int, slab: npt.NDArray[np.int64]) -> None:
        """Check the dimensions after the leading one on ``slab`` (leading positions from ``lo``).

        Keeps what the leading dimension needs: its parent rows and the running sums of their children.
        """
        bad = np.zeros(slab.shape, dtype=bool)
        for k in range(1, slab.ndim):
            dim = self.dims[k]
            if not dim.parents.size:
                continue
            sums = np.moveaxis(np.add.reduceat(np.take(slab, dim.order, axis=k), dim.starts, axis=k), k, 0)
            values = np.moveaxis(np.take(slab, dim.parents, axis=k), k, 0)
            others = tuple(range(1, values.ndim))
            self.parent_total[k] += values.sum(axis=others)
            self.children_total[k] += sums.sum(axis=others)
            gap = values - sums
            wrong = gap != 0
            if wrong.any():
                flags = np.moveaxis(bad, k, 0)
                new = wrong & ~flags[dim.parents]
                self._record(k, gap, wrong, new)
                flags[dim.parents] |= wrong
                if len(self.examples) < MAX_EXAMPLES:
                    self._examples(k, lo, values, sums, wrong)
        self.violations += int(np.count_nonzero(bad))
        rows = np.arange(lo, lo + slab.shape[0])
        group = self.row_group[rows]
        mine = group >= 0
        self.lead_values[group[mine]] = slab[mine]
        self.lead_bad[group[mine]] = bad[mine]
        parent = self.layout.parent[0][rows]
        kids = np.flatnonzero(parent >= 0)
        if kids.size:
            target = self.row_group[parent[kids]]
            order = np.argsort(target, kind="stable")
            target = target[order]
            starts = np.flatnonzero(np.r_[True, target[1:] != target[:-1]])
            self.lead_sums[target[starts]] += np.add.reduceat(slab[kids[order]], starts, axis=0)

    def facts(self) -> AdditivityFacts:
        """The cube's facts, once every slab was added (checks the leading dimension)."""
        if self.dims[0].parents.size:
            gap = self.lead_values - self.lead_sums
            wrong = gap != 0
            others = tuple(range(1, gap.ndim))
            self.parent_total[0] += self.lead_values.sum(axis=others)
            self.children_total[0] += self.lead_sums.sum(axis=others)
            if wrong.any():
                new = wrong & ~self.lead_bad
                self._record(0, gap, wrong, new)
                self.violations += int(np.count_nonzero(new))
                if len(self.examples) < MAX_EXAMPLES:
                    self._examples(0, 0, self.lead_values, self.lead_sums, wrong)
        return self._facts()

    def _facts(self) -> AdditivityFacts:
        lay = self.layout
        shape = np.array(lay.shape, dtype=np.int64)
        leaves = np.array([np.setdiff1d(np.arange(n), d.parents).size for n, d in zip(shape, self.dims, strict=True)])
        order = [*range(1, len(shape)), 0]  # the order the dimensions are checked in
        groups: list[GroupFacts] = []
        for i, k in enumerate(order):
            dim = self.dims[k]
            before, after = order[:i], [j for j in order[i + 1 :]]
            cells = int(np.prod(np.delete(shape, k)))
            new_cells = int(np.prod(leaves[before]) * np.prod(shape[after]))
            kids = np.diff(np.r_[dim.starts, dim.order.size])
            for g, p in enumerate(dim.parents):
                groups.append(
                    GroupFacts(
                        dim=lay.dims[k],
                        parent=lay.codes[k][int(p)],
                        children=int(kids[g]),
                        cells=cells,
                        new_cells=new_cells,
                        non_additive=int(self.non_additive[k][g]),
                        new_non_additive=int(self.new_non_additive[k][g]),
                        max_gap=int(self.max_gap[k][g]),
                        parent_total=int(self.parent_total[k][g]),
                        children_total=int(self.children_total[k][g]),
                        examples=tuple(line for kk, gg, line in self.examples if (kk, gg) == (k, g)),
                    )
                )
        checked = int(np.prod(shape) - np.prod(leaves))
        max_gap = max((int(m.max(initial=0)) for m in self.max_gap), default=0)
        return AdditivityFacts(
            checked, self.violations, max_gap, tuple(line for _, _, line in self.examples), tuple(groups)
        )


def check_additivity(cube: xr.Dataset, *, slab_cells: int = DEFAULT_SLAB_CELLS) -> AdditivityFacts:
    """Check that every total and subtotal of ``cube['count']`` equals the sum of its children.

    The cube may be lazy; it is read in slabs of about ``slab_cells`` cells. Cost: one pass over
    the cells per dimension.

    Raises:
        GateInputError: if the cube has no ``count`` or a count is missing.
        cubeguard.measures.errors.InvalidCubeError: if a dimension breaks the cube convention.

    Examples:
        >>> import numpy as np, xarray as xr
        >>> cube = xr.Dataset(
        ...     {"count": (["S"], np.array([5, 2, 4]))},
        ...     coords={"S": ["0", "1", "2"], "S.parent": ("S", ["", "0", "0"]), "S.depth": ("S", [0, 1, 1])},
        ... )
        >>> check_additivity(cube)
        AdditivityFacts(checked=1, violations=1, max_gap=1, examples=('S=0: 5 != 6 = sum of 2 children along S',))
    """
    lay, _, count = layout(cube, cube)
    tally = AdditivityTally(lay)
    for lo, _, slab in iter_slabs(None, count, slab_cells):
        tally.add(lo, slab)
    return tally.facts()

"""Additivity: every total and subtotal equals the sum of its children, along every dimension.

A cube holds its margins in pre-order along each dimension, with a ``<dim>.parent`` coordinate
(:mod:`cubeguard.cubes.tree`), so a published table is additive when, for every dimension and
every code with children along it, the cell equals the sum of its children's cells with the other
coordinates fixed. Handbook on SDC v2 (Hundepool et al. 2024), 5.4: the cell key method gives up
additivity, controlled rounding (5.5) keeps it; releases that promise additive tables require it.

The check is one pass per dimension over a slab viewed as ``(before, dimension, after)``, in numba
(:mod:`cubeguard.gates._kernels`): children are added into their parent's running sum, then each
parent cell is held against it. A cube is read in slabs along its leading dimension
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

from cubeguard.gates import _kernels
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
    """The codes with children along one dimension."""

    parents: IntArray  # their positions, ascending (group g is parents[g])
    group_of_parent: IntArray  # per position, the group of its parent (-1: the total)
    children: IntArray  # per group, its number of children


def _dim(parent: IntArray) -> _Dim:
    parents = np.unique(parent[parent >= 0]).astype(np.int64)
    group = np.full(parent.size, -1, dtype=np.int64)
    group[parents] = np.arange(parents.size)
    of_parent = np.where(parent >= 0, group[np.maximum(parent, 0)], -1).astype(np.int64)
    return _Dim(parents, of_parent, np.bincount(of_parent[of_parent >= 0], minlength=parents.size).astype(np.int64))


class AdditivityTally:
    """Additivity facts of one cube, accumulated over its slabs (see the module docstring)."""

    def __init__(self, lay: Layout) -> None:
        self.layout = lay
        self.dims = [_dim(p) for p in lay.parent]
        # per dimension and group: non-additive, newly non-additive, max gap, parent total, children total
        self.stats = [np.zeros((d.parents.size, 5), dtype=np.int64) for d in self.dims]
        self.examples: list[tuple[int, int, str]] = []  # (dim, group, line)
        self.violations = 0
        rest = lay.shape[1:]
        lead = self.dims[0]
        self.lead_values = np.zeros((lead.parents.size, *rest), dtype=np.int64)
        self.lead_sums = np.zeros((lead.parents.size, *rest), dtype=np.int64)
        self.lead_bad = np.zeros((lead.parents.size, *rest), dtype=bool)
        self.row_group = np.full(lay.shape[0], -1, dtype=np.int64)
        self.row_group[lead.parents] = np.arange(lead.parents.size)

    def _compare(
        self, k: int, values: IntArray, parents: IntArray, sums: IntArray, bad: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.int64]:
        """Run the comparison kernel on ``(A, n, B)`` views; return the example rows it recorded."""
        buffer = np.zeros((MAX_EXAMPLES - len(self.examples), 5), dtype=np.int64)
        found = _kernels.compare(values, parents, sums, bad, self.stats[k], buffer, 0)
        return buffer[:found]

    def _line(self, at: list[int], total: int, parts: int, k: int, g: int) -> str:
        lay = self.layout
        cell = ", ".join(f"{d}={lay.codes[i][at[i]]}" for i, d in enumerate(lay.dims))
        kids = int(self.dims[k].children[g])
        return f"{cell}: {total} != {parts} = sum of {kids} children along {lay.dims[k]}"

    def add(self, lo: int, slab: npt.NDArray[np.int64]) -> None:
        """Check the dimensions after the leading one on ``slab`` (leading positions from ``lo``).

        Keeps what the leading dimension needs: its parent rows and the running sums of their children.
        """
        slab = np.ascontiguousarray(slab, dtype=np.int64)
        bad = np.zeros(slab.shape, dtype=bool)
        for k in range(1, slab.ndim):
            dim = self.dims[k]
            if not dim.parents.size:
                continue
            values = _kernels.as_abn(slab, k)
            sums = np.zeros((values.shape[0], dim.parents.size, values.shape[2]), dtype=np.int64)
            _kernels.children_sums(values, dim.group_of_parent, sums)
            rows = self._compare(k, values, dim.parents, sums, _kernels.as_abn(bad, k))
            for a, g, b, v, s in rows.tolist():
                before = list(np.unravel_index(a, slab.shape[:k])) if k else []
                after = list(np.unravel_index(b, slab.shape[k + 1 :]))
                at = [int(i) for i in (*before, int(dim.parents[g]), *after)]
                at[0] += lo
                self.examples.append((k, g, self._line(at, v, s, k, g)))
        self.violations += int(np.count_nonzero(bad))
        lead = self.dims[0]
        if not lead.parents.size:
            return
        group = self.row_group[lo : lo + slab.shape[0]]
        mine = group >= 0
        self.lead_values[group[mine]] = slab[mine]
        self.lead_bad[group[mine]] = bad[mine]
        flat = slab.reshape(1, slab.shape[0], -1)
        _kernels.children_sums(
            flat, lead.group_of_parent[lo : lo + slab.shape[0]], self.lead_sums.reshape(1, lead.parents.size, -1)
        )

    def facts(self) -> AdditivityFacts:
        """The cube's facts, once every slab was added (checks the leading dimension)."""
        lead = self.dims[0]
        if lead.parents.size:
            n = lead.parents.size
            shape = (1, n, -1)
            before = int(np.count_nonzero(self.lead_bad))
            rows = self._compare(
                0,
                self.lead_values.reshape(shape),
                np.arange(n, dtype=np.int64),
                self.lead_sums.reshape(shape),
                self.lead_bad.reshape(shape),
            )
            self.violations += int(np.count_nonzero(self.lead_bad)) - before
            for _, g, b, v, s in rows.tolist():
                at = [int(lead.parents[g]), *(int(i) for i in np.unravel_index(b, self.layout.shape[1:]))]
                self.examples.append((0, g, self._line(at, v, s, 0, g)))
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
            stats = self.stats[k]
            for g, p in enumerate(dim.parents):
                groups.append(
                    GroupFacts(
                        dim=lay.dims[k],
                        parent=lay.codes[k][int(p)],
                        children=int(dim.children[g]),
                        cells=cells,
                        new_cells=new_cells,
                        non_additive=int(stats[g, 0]),
                        new_non_additive=int(stats[g, 1]),
                        max_gap=int(stats[g, 2]),
                        parent_total=int(stats[g, 3]),
                        children_total=int(stats[g, 4]),
                        examples=tuple(line for kk, gg, line in self.examples if (kk, gg) == (k, g)),
                    )
                )
        checked = int(np.prod(shape) - np.prod(leaves))
        max_gap = max((int(m[:, 2].max(initial=0)) for m in self.stats), default=0)
        return AdditivityFacts(
            checked, self.violations, max_gap, tuple(line for _, _, line in self.examples), tuple(groups)
        )


def check_additivity(cube: xr.Dataset, *, slab_cells: int = DEFAULT_SLAB_CELLS) -> AdditivityFacts:
    """Check that every total and subtotal of ``cube['count']`` equals the sum of its children.

    The cube may be lazy; it is read in slabs of about ``slab_cells`` cells. Cost: one pass over
    the cells per dimension.

    Raises:
        GateInputError: if the cube has no ``count`` or a count is missing.
        cubeguard.cubes.tree.InvalidCubeError: if a dimension breaks the cube convention.

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

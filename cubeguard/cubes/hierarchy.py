"""Hierarchical classifications and the breakdowns selected from them.

A breakdown (an EU "breakdown code" such as AGE.M) is a selection of a variable's hierarchy that is
closed under "parent of". Its coordinate lists the selected codes in pre-order, so every code covers
a *contiguous* range of the bottom codes; margins are then differences of prefix sums along an axis,
which is exact in integer arithmetic and needs no re-reading of the microdata. A breakdown's code tree
is :attr:`Breakdown.tree`, the same :class:`~cubeguard.cubes.tree.DimHierarchy` that
:func:`~cubeguard.cubes.tree.hierarchies` reads back from the cube.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

from cubeguard.cubes.spec import VariableSpec
from cubeguard.cubes.tree import DimHierarchy
from cubeguard.errors import CubeguardError

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Classification:
    """A variable's whole code tree, with the raw microdata values of each leaf."""

    variable: str
    column: str
    dtype: str
    codes: tuple[str, ...]
    labels: tuple[str, ...]
    parent: tuple[int, ...]  # index of the parent code, -1 for the root
    depth: tuple[int, ...]
    children: tuple[tuple[int, ...], ...]
    leaf_values: tuple[tuple[str | int, ...], ...]  # raw values per code (empty for inner codes)

    def index(self, code: str) -> int:
        """Position of ``code``; raises ``KeyError`` if unknown."""
        return self.codes.index(code)


@dataclass(frozen=True)
class Breakdown:
    """A selection of a classification: the coordinate of one cube dimension."""

    id: str
    classification: Classification
    selected: tuple[int, ...]  # classification indices, pre-order
    lo: IntArray  # per selected code: first bottom position covered
    hi: IntArray  # per selected code: one past the last bottom position covered
    leaf_bottom: IntArray  # per classification code: bottom position of a leaf, -1 otherwise
    bottom: IntArray  # positions (in ``codes``) of the bottom codes, in bottom order

    @property
    def column(self) -> str:
        """Microdata column the breakdown reads."""
        return self.classification.column

    @property
    def codes(self) -> list[str]:
        """Coordinate codes in pre-order (total, subtotals, bottom codes)."""
        return [self.classification.codes[i] for i in self.selected]

    @property
    def labels(self) -> list[str]:
        """Labels of :attr:`codes`."""
        return [self.classification.labels[i] for i in self.selected]

    @property
    def parents(self) -> list[str]:
        """Parent code of each of :attr:`codes` ("" for the total)."""
        c = self.classification
        return [c.codes[c.parent[i]] if c.parent[i] >= 0 else "" for i in self.selected]

    @property
    def depths(self) -> list[int]:
        """Depth of each of :attr:`codes` (0 for the total)."""
        return [self.classification.depth[i] for i in self.selected]

    @cached_property
    def tree(self) -> DimHierarchy:
        """The code tree of the breakdown's dimension: :attr:`codes`, parent positions and depths, in pre-order.

        Equal to :func:`~cubeguard.cubes.tree.hierarchies` of a cube tabulated with this breakdown,
        so holders of a breakdown and of a cube work on one tree type; its leaves are the bottom
        codes and its :attr:`~cubeguard.cubes.tree.DimHierarchy.leaf_ranges` are (:attr:`lo`, :attr:`hi`).
        The arrays are read-only: the tree is cached and shared.
        """
        c = self.classification
        at = np.full(len(c.codes), -1, dtype=np.int64)
        at[list(self.selected)] = np.arange(len(self.selected), dtype=np.int64)
        up = np.array([c.parent[i] for i in self.selected], dtype=np.int64)
        parent = np.where(up >= 0, at[up], -1).astype(np.int64)
        depth = np.array(self.depths, dtype=np.int64)
        parent.flags.writeable = depth.flags.writeable = False
        return DimHierarchy(dim=self.id, codes=tuple(self.codes), parent=parent, depth=depth)

    @property
    def n_bottom(self) -> int:
        """Number of bottom codes (the size of this axis before margins are added)."""
        return int(self.bottom.size)

    @property
    def bottom_codes(self) -> list[str]:
        """Codes of the bottom cells, in bottom-position order."""
        codes = self.codes
        return [codes[int(k)] for k in self.bottom]

    def lookup_codes(self, raw: list[str]) -> npt.NDArray[np.int32]:
        """Bottom position for each raw string value (-1 where the value is not in the classification)."""
        table = self._raw_table
        return np.array([table.get(v, -1) for v in raw], dtype=np.int32)

    def lookup_ints(self, values: npt.NDArray[np.integer]) -> npt.NDArray[np.int32]:
        """Bottom position for each raw integer value (-1 where no leaf covers it)."""
        first, lut = self.int_table
        x = np.asarray(values, dtype=np.int64) - first
        inside = (x >= 0) & (x < lut.size)
        if not lut.size:
            return np.full(x.shape, -1, dtype=np.int32)
        return np.where(inside, lut[np.where(inside, x, 0)], np.int32(-1)).astype(np.int32)

    @cached_property
    def int_table(self) -> tuple[int, npt.NDArray[np.int32]]:
        """(first raw integer, lookup table): raw value ``v`` is at ``lut[v - first]`` (-1: no leaf).

        Empty when the classification has no integer values.
        """
        keys = sorted(k for k in self._raw_table if isinstance(k, int))
        if not keys:
            return 0, np.empty(0, dtype=np.int32)
        lut = np.full(keys[-1] - keys[0] + 1, -1, dtype=np.int32)
        for k in keys:
            lut[k - keys[0]] = self._raw_table[k]
        return keys[0], lut

    @cached_property
    def _raw_table(self) -> dict[str | int, int]:
        c = self.classification
        return {v: int(self.leaf_bottom[i]) for i in range(len(c.codes)) for v in c.leaf_values[i]}


def build_classification(
    name: str, spec: VariableSpec
) -> tuple[Classification, list[tuple[tuple[str | int, ...], str]]]:
    """Turn a variable spec into a classification; also return (key path, problem) pairs found."""
    problems: list[tuple[tuple[str | int, ...], str]] = []
    index: dict[str, int] = {}
    parent: list[int] = []
    for k, cs in enumerate(spec.codes):
        where = ("codes", k)
        if cs.code in index:
            problems.append(((*where, "code"), f"code {cs.code!r} appears twice; each code once"))
        index.setdefault(cs.code, k)
        if cs.parent is None:
            parent.append(-1)
        elif cs.parent not in index:
            problems.append(
                ((*where, "parent"), f"parent {cs.parent!r} is not listed before {cs.code!r}; list parents first")
            )
            parent.append(-1)
        else:
            parent.append(index[cs.parent])
    roots = [spec.codes[k].code for k, p in enumerate(parent) if p < 0]
    if len(roots) != 1 and not problems:
        problems.append((("codes",), f"needs exactly one root code (no parent), found {len(roots)}: {roots[:5]}"))
    n = len(spec.codes)
    children: list[list[int]] = [[] for _ in range(n)]
    depth = [0] * n
    for k, p in enumerate(parent):
        if p >= 0:
            children[p].append(k)
            depth[k] = depth[p] + 1
    leaf_values = _leaf_values(spec, children, problems)
    cls = Classification(
        variable=name,
        column=spec.column,
        dtype=spec.dtype,
        codes=tuple(cs.code for cs in spec.codes),
        labels=tuple(cs.label for cs in spec.codes),
        parent=tuple(parent),
        depth=tuple(depth),
        children=tuple(tuple(c) for c in children),
        leaf_values=leaf_values,
    )
    return cls, problems


def _leaf_values(
    spec: VariableSpec, children: list[list[int]], problems: list[tuple[tuple[str | int, ...], str]]
) -> tuple[tuple[str | int, ...], ...]:
    out: list[tuple[str | int, ...]] = []
    owner: dict[str | int, str] = {}
    for k, cs in enumerate(spec.codes):
        where: tuple[str | int, ...] = ("codes", k)
        if children[k]:
            if cs.values is not None or cs.range is not None:
                problems.append(
                    (where, f"code {cs.code!r} has children, so it cannot carry raw values; move them to its leaves")
                )
            out.append(())
            continue
        vals = _raw_values(cs.values, cs.range, cs.code, spec.dtype, where, problems)
        for v in vals:
            if v in owner:
                problems.append(
                    (where, f"raw value {v!r} already belongs to leaf {owner[v]!r}; give each value to one leaf")
                )
            owner.setdefault(v, cs.code)
        out.append(vals)
    return tuple(out)


def _raw_values(
    values: list[str] | list[int] | None,
    rng: tuple[int, int] | None,
    code: str,
    dtype: str,
    where: tuple[str | int, ...],
    problems: list[tuple[tuple[str | int, ...], str]],
) -> tuple[str | int, ...]:
    if rng is not None:
        if dtype != "integer":
            problems.append((where, "'range' needs dtype: integer; list string 'values' instead"))
        return tuple(range(rng[0], rng[1] + 1))
    if values is None:
        if dtype == "integer":
            problems.append((where, f"integer leaf {code!r} needs 'values' or 'range'"))
            return ()
        return (code,)
    if dtype == "integer" and not all(isinstance(v, int) for v in values):
        problems.append((where, "dtype integer needs integer 'values'"))
    return tuple(str(v) if dtype == "code" else v for v in values)


def select_breakdown(bid: str, cls: Classification, depth: int | None, codes: list[str] | None) -> Breakdown:
    """Resolve a breakdown selection into pre-order codes with contiguous bottom ranges."""
    chosen = _chosen(bid, cls, depth, codes)
    selected: list[int] = []
    lo: list[int] = []
    hi: list[int] = []
    leaf_bottom = np.full(len(cls.codes), -1, dtype=np.int64)
    bottom: list[int] = []
    counter = [0]
    root = cls.parent.index(-1)

    def visit(k: int) -> None:
        pos = len(selected)
        selected.append(k)
        lo.append(counter[0])
        hi.append(counter[0])
        kids = [c for c in cls.children[k] if c in chosen]
        if kids:
            covered = _leaves_under(cls, k)
            for c in kids:
                visit(c)
            under = {leaf for c in kids for leaf in _leaves_under(cls, c)}
            missing = [cls.codes[x] for x in covered if x not in under]
            if missing:
                raise CubeguardError(
                    f"breakdown {bid}: code {cls.codes[k]!r} has selected children but leaf {missing[0]!r} lies under none "
                    "of them; select all children of a code or none"
                )
        else:
            for leaf in _leaves_under(cls, k):
                leaf_bottom[leaf] = counter[0]
            bottom.append(pos)
            counter[0] += 1
        hi[pos] = counter[0]

    visit(root)
    return Breakdown(
        bid,
        cls,
        tuple(selected),
        np.array(lo, dtype=np.int64),
        np.array(hi, dtype=np.int64),
        leaf_bottom,
        np.array(bottom, dtype=np.int64),
    )


def _chosen(bid: str, cls: Classification, depth: int | None, codes: list[str] | None) -> set[int]:
    if codes is None:
        return {k for k, d in enumerate(cls.depth) if depth is None or d <= depth}
    unknown = [c for c in codes if c not in cls.codes]
    if unknown:
        raise CubeguardError(f"breakdown {bid}: code {unknown[0]!r} is not in the classification of {cls.variable}")
    chosen = {cls.index(c) for c in codes}
    for k in chosen:
        p = cls.parent[k]
        if p >= 0 and p not in chosen:
            raise CubeguardError(
                f"breakdown {bid}: code {cls.codes[k]!r} is selected but its parent {cls.codes[p]!r} is not; add the parent"
            )
    if cls.parent.index(-1) not in chosen:
        raise CubeguardError(f"breakdown {bid}: the root code must be selected")
    return chosen


def _leaves_under(cls: Classification, k: int) -> list[int]:
    stack, out = [k], []
    while stack:
        x = stack.pop()
        if cls.children[x]:
            stack.extend(reversed(cls.children[x]))
        else:
            out.append(x)
    return out


T = TypeVar("T")


class PerBreakdown(Generic[T]):
    """``build(b)`` computed once per :class:`Breakdown` object and kept (up to ``kept`` of them).

    Breakdowns hold arrays, so they are told apart by identity; an entry also keeps its breakdown,
    so a new object at a freed address is never taken for the old one. Past ``kept`` entries the
    cache starts afresh.
    """

    def __init__(self, build: Callable[[Breakdown], T], kept: int = 4096) -> None:
        self.build = build
        self.kept = kept
        self._found: dict[int, tuple[Breakdown, T]] = {}

    def __call__(self, b: Breakdown) -> T:
        """The value built for ``b`` (built now if ``b`` was not seen)."""
        found = self._found.get(id(b))
        if found is None or found[0] is not b:
            if len(self._found) >= self.kept:
                self._found.clear()
            found = self._found[id(b)] = (b, self.build(b))
        return found[1]

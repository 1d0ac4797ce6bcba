"""Controlled rounding of a large table block by block, and the RAPID fallback.

Hundepool et al. (2024), Handbook on SDC v2, 5.5.1, "Very large tables": tau-ARGUS rounds tables
beyond about 150,000 cells by partitioning them. Here a table is split along the dimension with
the most codes: first the slab of its total (every other dimension whole), then, for each code
with children from the top of the hierarchy down, the block of that code and its children, the
code's own slab held at the value already published. Every equation of the table lies inside one
block (a total and its children share a block; the other dimensions' equations lie inside every
slab), so the blocks together are additive. A block that is still larger than ``block_cells``
is split again along another dimension. Each block takes the fewest steps it needs up to the
limit, so the table is zero-restricted where its blocks allow it.

Holding a slab fixed can leave a block without a rounding although the table as a whole has
one: a block whose every variable is split holds a face along each, and a table with all its
faces fixed may have no non-negative solution at all (its linear relaxation is infeasible, for
any number of steps). Such a block is solved again together with its siblings, as the one program
of the part around it (fewer faces held), when that part is small enough; see :func:`_merged`.
Each block is optimal only given the slabs held: the solution is additive and within its steps,
not proven optimal. Its lower bound is the least deviation of any rounding to the base, each cell
to its nearest multiple.

The RAPID solution (5.5.1.1) rounds the interior cells to their nearest multiple of the base and
publishes every total as the sum of the published interior cells (:func:`~cubeguard.methods.cells.sum_up`,
the margin kernel of every method): additive at once, but a total may end up several bases from its count.
"""

from __future__ import annotations

import itertools
import math
import os
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np

from cubeguard.cubes.tree import DimHierarchy
from cubeguard.methods.cells import sum_up
from cubeguard.methods.controlled_rounding.kernel import IntArray, Solution, controlled_round


@dataclass
class _Tally:
    """What the blocks of one table add up to while they are solved."""

    deadline: float
    blocks: int = 0
    steps_used: int = 1
    solve_seconds: float = 0.0
    constraints: int = 0
    variables: int = 0
    timed_out: bool = False
    merged: int = 0
    failed: Solution | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


def partitioned_round(
    counts: IntArray,
    hier: Sequence[DimHierarchy],
    base: int,
    steps: int,
    stop: str,
    time_limit_s: float,
    block_cells: int,
    fixed: IntArray | None = None,
) -> Solution:
    """Controlled rounding of ``counts`` block by block (see the module docstring).

    A table of at most ``block_cells`` free cells is one block: the result is then that of
    :func:`~cubeguard.methods.controlled_rounding.kernel.controlled_round`. Otherwise the status is
    ``partitioned`` (every block solved as ``stop`` asks), ``time_limit`` (a block stopped at the
    limit with a rounding), or that of the first block without a rounding.
    """
    held = np.full(counts.shape, -1, dtype=np.int64) if fixed is None else fixed
    if np.count_nonzero(held < 0) <= block_cells:
        return controlled_round(counts, hier, base, steps, stop, time_limit_s, fixed)
    started = time.perf_counter()
    tally = _Tally(deadline=started + time_limit_s)
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        published = _round_blocks(counts, hier, held, frozenset(), (base, steps, stop, block_cells), tally, pool)
    seconds = time.perf_counter() - started
    if published is None:
        assert tally.failed is not None
        return replace(
            tally.failed,
            cells=counts.size,
            blocks=tally.blocks,
            build_seconds=seconds - tally.solve_seconds,
            solve_seconds=tally.solve_seconds,
            whole=False,
            merged=tally.merged,
        )
    objective = int(np.abs(published - counts).sum())
    residual = counts % base
    bound = float(np.minimum(residual, base - residual).sum())
    return Solution(
        published,
        "time_limit" if tally.timed_out else "partitioned",
        objective,
        bound,
        (objective - bound) / objective if objective else 0.0,
        counts.size,
        tally.constraints,
        tally.variables,
        seconds - tally.solve_seconds,
        tally.solve_seconds,
        tally.steps_used,
        tally.blocks,
        whole=False,
        merged=tally.merged,
    )


Settings = tuple[int, int, str, int]  # base, steps, stop, block_cells

#: Threads solving the blocks of one depth at once (HiGHS runs without the GIL); the result does
#: not depend on it: a block's input is decided before its depth starts.
WORKERS = min(2, os.cpu_count() or 1)


def _round_blocks(
    counts: IntArray,
    hier: Sequence[DimHierarchy],
    fixed: IntArray,
    done: frozenset[int],
    settings: Settings,
    tally: _Tally,
    pool: Executor | None = None,
) -> IntArray | None:
    """The published table of one part (``fixed`` cells kept), or ``None`` when a block has no rounding.

    With ``pool`` (the outermost split only), the blocks of one depth are solved side by side.
    """
    block_cells = settings[3]
    splittable = [d for d, h in enumerate(hier) if d not in done and len(h.codes) > 1]
    if np.count_nonzero(fixed < 0) <= block_cells:
        return _solve_block(counts, hier, fixed, settings, tally)
    if not splittable:  # every dimension here is one code and its children
        fans = [d for d, h in enumerate(hier) if len(h.codes) > MIN_FAN]
        if not fans:
            return _solve_block(counts, hier, fixed, settings, tally)
        return _round_in_groups(counts, hier, fixed, max(fans, key=lambda d: len(hier[d].codes)), settings, tally)
    axis = max(splittable, key=lambda d: len(hier[d].codes))
    out = fixed.copy()
    for _, group in itertools.groupby(_blocks_along(hier[axis]), key=lambda block: block[3]):
        blocks = list(group)
        calls = [
            (
                np.take(counts, positions, axis=axis),
                [part if d == axis else h for d, h in enumerate(hier)],
                np.take(out, positions, axis=axis),
                done | {axis} if exhausted else done,
                settings,
                tally,
            )
            for positions, part, exhausted, _ in blocks
        ]
        if pool is not None and len(calls) > 1:
            solved = list(pool.map(lambda call: _round_blocks(*call), calls))
        else:
            solved = [_round_blocks(*call) for call in calls]
        for (positions, *_), sub in zip(blocks, solved, strict=True):
            if sub is None:
                return _merged(counts, hier, fixed, settings, tally)
            index: list[slice | IntArray] = [slice(None)] * counts.ndim
            index[axis] = positions
            out[tuple(index)] = sub
    return out


#: A part whose blocks failed is solved again as one program when it has at most this many times
#: ``block_cells`` free cells; a larger one fails, and so does the part around it.
MERGE_FACTOR = 8


def _merged(
    counts: IntArray, hier: Sequence[DimHierarchy], fixed: IntArray, settings: Settings, tally: _Tally
) -> IntArray | None:
    """A part with a block that has no rounding, solved again as one program when it is small enough (else None).

    Holding the faces of a block (its totals, decided in earlier blocks) can leave it without a
    rounding within the steps: in a block of four variables with every face held, the interior is
    a four-way table with fixed three-way margins, which often has no integer solution at all.
    The part around it holds fewer faces; it is one program again when it has at most
    ``MERGE_FACTOR * block_cells`` free cells. It stops at its first rounding: proving such a
    program optimal can take minutes (seen: 51 s for 6,552 free cells of a flat 3-D table), and
    the blocks around it are not optimal for the table either.
    """
    base, steps, _, block_cells = settings
    if np.count_nonzero(fixed < 0) > MERGE_FACTOR * block_cells:
        return None
    with tally.lock:
        tally.merged += 1
    return _solve_block(counts, hier, fixed, (base, steps, "first_feasible", block_cells), tally)


#: A block whose every variable is one code and its children is split further along a variable
#: with more children than this, in groups (see :func:`_round_in_groups`).
MIN_FAN = 4


def _round_in_groups(
    counts: IntArray, hier: Sequence[DimHierarchy], fixed: IntArray, axis: int, settings: Settings, tally: _Tally
) -> IntArray | None:
    """A block with one code and its many children along ``axis``, through groups of children that are never published.

    The children are cut into about the square root of their number of groups; the block of the
    code and the groups' sums is rounded first (the code held), then each group with its
    children, the group's rounded sum held. The groups' rounded sums are dropped: every published
    total is still the sum of the published cells below it, since each group's children add up
    to its held sum and the sums to the code.
    """
    h = hier[axis]
    children = np.flatnonzero(h.parent >= 0)
    groups = np.array_split(children, math.isqrt(children.size - 1) + 1)
    top = h.root

    def flat(n: int) -> DimHierarchy:
        return DimHierarchy(h.dim, tuple(f"{h.codes[top]}~{k}" for k in range(n + 1)),
                            np.array([-1] + [0] * n), np.array([0] + [1] * n))  # fmt: skip

    sums = [np.take(counts, g, axis=axis).sum(axis=axis, keepdims=True) for g in groups]
    held = [_held_sum(np.take(fixed, g, axis=axis), axis) for g in groups]  # faces held across the children
    head = _round_blocks(
        np.concatenate([np.take(counts, [top], axis=axis), *sums], axis=axis),
        [flat(len(groups)) if d == axis else x for d, x in enumerate(hier)],
        np.concatenate([np.take(fixed, [top], axis=axis), *held], axis=axis),
        frozenset(range(len(hier))),
        settings,
        tally,
    )
    if head is None:
        return _merged(counts, hier, fixed, settings, tally)
    out = fixed.copy()
    for k, g in enumerate(groups):
        part = _round_blocks(
            np.concatenate([sums[k], np.take(counts, g, axis=axis)], axis=axis),
            [flat(g.size) if d == axis else x for d, x in enumerate(hier)],
            np.concatenate([np.take(head, [k + 1], axis=axis), np.take(fixed, g, axis=axis)], axis=axis),
            frozenset(range(len(hier))),
            settings,
            tally,
        )
        if part is None:
            return _merged(counts, hier, fixed, settings, tally)
        index: list[slice | IntArray] = [slice(None)] * counts.ndim
        index[axis] = g
        out[tuple(index)] = np.take(part, np.arange(1, g.size + 1), axis=axis)
    return out


def _held_sum(fixed: IntArray, axis: int) -> IntArray:
    """Along ``axis``, the sum of held cells where every one is held (a face of another variable), else -1."""
    every = np.all(fixed >= 0, axis=axis, keepdims=True)
    return np.where(every, fixed.sum(axis=axis, keepdims=True), -1)


def _blocks_along(h: DimHierarchy) -> Iterator[tuple[IntArray, DimHierarchy, bool, int]]:
    """The blocks along one dimension in solving order: positions, their hierarchy, whether nothing is left to split, stage.

    First the total alone (stage 0); then each code with children, shallowest first, with its
    children, the code itself first (its slab, solved at an earlier stage, is the block's held
    face). Blocks of one stage (the codes of one depth) are independent of each other.
    """
    root = h.root
    yield np.array([root]), DimHierarchy(h.dim, (h.codes[root],), np.array([-1]), np.array([0])), False, 0
    parents = sorted(np.flatnonzero(~h.is_leaf).tolist(), key=lambda p: (int(h.depth[p]), p))
    for p in parents:
        children = np.flatnonzero(h.parent == p)
        positions = np.concatenate([[p], children]).astype(np.int64)
        n = children.size
        part = DimHierarchy(
            h.dim,
            tuple(h.codes[i] for i in positions),
            np.array([-1] + [0] * n),
            np.array([0] + [1] * n),
        )
        yield positions, part, True, int(h.depth[p]) + 1


def _solve_block(
    counts: IntArray, hier: Sequence[DimHierarchy], fixed: IntArray, settings: Settings, tally: _Tally
) -> IntArray | None:
    """One block through the kernel; its figures go to ``tally``."""
    base, steps, stop, _ = settings
    remaining = tally.deadline - time.perf_counter()
    solution = controlled_round(counts, hier, base, steps, stop, max(remaining, 0.0), fixed)
    with tally.lock:
        tally.blocks += 1
        tally.solve_seconds += solution.solve_seconds
        tally.constraints += solution.constraints
        tally.variables += solution.variables
        if solution.published is None:
            tally.failed = tally.failed or solution
            return None
        tally.steps_used = max(tally.steps_used, solution.steps_used or 1)
        tally.timed_out |= solution.status == "time_limit"
    return solution.published


def rapid(counts: IntArray, hier: Sequence[DimHierarchy], base: int) -> IntArray:
    """The RAPID solution (Handbook on SDC v2, 5.5.1.1): interior cells to the nearest multiple (half up), totals summed.

    >>> from cubeguard.cubes.tree import DimHierarchy
    >>> flat = DimHierarchy("D", ("T", "a", "b", "c"), np.array([-1, 0, 0, 0]), np.array([0, 1, 1, 1]))
    >>> rapid(np.array([5, 2, 2, 1]), [flat], 3).tolist()
    [6, 3, 3, 0]
    """
    inner = counts[np.ix_(*(h.leaves for h in hier))]
    residual = inner % base
    rounded = np.where(2 * residual >= base, inner - residual + base, inner - residual).astype(np.int64)
    return sum_up(rounded, hier)

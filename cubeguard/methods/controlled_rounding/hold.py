"""The same published value for a cell in every cube that has it: shared margins rounded first, then held.

A census programme publishes the same cell in many cubes (e.g. GEO x SEX with every other
variable at its total). Controlled rounding couples all cells of a cube, so two cubes rounded on
their own may publish such a cell differently. Here a step names groups of breakdowns (``hold``);
for each group, every cube that has some of its breakdowns first rounds the margin tables over
those breakdowns (the other variables at their totals), smallest first, each with the margins of
its own margins held, and then rounds itself with all of them held. A margin table depends only
on the counts and codes of its own breakdowns, and is rounded by the same deterministic solve in
every cube, so every cube publishes the same values for it without knowing of the others: cubes
stay independent and may be protected in parallel. The grand total is published at its nearest
multiple of the base (half up), the same in every cube.

This holds when a breakdown has the same codes in every cube, and an earlier step (e.g. the cell
key method, consistent per cell) leaves the shared cells equal across cubes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cubeguard.cubes.tree import DimHierarchy
from cubeguard.methods.cells import held_sets
from cubeguard.methods.controlled_rounding.kernel import IntArray, Solution, controlled_round


def held_cells(
    counts: IntArray,
    hier: Sequence[DimHierarchy],
    hold: Sequence[Sequence[str]],
    base: int,
    steps: int,
    time_limit_s: float,
) -> tuple[IntArray, list[tuple[tuple[str, ...], Solution]]]:
    """The cells of ``counts`` held at the rounded margin tables' values (-1 elsewhere), and each table's solve.

    Each margin table is rounded with ``stop: optimal`` in the breakdowns' sorted order, so the
    program, and HiGHS's answer, is the same in every cube. A table without a rounding within
    ``steps`` (given its own held margins) comes back with a solve whose ``published`` is ``None``.
    """
    names = [h.dim for h in hier]
    fixed = np.full(counts.shape, -1, dtype=np.int64)
    if not hold:
        return fixed, []
    grand = tuple(h.root for h in hier)
    residual = int(counts[grand]) % base
    fixed[grand] = int(counts[grand]) - residual + (base if 2 * residual >= base else 0)
    solves: list[tuple[tuple[str, ...], Solution]] = []
    for margin in held_sets(hold, names):
        axes = sorted(names.index(d) for d in margin)  # the cube's order of these dimensions
        order = [names.index(d) for d in margin]  # the sorted names' order: the same in every cube
        perm = [axes.index(a) for a in order]
        index = tuple(slice(None) if d in margin else h.root for d, h in zip(names, hier, strict=True))
        table = np.transpose(counts[index], perm)
        solution = controlled_round(
            np.ascontiguousarray(table),
            [hier[a] for a in order],
            base,
            steps,
            "optimal",
            time_limit_s,
            np.ascontiguousarray(np.transpose(fixed[index], perm)),
        )
        solves.append((margin, solution))
        if solution.published is None:
            return fixed, solves
        fixed[index] = np.transpose(solution.published, np.argsort(perm))
    return fixed, solves

"""Differencing across tables: every cube of a population at once, shared cells tied.

Two cubes that publish the same set of units (a margin of one is a cell of the other, or the same
code at two geographic levels) give the intruder two intervals for one original; with the
additivity of both cubes, a cell can be pinned that neither cube gives away alone: geographical
differencing and differencing across overlapping tables (Handbook on SDC v2, 5.2; Shlomo 2009,
section 5). Scored per cube, on the cube's own cells.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from cubeguard.attack.cells import CellIndex, CubeView, by_population
from cubeguard.attack.score import AttackFacts, score
from cubeguard.attack.system import Bounder, Limits, refine_targets, solve, start

NAME = "differencing"


def attack(views: Sequence[CubeView], bounds: Mapping[str, Bounder | None], limits: Limits,
           index: CellIndex | None = None) -> list[AttackFacts]:  # fmt: skip
    """The cubes of each population together (a population with one cube adds nothing to feasibility)."""
    index = index or CellIndex.of(views)
    deadline = time.monotonic() + limits.lp_seconds
    out: list[AttackFacts] = []
    for group in by_population(views).values():
        state = start(group, bounds)
        solve(state, limits, index)
        refine_targets(state, limits, deadline)
        out.extend(score(NAME, v, state.lo[n], state.hi[n]) for n, v in enumerate(group))
    return out

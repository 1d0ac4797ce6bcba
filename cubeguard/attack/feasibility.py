"""Feasibility intervals, one cube at a time: its published bounds and its own additivity.

What tau-ARGUS's audit does for suppressed cells (Hundepool et al. 2024, Handbook on SDC v2, 4.2.4
and 5.2), for every cell of every perturbative method: an original small cell whose interval is
one value is recovered with certainty ("unpicking" a rounded or perturbed table from its margins).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from cubeguard.attack.cells import CubeView
from cubeguard.attack.score import AttackFacts, score
from cubeguard.attack.system import Bounder, Limits, refine_targets, solve, start

NAME = "feasibility"


def attack(views: Sequence[CubeView], bounds: Mapping[str, Bounder | None], limits: Limits) -> list[AttackFacts]:
    """Each cube alone: propagation, then linear programs for the targets it leaves narrow."""
    deadline = time.monotonic() + limits.lp_seconds
    out: list[AttackFacts] = []
    for view in sorted(views, key=lambda v: v.published.size):  # linear programs for the small cubes first
        state = start([view], bounds)
        solve(state, limits)
        refine_targets(state, limits, deadline)
        out.append(score(NAME, view, state.lo[0], state.hi[0]))
    return out

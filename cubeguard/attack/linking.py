"""Linking persons to households through household size (the attack the table service was open to).

Persons who live in households of size ``k`` are ``k`` times those households, in every cell of the
household variables. A persons cube and a households cube that both cross household size give the
intruder two intervals for one number of households; intersected, and with both cubes' additivity,
they can pin a small count (issue 34: one cell said 3 persons and 0 households, so exactly one
household of five). Scored on the cells of the two populations' cubes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cubeguard.attack.cells import CellIndex, CubeView
from cubeguard.attack.score import AttackFacts, score
from cubeguard.attack.system import Bounder, Limits, Link, refine_targets, solve, start

NAME = "linking"


def attack(views: Sequence[CubeView], bounds: Mapping[str, Bounder | None], limits: Limits,
           link: Link | None, index: CellIndex | None = None) -> list[AttackFacts]:  # fmt: skip
    """Persons and households cubes together, shared cells and linked cells tied; none without a link."""
    if link is None:
        return []
    group = [v for v in views if v.population in (link.persons, link.households)]
    variables = {
        p: {var for v in group if v.population == p for var in v.variables} for p in (link.persons, link.households)
    }
    if not all(link.variable in found for found in variables.values()):
        return []  # no cube of one of the populations crosses household size: nothing links
    state = start(group, bounds)
    solve(state, limits, index or CellIndex.of(group), link)
    refine_targets(state, limits)
    return [score(NAME, v, state.lo[n], state.hi[n]) for n, v in enumerate(group)]

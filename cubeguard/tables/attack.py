"""The table service attacked as an intruder would: the tables it answered, with its protection's bounds.

An intruder of the service holds the tables it asked for (:func:`cubeguard.attack.jsonstat.view_of_table`)
and, conservatively, the protection's secret bounds too (the cell key method's D). Every attack of
:mod:`cubeguard.attack` runs on those tables together, and its self-test on the same tables
unprotected, tabulated here from the release's key store with the counts left as they are.

Persons tables crossing the household size with household-level variables hold cells derived
from the households' published counts (:mod:`cubeguard.tables.households`), which the cell key
bounds do not describe; they are left out and counted, and their linking attack is scripted in
``tests/integration/test_tables_households.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from cubeguard.attack import AttackReport, CubeView, Limits, attack_release
from cubeguard.attack.jsonstat import view_of_table, withheld_aware
from cubeguard.attack.system import Bounder
from cubeguard.ckm.keys import KeyScale
from cubeguard.pipeline.attack import household_link
from cubeguard.tables.engine import TableEngine
from cubeguard.tables.query import TableQuery


@dataclass(frozen=True)
class TablesAttack:
    """What the attacks found in the service's tables, and the tables left out (derived cells)."""

    report: AttackReport
    tables: int
    derived: int


def attack_tables(engine: TableEngine, answers: Sequence[tuple[TableQuery, Mapping[str, Any]]],
                  limits: Limits = Limits(), progress: Callable[[str, int], None] | None = None,
                  cubes: tuple[Sequence[CubeView], Mapping[str, Bounder | None]] = ((), {})) -> TablesAttack:  # fmt: skip
    """Every attack on the answered tables (JSON-stat bodies of ``answers``), scored against their originals.

    ``cubes``: published cubes (with their originals) and bounds to attack beside the tables, as an
    intruder holding both would.
    """
    variables = {b: bd.classification.variable for b, bd in engine.offered.items()}
    plain = TableEngine(engine.release, engine.store, _unprotected, engine.release_id, engine.magnitudes)
    views = []
    for query, body in answers:
        if engine.derives(query):
            continue
        original = np.asarray(plain.tabulate(query)["count"].values, dtype=np.int64)
        views.append(view_of_table(body, variables, table_name(query), original))
    served = withheld_aware(engine.bounds)  # an area a per-area query withheld holds any count
    bounds: dict[str, Bounder | None] = {**cubes[1], **dict.fromkeys((v.cube for v in views), served)}
    report = attack_release([*cubes[0], *views], bounds, limits, household_link(engine.release), progress)
    return TablesAttack(report, len(views), len(answers) - len(views))


def table_name(query: TableQuery) -> str:
    """A table's name in the findings: population and breakdowns (codes of filters never reach it)."""
    return f"{query.population}:{','.join(query.breakdowns)}" + (" per area" if query.per_area else "")


def _unprotected(
    counts: npt.NDArray[np.int64], _keys: npt.NDArray[np.uint64], _scale: KeyScale
) -> npt.NDArray[np.int64]:
    return counts

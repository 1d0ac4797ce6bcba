"""The demo release (configs/demo.yaml, at 60,000 synthetic persons): served tables match every published cube.

Random queries over the demo's offered levels (a geography and up to three other variables, filters,
both populations); every cell a query shares with one of the seven published cubes (seed 000's
seven-way hypercube, five EU hypercubes and the households cube) must have the published value.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from cubeguard.config.models import HypercubeSpec
from cubeguard.release.run import PlainRunner, prepare, walk
from cubeguard.release.spec import RunSpec
from cubeguard.release.steps import Services
from cubeguard.tables.engine import TableEngine
from cubeguard.tables.query import TableQuery
from cubeguard.tables.rules import check_form
from cubeguard.tables.served import open_served
from expectations.release import gate_release
from schemas.validate import validate_release
from tests.integration.test_tables_engine import _compare, _published

DEMO = Path(__file__).resolve().parents[2] / "configs" / "demo.yaml"
QUERIES = 140  # 20 per published cube

pytestmark = pytest.mark.slow


def test_every_cell_of_every_published_demo_cube_that_a_table_holds_is_served_identically(tmp_path: Path) -> None:
    overrides = {
        "input.microdata": str(tmp_path / "persons.parquet"),
        "input.synthetic.persons": 60_000,
        "output.folder": str(tmp_path / "out"),
        # at 60,000 persons the demo's utility and small-cell gates block (they are set for 1.5M)
        "gates.max_hellinger": 1.0,
        "gates.max_small_cells_unchanged": 1.0,
    }
    services = Services(validate=validate_release, gate=gate_release)
    spec, prepared = prepare(RunSpec(str(DEMO), overrides, release_id="demo-tables"), services)
    walk(spec, PlainRunner(services), {"prepare": prepared})
    engine = open_served(DEMO, overrides={"output.folder": str(tmp_path / "out")})
    assert engine.release_id == "demo-tables"
    cubes = _published(engine)
    assert len(cubes) == 7
    rng = np.random.default_rng(7)
    compared = dict.fromkeys(cubes, 0)
    for k in range(QUERIES):
        query = _query_within(engine, engine.release.config.hypercubes[k % len(cubes)], rng)
        check_form(query, engine.spec, engine.offered)  # no rule on values: consistency is the point here
        if math.prod(len(engine.offered[b].codes) for b in query.breakdowns) > 3_000:
            continue  # compared cell by cell in Python: keep the test quick
        for cube_id, n in _compare(engine, query, engine.tabulate(query), cubes).items():
            compared[cube_id] += n
    assert all(n >= 100 for n in compared.values()), compared
    assert sum(compared.values()) > 20_000, compared


def _query_within(engine: TableEngine, cube: HypercubeSpec, rng: np.random.Generator) -> TableQuery:
    """Up to three of a cube's variables at any offered level, maybe restricted to a code of a fourth."""
    levels: dict[str, list[str]] = {}
    for bid, bd in engine.offered.items():
        levels.setdefault(bd.classification.variable, []).append(bid)
    own = [engine.release.breakdowns[b].classification.variable for b in cube.breakdowns]
    usable = [str(v) for v in rng.permutation([v for v in own if v in levels])]
    chosen = [str(rng.choice(levels[v])) for v in usable[: int(rng.integers(1, 4))]]
    filters = {}
    if len(usable) > len(chosen) and rng.random() < 0.5:
        bid = str(rng.choice(levels[usable[len(chosen)]]))
        filters[bid] = str(rng.choice(engine.offered[bid].codes))
    return TableQuery(breakdowns=chosen, population=cube.population, filters=filters)

"""``cubeguard attack --service``: the intruder asks the table service over HTTP and attacks what it answers.

The tables of one and two variables that a served release answers are attacked beside its cubes
(:func:`cubeguard.tables.attack.attack_tables`), each attack also on the same tables unprotected.
A weak cell key step (D = 1, js = 0) must give small cells away, so the test can fail; the tiny
release's own step (D = 5, js = 2) must give none.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cubeguard.pipeline.attack import cube_views
from cubeguard.publish.stage import published_root
from cubeguard.tables.attack import TablesAttack, attack_tables
from cubeguard.tables.served import open_served
from service.app import create_app
from service.intruder import ask_tables
from tests.integration.test_tables_attacks import CONFIG, TABLES, _persons
from tests.tables_release import RELEASE_ID, publish

WEAK = CONFIG.replace("D: 5, V: 3, js: 2", "D: 1, V: 0.5, js: 0").replace(
    "gates: {forbidden_values: [1, 2]}", "gates: {max_recovered_by_attack: 1000000}"
)
COUNTS_ONLY = TABLES.replace("  means: {age: {column: age}}\n", "")


def _attacked(config: Path) -> TablesAttack:
    with TestClient(create_app(config, None, {}, precompute=False)) as client:
        asked = ask_tables("http://testserver", client=client)
    assert asked.release_id == RELEASE_ID and len(asked.answers) == 5 + 9  # levels alone, pairs of two variables
    engine = open_served(config, asked.release_id)
    cubes = cube_views(engine.release, None, published_root(engine.release) / RELEASE_ID / "store.zarr")
    return attack_tables(engine, asked.answers, cubes=cubes)


@pytest.mark.parametrize("weak", [False, True], ids=["tiny", "weak"])
def test_the_service_tables_give_nothing_away_unless_the_step_is_weak(tmp_path: Path, weak: bool) -> None:
    assert WEAK != CONFIG and "means" not in COUNTS_ONLY
    found = _attacked(publish(tmp_path, tables=COUNTS_ONLY, data=_persons(), config=WEAK if weak else CONFIG))
    report = found.report
    assert not report.broken  # every attack recovers the unprotected tables' small cells
    tables = [f for f in report.published if ":" in f.cube]
    assert sum(f.targets for f in tables) > 50
    certain = sum(f.certain for f in tables)
    assert certain > 0 if weak else certain == 0
    assert found.derived == 0 and found.tables == len(tables) // 3  # feasibility, differencing, averaging


def test_an_address_that_is_no_table_service_says_what_to_give(tmp_path: Path) -> None:
    with pytest.raises(
        Exception, match=r"does not answer .*start it with cubeguard tables CONFIG, or give its address"
    ):
        ask_tables("http://127.0.0.1:9")


def test_a_server_that_is_no_table_service_says_what_to_give() -> None:
    from fastapi import FastAPI
    from fastapi.responses import HTMLResponse

    page = FastAPI()
    page.get("/api/release", response_class=HTMLResponse)(lambda: "<html>a web site</html>")
    with TestClient(page) as client, pytest.raises(Exception, match=r"answered /api/release with 200 and no table"):
        ask_tables("http://testserver", client=client)

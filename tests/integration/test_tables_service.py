"""The table service over HTTP: what it offers, answers in three formats, refusals, limits, admin, the log."""

from __future__ import annotations

import csv
import dataclasses
import io
import itertools
import socket
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import openpyxl
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from cli.main import app
from cubeguard.audit.errors import AuditStoreError
from cubeguard.audit.queries import TABLE, QueryLog
from cubeguard.cubes.store import open_cube
from cubeguard.errors import CubeguardError
from cubeguard.pipeline.auditing import audit_url_of
from cubeguard.tables import formats
from cubeguard.tables.formats import MEDIA
from cubeguard.tables.query import TableQuery
from service.app import create_app
from tests.conftest import TINY_CONFIG
from tests.tables_release import RELEASE_ID, TABLES, publish, with_magnitudes
from tests.unit.test_sdmx_csv import sdmx2_columns

TOKEN = "correct horse battery staple"


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rules = TABLES + "  rate_limit_per_minute: 40\n  admin_token_env: CUBEGUARD_TEST_TABLES_TOKEN\n"
    return publish(tmp_path_factory.mktemp("service"), tables=rules)


@pytest.fixture
def client(config: Path, monkeypatch: pytest.MonkeyPatch) -> TestClient:
    monkeypatch.setenv("CUBEGUARD_TEST_TABLES_TOKEN", TOKEN)
    return TestClient(create_app(config))


def test_release_and_variables_say_what_may_be_asked_and_nothing_secret(client: TestClient) -> None:
    release = client.get("/api/release").json()
    assert release["release_id"] == RELEASE_ID
    assert [p["id"] for p in release["populations"]] == ["total", "households"]
    assert release["rules"]["max_dimensions"] == 3 and release["means"] == [{"id": "age", "label": "Age in years"}]
    text = client.get("/api/release").text + client.get("/api/variables").text
    assert '"D"' not in text and '"V"' not in text and TOKEN not in text
    levels = {lv["id"]: lv for v in client.get("/api/variables").json() for lv in v["levels"]}
    assert list(levels) == ["GEO.1", "GEO.2", "SEX", "AGE.L", "AGE.M"]
    assert [c["code"] for c in levels["GEO.2"]["codes"]] == ["0", "A", "A1", "A2", "B", "B1"]


def test_the_openapi_description_lists_the_endpoints(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/api/release", "/api/variables", "/api/cubes", "/api/table", "/admin/reload"} <= set(paths)
    assert set(paths["/api/table"]) == {"get", "post"}
    formats = next(p for p in paths["/api/table"]["get"]["parameters"] if p["name"] == "format")
    assert formats["schema"]["enum"] == ["json", "csv", "sdmx-csv", "xlsx"]
    assert "422" in paths["/api/cubes"]["get"]["responses"]


def test_cubes_lists_the_published_cubes_the_service_can_open(client: TestClient) -> None:
    cubes = client.get("/api/cubes").json()
    assert cubes == [
        {"id": "c1", "label": "c1", "population": "total", "breakdowns": ["GEO.2", "SEX", "AGE.M"]},
        {"id": "c2", "label": "c2", "population": "total", "breakdowns": ["GEO.1", "AGE.L"]},
        {"id": "hh", "label": "hh", "population": "households", "breakdowns": ["GEO.2"]},
    ]
    for cube in cubes:  # each opens as a table
        query = {"breakdowns": ",".join(cube["breakdowns"]), "population": cube["population"]}
        assert client.get("/api/table", params=query).status_code == 200


def test_cubes_leaves_out_cubes_the_rules_or_the_offer_refuse(tmp_path: Path) -> None:
    narrow = TABLES.replace("max_dimensions: 3", "max_dimensions: 2").replace("populations: [total, households]", "")
    client = TestClient(create_app(publish(tmp_path, tables=narrow), precompute=False))
    assert [c["id"] for c in client.get("/api/cubes").json()] == ["c2"]  # c1: 3 variables; hh: households


def test_cubes_refuses_any_parameter(client: TestClient) -> None:
    refused = client.get("/api/cubes", params={"population": "total"})
    assert refused.status_code == 422
    assert refused.json() == {
        "refused": True,
        "rule": "unknown_parameter",
        "parameter": "population",
        "message": "parameter 'population' is not known; /api/cubes takes no parameters",
    }
    nameless = client.get("/api/cubes?=1")
    assert nameless.status_code == 422 and nameless.json()["rule"] == "malformed_parameter"
    too_long = client.get("/api/cubes?x=" + "a" * 5000)
    assert too_long.status_code == 414 and too_long.json()["rule"] == "query_too_large"


def test_xlsx_holds_the_cells_of_the_json_answer(client: TestClient) -> None:
    query = {"breakdowns": "GEO.2,SEX", "mean": "age"}
    answer = client.get("/api/table", params=query).json()
    got = client.get("/api/table", params={**query, "format": "xlsx"})
    assert got.status_code == 200 and got.headers["content-type"] == MEDIA["xlsx"]
    assert got.headers["content-disposition"] == 'attachment; filename="GEO_2-SEX.xlsx"'
    sheets = openpyxl.load_workbook(io.BytesIO(got.content), read_only=True).worksheets
    assert len(sheets) == 1
    rows = [list(r) for r in sheets[0].iter_rows(values_only=True)]
    assert rows[0] == ["GEO.2", "GEO.2.label", "SEX", "SEX.label", "count", "mean"]
    cells = itertools.product(*(answer["dimension"][d]["category"]["index"] for d in answer["id"]))
    labels = {d: answer["dimension"][d]["category"]["label"] for d in answer["id"]}
    expected = [
        [x for d, c in zip(answer["id"], codes, strict=True) for x in (c, labels[d][c])] + [v, m]
        for codes, v, m in zip(cells, answer["value"], answer["extension"]["mean"]["value"], strict=True)
    ]
    assert rows[1:] == expected


def test_an_xlsx_over_a_worksheets_rows_is_refused(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(formats, "XLSX_MAX_ROWS", 10)
    refused = client.get("/api/table", params={"breakdowns": "GEO.2,SEX", "format": "xlsx"})
    assert refused.status_code == 422
    assert refused.json() == {
        "refused": True,
        "rule": "xlsx_rows",
        "parameter": "format",
        "message": "the table has 18 cells but a worksheet holds 9; ask for format=csv, or choose coarser levels",
    }
    assert client.get("/api/table", params={"breakdowns": "GEO.2,SEX", "format": "csv"}).status_code == 200


def test_release_says_in_plain_words_what_the_protection_means(client: TestClient) -> None:
    use = client.get("/api/release").json()["protection_use"]
    assert use.startswith("Every count was changed by a small amount of noise")
    assert "Differences between tables" in use and "never exact" in use and "sum of its parts" in use


def test_json_stat_csv_and_sdmx_csv_hold_the_same_published_counts(client: TestClient, config: Path) -> None:
    query = {"breakdowns": "GEO.2,SEX,AGE.M"}
    answer = client.get("/api/table", params=query).json()
    assert (answer["version"], answer["class"], answer["id"]) == ("2.0", "dataset", ["GEO.2", "SEX", "AGE.M"])
    assert answer["size"] == [6, 3, 6] and answer["dimension"]["GEO.2"]["category"]["child"]["A"] == ["A1", "A2"]
    published = open_cube(config.parent / "out" / "published" / RELEASE_ID / "store.zarr", "c1")
    np.testing.assert_array_equal(answer["value"], published["count"].values.ravel())
    assert answer["extension"]["release_id"] == RELEASE_ID and answer["extension"]["unit"] == "persons"
    plain = list(csv.reader(io.StringIO(client.get("/api/table", params={**query, "format": "csv"}).text)))
    cells = itertools.product(*(answer["dimension"][d]["category"]["index"] for d in answer["id"]))
    assert plain[0] == ["GEO.2", "GEO.2.label", "SEX", "SEX.label", "AGE.M", "AGE.M.label", "count"]
    labels = {d: answer["dimension"][d]["category"]["label"] for d in answer["id"]}
    assert plain[1:] == [
        [x for d, c in zip(answer["id"], codes, strict=True) for x in (c, labels[d][c])] + [str(v)]
        for codes, v in zip(cells, answer["value"], strict=True)
    ]
    assert plain[1][:4] == ["0", "Country", "0", "Total"]  # labels beside codes
    sdmx = client.get("/api/table", params={**query, "format": "sdmx-csv"})
    assert sdmx.headers["content-type"].startswith("application/vnd.sdmx.data+csv")
    rows = list(csv.reader(io.StringIO(sdmx.text)))
    assert rows[0] == sdmx2_columns("GEO", "SEX", "AGE")
    assert {tuple(r[:3]) for r in rows[1:]} == {("dataflow", "CUBEGUARD:CENSUS_TABLE(1.0)", "I")}
    assert [int(r[7]) for r in rows[1:]] == answer["value"]
    totals = [r[3:6] for r in rows[1:] if all(c == "_T" for c in r[3:6])]
    assert len(totals) == 1  # each dimension's total is the SDMX total code


def test_post_takes_the_query_as_json_with_filters_and_a_mean(client: TestClient) -> None:
    body = {"breakdowns": ["SEX"], "filters": {"GEO.2": "A1"}, "mean": "age"}
    answer = client.post("/api/table", json=body).json()
    assert answer["extension"]["filters"] == {"GEO.2": "A1"} and answer["extension"]["mean"]["of"] == "age"
    assert len(answer["extension"]["mean"]["value"]) == len(answer["value"]) == 3
    same = client.get("/api/table", params={"breakdowns": "SEX", "filter": "GEO.2:A1", "mean": "age"}).json()
    assert same == answer


def test_a_refusal_is_422_with_the_rule_and_what_to_change(client: TestClient) -> None:
    refused = client.get("/api/table", params={"breakdowns": "SEX,AGE.L,AGE.M"})
    assert refused.status_code == 422
    assert refused.json() == {
        "refused": True,
        "rule": "one_level_per_variable",
        "parameter": "breakdowns",
        "message": "variable AGE appears twice; cross one level of it",
    }


def test_each_client_is_limited_per_minute_and_every_query_is_logged(client: TestClient, config: Path) -> None:
    log = QueryLog(audit_url_of(client.app.state.service.engine.release))  # type: ignore[attr-defined]
    before = len(log.rows())
    statuses = [client.get("/api/table", params={"breakdowns": "SEX"}).status_code for _ in range(45)]
    assert statuses.count(200) <= 40 and statuses[-1] == 429
    limited = client.get("/api/table", params={"breakdowns": "SEX"}).json()
    assert limited["rule"] == "rate_limit" and "wait a moment" in limited["message"]
    rows = log.rows()[before:]
    assert len(rows) == 46 and {r.outcome for r in rows} == {"answered", "limited"}
    assert (
        rows[0].client == "testclient" and rows[0].release_id == RELEASE_ID and rows[0].query["breakdowns"] == ["SEX"]
    )
    assert rows[0].cells == 3


def test_refused_queries_are_logged_with_their_rule(client: TestClient) -> None:
    log = QueryLog(audit_url_of(client.app.state.service.engine.release))  # type: ignore[attr-defined]
    client.get("/api/table", params={"breakdowns": "GEO.9"})
    last = log.rows()[-1]
    assert (last.outcome, last.rule) == ("refused", "offered_breakdowns")


def test_the_log_is_append_only(client: TestClient) -> None:
    log = QueryLog(audit_url_of(client.app.state.service.engine.release))  # type: ignore[attr-defined]
    client.get("/api/table", params={"breakdowns": "SEX"})
    with log._engine.begin() as connection, pytest.raises(Exception, match="append-only"):
        connection.exec_driver_sql("DELETE FROM table_queries")


def test_reload_needs_the_admin_token(client: TestClient) -> None:
    assert client.post("/admin/reload").status_code == 401
    wrong = client.post("/admin/reload", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.json()["rule"] == "admin_token"
    ok = client.post("/admin/reload", headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200 and ok.json() == {"release_id": RELEASE_ID}
    missing = client.post("/admin/reload", params={"release_id": "nope"}, headers={"Authorization": f"Bearer {TOKEN}"})
    assert missing.status_code == 409 and "no publication of release 'nope'" in missing.json()["message"]


def test_without_a_token_in_the_environment_admin_is_off(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUBEGUARD_TEST_TABLES_TOKEN", raising=False)
    client = TestClient(create_app(config))
    assert client.post("/admin/reload", headers={"Authorization": "Bearer "}).status_code == 401


def test_a_release_without_a_tables_section_is_not_served(tmp_path: Path) -> None:
    config = publish(tmp_path, tables="")
    with pytest.raises(CubeguardError, match=r"tiny\.yaml has no 'tables' section; add one and run the release"):
        create_app(config)


def test_a_config_with_tables_but_no_release_yet_says_so(tmp_path: Path) -> None:
    (tmp_path / "tiny.yaml").write_text(with_magnitudes(TINY_CONFIG) + TABLES)
    with pytest.raises(CubeguardError, match=r"no published release of tiny.yaml has a key store in .*; add 'tables'"):
        create_app(tmp_path / "tiny.yaml")


@pytest.mark.parametrize("precompute", [True, False])
def test_only_the_served_app_tabulates_crossings(
    config: Path, monkeypatch: pytest.MonkeyPatch, precompute: bool
) -> None:
    """The command's checking app (more than one worker) must not tabulate crossings it never serves."""
    started: list[str] = []
    monkeypatch.setattr("service.app._build_crossings", lambda engine: started.append(engine.release_id))
    create_app(config, precompute=precompute)
    assert started == ([RELEASE_ID] if precompute else [])


def test_breakdowns_may_be_comma_separated_or_repeated(client: TestClient) -> None:
    """A repeated ``breakdowns=`` used to keep only the last one: a table of SEX for GEO.2 x SEX."""
    joined = client.get("/api/table", params={"breakdowns": "GEO.2,SEX"}).json()
    repeated = client.get("/api/table", params=[("breakdowns", "GEO.2"), ("breakdowns", "SEX")]).json()
    assert repeated["id"] == joined["id"] == ["GEO.2", "SEX"]
    assert repeated["value"] == joined["value"]


def test_a_port_in_use_stops_the_command_with_one_sentence(config: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = CliRunner().invoke(app, ["tables", str(config), "--port", str(port)])
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    assert f"cannot listen on 127.0.0.1:{port} (Address already in use); choose another --port or --host" in said


def test_concurrent_queries_are_each_logged_once_in_groups(tmp_path: Path) -> None:
    log = QueryLog(f"sqlite:///{tmp_path / 'log.sqlite'}")
    with ThreadPoolExecutor(max_workers=20) as pool:
        list(pool.map(lambda k: log.append(f"c{k % 7}", "r", {"k": k}, "answered", None, k), range(400)))
    rows = log.rows()
    assert sorted(r.query["k"] for r in rows) == list(range(400))
    assert [r.seq for r in rows] == list(range(1, 401))


def test_a_group_is_one_transaction_and_a_failed_one_is_an_audit_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The writer inserts through the driver's connection, outside SQLAlchemy's transactions: a group
    # must still commit whole or not at all, and a driver's error must reach every caller of the group.
    log = QueryLog(f"sqlite:///{tmp_path / 'log.sqlite'}")
    row = {"at": "2026-11-29T00:00:00+00:00", "client": "c", "release_id": "r", "query": "{}", "outcome": "answered",
           "rule": None, "cells": 1}  # fmt: skip
    error = log._insert([row, {**row, "at": None}])  # the second row breaks NOT NULL
    assert isinstance(error, AuditStoreError) and "NOT NULL" in str(error)
    assert log.rows() == []  # the first row was not committed on its own
    monkeypatch.setattr(log, "_insert_sql", log._insert_sql.replace(TABLE, "no_such_table"))
    with pytest.raises(AuditStoreError, match=r"a query could not be logged in .*no such table: no_such_table"):
        log.append("c", "r", {"k": 1}, "answered", None, 1)
    monkeypatch.undo()
    monkeypatch.setattr(log, "_insert", lambda rows: 1 / 0)  # not the database's error: the writer must live on
    with pytest.raises(AuditStoreError, match=r"a query could not be logged in .*division by zero"):
        log.append("c", "r", {"k": 1}, "answered", None, 1)
    monkeypatch.undo()
    log.append("c", "r", {"k": 2}, "answered", None, 2)  # the writer goes on after failed groups
    assert [r.query for r in log.rows()] == [{"k": 2}]


def test_a_json_answer_holds_no_more_memory_than_its_length(client: TestClient) -> None:
    # The service caches answers' bytes: orjson's own buffer held 2.7 times the JSON of a 10M-person table
    engine = client.app.state.service.engine  # type: ignore[attr-defined]
    small = engine.answer(TableQuery(breakdowns=["GEO.2", "SEX"], mean="age"))
    n = 50_000  # as many cells as a median 4-way table of the EU programme (values only: encoding reads no codes)
    answer = dataclasses.replace(small, count=np.arange(n) % 977, mean=np.linspace(0.0, 95.0, n).round(1))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        body = formats.encode(answer, "json")
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(body) > 400_000  # orjson grew its buffer several times
    assert held < 1.1 * len(body), f"{held:,} bytes held for {len(body):,} bytes of JSON"  # 4.7 times before

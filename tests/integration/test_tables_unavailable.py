"""The table service while nothing can be served: a clear 503, then answers again (issue 38).

Every query is logged in the release's audit store before its answer leaves, so while the store
cannot be written (here a real PostgreSQL database that stops taking connections) no table is
answered: the client gets HTTP 503 with one sentence and ``Retry-After``, never a 500 or an
unlogged answer, and the service answers again once the database is back. An unreadable release
(an ``OSError`` reading its files) answers 503 too.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cubeguard.audit.queries import QueryLog
from service.app import RETRY_AFTER, create_app
from tests.conftest import TINY_CONFIG
from tests.postgres import Server
from tests.tables_release import publish

QUERY = {"breakdowns": "GEO.2,SEX"}


def _outcomes(client: TestClient) -> dict[str, float]:
    """``cubeguard_table_queries_total`` by outcome, from a scrape of ``/metrics``."""
    found = {}
    for line in client.get("/metrics").text.splitlines():
        if line.startswith("cubeguard_table_queries_total{"):
            labels, value = line.rsplit(" ", 1)
            found[labels.split('outcome="')[1].split('"')[0]] = float(value)
    return found


def _unavailable(answer: object, what: str) -> None:
    assert answer.status_code == 503, answer.text  # type: ignore[attr-defined]
    body = answer.json()  # type: ignore[attr-defined]
    assert body == {"refused": False, "error": "unavailable",
                    "message": f"no table can be answered just now ({what}); ask again in a minute"}  # fmt: skip
    assert answer.headers["retry-after"] == str(RETRY_AFTER)  # type: ignore[attr-defined]


def test_a_query_log_that_is_down_answers_503_and_the_service_answers_again_after(
    tmp_path: Path, postgres: Server, pg_url: str
) -> None:
    config = publish(tmp_path, config=TINY_CONFIG.replace("output: {folder: out}",
                                                          f"output: {{folder: out, audit_url: '{pg_url}'}}"))  # fmt: skip
    client = TestClient(create_app(config, precompute=False))
    assert client.get("/api/table", params=QUERY).status_code == 200
    database = pg_url.rsplit("/", 1)[1]
    with postgres.admin() as admin:  # the database stops taking connections and drops the service's
        admin.execute(f"ALTER DATABASE {database} ALLOW_CONNECTIONS false")
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (database,))
    try:
        for params in (QUERY, {"breakdowns": "SEX"}, {"breakdowns": ""}):  # cached, new and malformed alike
            answer = client.get("/api/table", params=params)
            _unavailable(answer, "queries cannot be logged")
            assert "127.0.0.1" not in answer.text and database not in answer.text
    finally:
        with postgres.admin() as admin:
            admin.execute(f"ALTER DATABASE {database} ALLOW_CONNECTIONS true")
    assert client.get("/api/table", params={"breakdowns": "SEX"}).status_code == 200  # back without a restart
    assert _outcomes(client) == {"answered": 2.0, "unavailable": 3.0}
    log = QueryLog(pg_url)
    try:
        assert [row.outcome for row in log.rows()] == ["answered", "answered"]  # nothing answered unlogged
    finally:
        log.close()


def test_a_release_that_cannot_be_read_answers_503(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    client = TestClient(create_app(publish(tmp_path), precompute=False))
    engine = client.app.state.service.engine  # type: ignore[attr-defined]

    def unreadable(query: object) -> object:
        raise OSError(errno.EIO, "Input/output error", "/secret/path/keys.npy")

    monkeypatch.setattr(engine, "answer", unreadable)
    answer = client.get("/api/table", params=QUERY)
    _unavailable(answer, "the release cannot be read")
    assert "secret" not in answer.text
    monkeypatch.undo()
    assert client.get("/api/table", params=QUERY).status_code == 200


def test_crossings_that_stop_building_say_so_in_the_log(caplog: pytest.LogCaptureFixture) -> None:
    import time
    from types import SimpleNamespace

    from service.app import _build_crossings

    def crash() -> None:
        raise SystemError("AST constructor recursion depth mismatch")

    with caplog.at_level("ERROR", logger="service.app"):
        _build_crossings(SimpleNamespace(build_crossings=crash, release_id="r9"))  # type: ignore[arg-type]
        deadline = time.monotonic() + 10
        while not caplog.records and time.monotonic() < deadline:
            time.sleep(0.05)
    assert [r.getMessage() for r in caplog.records] == [
        "the crossings of release r9 stopped (SystemError); tables are tabulated per query"
    ]

"""The audit trail on a real PostgreSQL server (issue 38), started and stopped by the tests.

The same append-only guarantees and hash chain as on SQLite; appends from two processes at once
keep one valid chain; a release records and publishes through it, and `audit verify` and
`audit reproduce` read it; a database that is down stops a release before it does any work, and a
connection killed at the audit append publishes nothing; the table service's query log is
append-only there too.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import psycopg
import pytest

import cubeguard.audit.store as store_module
from cubeguard.audit.queries import QueryLog
from cubeguard.audit.store import AuditStore
from cubeguard.audit.verify import verify
from cubeguard.errors import CubeguardError
from cubeguard.release.plan import plan_release
from cubeguard.release.run import PlainRunner, prepare, walk
from cubeguard.release.spec import RunSpec
from cubeguard.release.steps import Services
from expectations.release import gate_release
from schemas.validate import validate_release
from tests.postgres import Server
from tests.unit.test_audit_store import make_record

SERVICES = Services(validate=validate_release, gate=gate_release)


def _append(url: str, writer: str, n: int) -> int:
    with AuditStore(url) as store:
        for k in range(n):
            store.append(make_record(run_id=f"{writer}-{k}"))
    return n


def test_the_chain_holds_and_the_database_refuses_changes(pg_url: str) -> None:
    with AuditStore(pg_url) as store:
        for k in range(3):
            store.append(make_record(run_id=f"run-{k}"))
        report = verify(store, check_files=False)
        assert report.ok and report.records == 3 and store.missing_guards() == []
    for sql in ("UPDATE audit_records SET run_id = 'x'", "DELETE FROM audit_records", "TRUNCATE audit_records"):
        with psycopg.connect(pg_url) as connection, pytest.raises(psycopg.errors.RaiseException, match="append-only"):
            connection.execute(sql)


def test_two_writers_appending_at_once_keep_one_valid_chain(pg_url: str) -> None:
    AuditStore(pg_url).close()  # the table exists before the race
    with ProcessPoolExecutor(
        2, mp_context=multiprocessing.get_context("spawn")
    ) as pool:  # no fork of a threaded process
        done = list(pool.map(_append, [pg_url, pg_url], ["a", "b"], [25, 25]))
    assert done == [25, 25]
    with AuditStore(pg_url) as store:
        report = verify(store, check_files=False)
        stored = list(store.records())
    assert report.ok and report.records == 50
    assert [s.prev_hash for s in stored[1:]] == [s.hash for s in stored[:-1]]  # one chain, no fork


def _release(config: Path, release_id: str, url: str) -> RunSpec:
    overrides = {"output.audit_url": url}
    plan = plan_release(str(config), overrides, release_id=release_id)
    spec, prepared = prepare(RunSpec(str(config), overrides, release_id=release_id, plan=plan), SERVICES)
    walk(spec, PlainRunner(SERVICES), {"prepare": prepared})
    return spec


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PREFECT_HOME": str(cwd / ".prefect"), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "cli.main", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, check=False)  # fmt: skip


@pytest.mark.slow
def test_a_release_records_on_postgres_and_audit_verify_and_reproduce_read_it(tiny_release: Path, pg_url: str) -> None:
    _release(tiny_release, "pg1", pg_url)
    assert (tiny_release.parent / "out" / "published" / "pg1" / "manifest.json").is_file()
    assert not (tiny_release.parent / "out" / "internal" / "audit.sqlite").exists()  # the database holds it
    verified = _cli("audit", "verify", "--url", pg_url, cwd=tiny_release.parent)
    assert verified.returncode == 0 and "audit store intact: 1 record(s)" in " ".join(verified.stdout.split())
    again = _cli("audit", "reproduce", "--url", pg_url, "1", cwd=tiny_release.parent)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Reproduced bit for bit." in " ".join(again.stdout.split())


def test_a_database_that_is_down_stops_the_release_before_any_work(tiny_release: Path, postgres: Server) -> None:
    down = postgres.url("audit").replace(f":{postgres.port}/", ":1/")
    with pytest.raises(CubeguardError) as refused:
        plan_release(str(tiny_release), {"output.audit_url": down})
    message = str(refused.value)
    assert message.startswith("audit store postgresql://postgres@127.0.0.1:1/audit cannot be opened: ")
    assert message.endswith("; check output.audit_url (or audit --url)") and "\n" not in message
    assert not (tiny_release.parent / "out").exists()  # nothing written


def _dropped_at_the_publish_append(postgres: Server, database: str, refuse: bool) -> object:
    """AuditStore.append that first drops every connection of ``database`` (and, with ``refuse``, takes no new one)."""
    append = store_module.AuditStore.append

    def dropped_then_append(self: AuditStore, record: object) -> object:
        if record.outcome == "published":  # type: ignore[attr-defined]
            with postgres.admin() as admin:  # the database drops every connection of the store
                if refuse:
                    admin.execute(f"ALTER DATABASE {database} ALLOW_CONNECTIONS false")
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                    (database,),
                )
        return append(self, record)  # type: ignore[arg-type]

    return dropped_then_append


def test_a_database_gone_at_the_audit_append_publishes_nothing(
    tiny_release: Path, postgres: Server, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    database = pg_url.rsplit("/", 1)[1]
    monkeypatch.setattr(store_module.AuditStore, "append", _dropped_at_the_publish_append(postgres, database, True))
    try:
        with pytest.raises(CubeguardError) as failed:
            _release(tiny_release, "pg2", pg_url)
    finally:
        with postgres.admin() as admin:
            admin.execute(f"ALTER DATABASE {database} ALLOW_CONNECTIONS true")
    assert str(failed.value).startswith("audit store postgresql://postgres@127.0.0.1:")
    published = tiny_release.parent / "out" / "published"
    assert not (published / "pg2").exists() and not [p for p in published.glob("*") if not p.name.startswith(".")]


def test_a_connection_dropped_while_idle_is_replaced_and_the_release_recorded(
    tiny_release: Path, postgres: Server, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database dropped the store's pooled connections but still answers: a new one is used (pre-ping)."""
    database = pg_url.rsplit("/", 1)[1]
    monkeypatch.setattr(store_module.AuditStore, "append", _dropped_at_the_publish_append(postgres, database, False))
    _release(tiny_release, "pg3", pg_url)
    assert (tiny_release.parent / "out" / "published" / "pg3" / "manifest.json").is_file()
    with AuditStore(pg_url) as store:
        assert [(s.record.release_id, s.record.outcome) for s in store.records()] == [("pg3", "published")]


def test_the_query_log_is_append_only_on_postgres(pg_url: str) -> None:
    log = QueryLog(pg_url)
    try:
        log.append("127.0.0.1", "r1", {"breakdowns": ["SEX"]}, "answered", None, 3)
        assert [row.client for row in log.rows()] == ["127.0.0.1"]
    finally:
        log.close()
    QueryLog(pg_url).close()  # a second opener replaces the triggers without harm
    with psycopg.connect(pg_url) as connection, pytest.raises(psycopg.errors.RaiseException, match="append-only"):
        connection.execute("DELETE FROM table_queries")


def _release_in(folder: str, url: str, release_id: str) -> str:
    """One tiny release in its own folder, recording in the shared database (a process of its own)."""
    from cubeguard.testing.tiny import TINY_CONFIG, tiny_microdata

    root = Path(folder)
    (root / "data").mkdir(parents=True)
    tiny_microdata().to_parquet(root / "data" / "persons.parquet", row_group_size=2000)
    (root / "tiny.yaml").write_text(TINY_CONFIG)
    _release(root / "tiny.yaml", release_id, url)
    return release_id


@pytest.mark.slow
def test_two_releases_running_at_once_record_in_one_chain(tmp_path: Path, pg_url: str) -> None:
    AuditStore(pg_url).close()
    folders = [str(tmp_path / "a"), str(tmp_path / "b")]
    with ProcessPoolExecutor(
        2, mp_context=multiprocessing.get_context("spawn")
    ) as pool:  # no fork of a threaded process
        done = list(pool.map(_release_in, folders, [pg_url, pg_url], ["ra", "rb"]))
    assert done == ["ra", "rb"]
    with AuditStore(pg_url) as store:
        records = [s.record for s in store.records()]
        assert verify(store, check_files=True).ok  # both releases' published files match their records
    assert sorted((r.release_id, r.outcome) for r in records) == [("ra", "published"), ("rb", "published")]

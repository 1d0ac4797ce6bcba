"""verify: an intact chain passes; tampering, removed records and changed published files are named."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from cubeguard.audit import AuditStore, VerifyReport, chain_hash, tree_checksums, verify
from tests.unit.test_audit_store import make_record, raw


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with AuditStore.for_path(tmp_path / "audit.db") as opened:
        yield opened


@pytest.fixture
def published(tmp_path: Path) -> Path:
    """A published release folder: a CSV and a small Zarr-like tree."""
    folder = tmp_path / "releases" / "r1"
    (folder / "protected.zarr" / "c1").mkdir(parents=True)
    (folder / "c1.csv").write_text("GEO,SEX,count\n0,0,100\n")
    (folder / "protected.zarr" / "zarr.json").write_text('{"zarr_format": 3}')
    (folder / "protected.zarr" / "c1" / "0.0").write_bytes(bytes(range(256)))
    return folder


def tamper(store: AuditStore, sql: str, *params: Any) -> None:
    """Drop the append-only triggers and run ``sql``, as someone with raw write access could."""
    connection = raw(store)
    connection.execute("DROP TRIGGER IF EXISTS audit_records_no_update")
    connection.execute("DROP TRIGGER IF EXISTS audit_records_no_delete")
    connection.execute(sql, params)
    connection.close()


def fill(store: AuditStore, n: int = 3) -> None:
    for i in range(n):
        store.append(make_record(f"run-{i}"))


def publish(store: AuditStore, folder: Path) -> None:
    store.append(
        make_record(
            "run-pub", outcome="published", release_id="r1", published_path=str(folder), outputs=tree_checksums(folder)
        )
    )


def test_an_intact_store_verifies(store: AuditStore, published: Path) -> None:
    fill(store, 2)
    publish(store, published)
    report = verify(store)
    assert report == VerifyReport(records=3, files_checked=3, problems=())
    assert report.ok
    assert report.summary() == "audit store intact: 3 record(s), 3 published file(s) checked"


def test_an_empty_store_verifies(store: AuditStore) -> None:
    assert verify(store) == VerifyReport(records=0, files_checked=0, problems=())


def test_an_altered_record_is_named(store: AuditStore) -> None:
    fill(store)
    text = store.get(2).text.replace('"user":"analyst"', '"user":"someone"')
    tamper(store, "UPDATE audit_records SET record = ? WHERE seq = 2", text)
    report = verify(store)
    assert not report.ok
    assert report.problems == (
        "the append-only trigger audit_records_no_delete has been dropped from the database",
        "the append-only trigger audit_records_no_update has been dropped from the database",
        "record seq 2 has been altered: its content no longer matches its hash",
    )
    assert store.get(2).record.user == "someone"  # still a valid record: only the hash tells


def test_an_altered_record_with_a_recomputed_hash_breaks_the_next_link(store: AuditStore) -> None:
    fill(store)
    second = store.get(2)
    text = second.text.replace('"outcome":"blocked"', '"outcome":"failed"')
    forged = chain_hash(second.prev_hash, text.encode())
    tamper(store, "UPDATE audit_records SET record = ?, hash = ? WHERE seq = 2", text, forged)
    problems = verify(store).problems
    assert problems[2:] == ("the chain is broken at seq 3: its prev_hash does not match the hash of record seq 2",)


def test_a_deleted_middle_record_is_detected(store: AuditStore) -> None:
    fill(store, 4)
    tamper(store, "DELETE FROM audit_records WHERE seq = 2")
    assert verify(store).problems[2:] == (
        "record seq 2 is missing before seq 3",
        "the chain is broken at seq 3: its prev_hash does not match the hash of record seq 1",
    )


def test_deleted_first_and_last_records_are_detected(store: AuditStore) -> None:
    fill(store, 5)
    tamper(store, "DELETE FROM audit_records WHERE seq IN (1, 4, 5)")
    assert verify(store).problems[2:] == (
        "record seq 1 is missing before seq 2",
        "record seq 2 is first but its prev_hash is not the genesis hash (64 zeros)",
        "records seq 4 to 5 are missing from the end of the store",
    )


def test_a_store_emptied_entirely_is_detected(store: AuditStore) -> None:
    fill(store, 2)
    tamper(store, "DELETE FROM audit_records")
    report = verify(store)
    assert report.records == 0
    assert report.problems[2:] == ("records seq 1 to 2 are missing from the end of the store",)


def test_a_changed_lookup_column_is_named(store: AuditStore) -> None:
    fill(store, 2)
    tamper(store, "UPDATE audit_records SET run_id = 'run-9', attempt = 3, created_at = '2020-01-01' WHERE seq = 1")
    assert verify(store).problems[2:] == (
        "record seq 1: its created_at column does not match the time in the record",
        "record seq 1: its run_id column does not match the run id in the record",
        "record seq 1: its attempt column does not match the attempt in the record",
    )


def test_a_record_that_no_longer_parses_is_named(store: AuditStore) -> None:
    fill(store, 2)
    tamper(store, "UPDATE audit_records SET record = CAST(? AS TEXT) WHERE seq = 1", b'{"run_id": "\xff\xfe"}')
    assert verify(store).problems[2:] == (
        "record seq 1 has been altered: its content no longer matches its hash",
        "record seq 1 is not a valid audit record any more",
    )


def test_published_files_changed_removed_or_added_are_named(store: AuditStore, published: Path) -> None:
    publish(store, published)
    (published / "c1.csv").write_text("GEO,SEX,count\n0,0,101\n")
    (published / "protected.zarr" / "c1" / "0.0").unlink()
    (published / "protected.zarr" / "c1" / "0.1").write_bytes(b"new")
    report = verify(store)
    assert report.files_checked == 3
    assert report.problems == (
        f"record seq 1: published file {published / 'c1.csv'} has changed since it was published",
        f"record seq 1: published file {published / 'protected.zarr/c1/0.0'} is missing",
        f"record seq 1: {published / 'protected.zarr/c1/0.1'} was added to the published folder after publication",
    )
    assert verify(store, check_files=False).ok


def test_a_removed_published_folder_is_named(store: AuditStore, published: Path) -> None:
    publish(store, published)
    for path in sorted(published.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    published.rmdir()
    assert verify(store).problems == (f"record seq 1: its published folder {published} is missing",)


def test_only_published_records_have_their_files_checked(store: AuditStore, published: Path) -> None:
    store.append(make_record(outcome="blocked", published_path=str(published), outputs={"gone.csv": "0" * 64}))
    assert verify(store) == VerifyReport(records=1, files_checked=0, problems=())


def test_summary_counts_and_caps_the_problems() -> None:
    report = VerifyReport(records=4, files_checked=0, problems=tuple(f"problem {i}" for i in range(12)))
    lines = report.summary(max_shown=3).splitlines()
    assert lines == [
        "audit store has 12 problem(s) (4 record(s), 0 published file(s) checked):",
        "  - problem 0",
        "  - problem 1",
        "  - problem 2",
        "  ... and 9 more",
    ]


def test_once_the_triggers_are_dropped_deletes_succeed_and_verify_catches_them(store: AuditStore) -> None:
    fill(store, 1)
    tamper(store, "SELECT 1")
    assert store.missing_guards() == ["audit_records_no_delete", "audit_records_no_update"]
    with sqlite3.connect(store.url.removeprefix("sqlite:///")) as connection:
        connection.execute("DELETE FROM audit_records")  # nothing stops it now: verify must
    connection.close()
    assert "record seq 1 is missing from the end of the store" in verify(store).problems

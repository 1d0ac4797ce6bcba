"""The audit store: append, look-up, append-only triggers, clear errors, concurrent writers."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import multiprocessing
import re
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from cubeguard.audit import (
    GENESIS,
    AuditRecord,
    AuditStore,
    AuditStoreError,
    canonical_json,
    chain_hash,
    code_version,
    library_versions,
    schema,
    sha256_file,
    tree_checksums,
    verify,
)
from cubeguard.audit import record as record_module

SECRET_D = 918273645


def make_record(run_id: str = "run-a", attempt: int = 1, **fields: Any) -> AuditRecord:
    """A small valid record; ``fields`` override any field."""
    base: dict[str, Any] = {
        "run_id": run_id,
        "attempt": attempt,
        "started_at": "2026-01-05T10:00:00+00:00",
        "finished_at": "2026-01-05T10:05:00.250000+00:00",
        "user": "analyst",
        "host": "census-01",
        "config_path": "/configs/release.yaml",
        "config_hash": hashlib.sha256(b"config").hexdigest(),
        "config_text": f"steps: [{{method: cell_key, D: {SECRET_D}, V: 3}}]",
        "secrets": {"steps[0].D": SECRET_D, "steps[0].V": 3.0},
        "code": {"package": "0.1.0", "python": "3.11.7", "commit": None, "dirty": None},
        "libraries": {"numpy": "2.4.6"},
        "seeds": {"input.record_key.generate_seed": 11},
        "gates": [{"check": "max_hellinger", "value": 0.01, "passed": True}],
        "outcome": "blocked",
    }
    return AuditRecord(**(base | fields))


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with AuditStore.for_path(tmp_path / "audit" / "audit.db") as opened:
        yield opened


def raw(store: AuditStore) -> sqlite3.Connection:
    """A plain sqlite3 connection to the store's file, as someone bypassing cubeguard would use."""
    return sqlite3.connect(store.url.removeprefix("sqlite:///"), isolation_level=None)


def test_for_path_creates_the_folder_and_an_absolute_sqlite_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with AuditStore.for_path("deep/er/audit.db") as store:
        assert store.url == f"sqlite:///{tmp_path / 'deep' / 'er' / 'audit.db'}"
        assert store.latest() is None
        assert list(store.records()) == []
    assert (tmp_path / "deep" / "er" / "audit.db").is_file()


def test_appended_records_form_a_chain_and_read_back_equal(store: AuditStore) -> None:
    originals = [make_record("run-a"), make_record("run-b", outcome="failed", error="boom"), make_record("run-c")]
    appended = [store.append(r) for r in originals]

    assert [s.seq for s in appended] == [1, 2, 3]
    assert appended[0].prev_hash == GENESIS
    assert [s.prev_hash for s in appended[1:]] == [s.hash for s in appended[:-1]]
    for stored, original in zip(appended, originals, strict=True):
        assert stored.hash == chain_hash(stored.prev_hash, canonical_json(original))
        assert stored.hash == hashlib.sha256(stored.prev_hash.encode() + canonical_json(original)).hexdigest()
    read = list(store.records())
    assert read == appended
    assert [s.record for s in read] == originals
    assert store.latest() == appended[-1]


def test_get_by_seq_run_id_prefix_and_hash_prefix(store: AuditStore) -> None:
    first = store.append(make_record("2026-01-05-alpha"))
    second = store.append(make_record("2026-01-05-beta"))
    assert store.get(2) == second
    assert store.get("1") == first
    assert store.get("2026-01-05-b") == second
    assert store.get(first.hash[:10]) == first
    assert store.get(first.hash[:10].upper()) == first


def test_records_read_across_batches(store: AuditStore, monkeypatch: pytest.MonkeyPatch) -> None:
    from cubeguard.audit import store as store_module

    monkeypatch.setattr(store_module, "BATCH", 3)
    for i in range(7):
        store.append(make_record(f"run-{i}"))
    assert [s.seq for s in store.records()] == list(range(1, 8))
    assert [s.record.run_id for s in store.records()] == [f"run-{i}" for i in range(7)]


def test_attempts_of_one_run_are_separate_records(store: AuditStore) -> None:
    store.append(make_record("run-x", 1, outcome="failed", error="worker lost"))
    store.append(make_record("run-x", 2, outcome="blocked"))
    assert [(s.run_id, s.attempt) for s in store.records()] == [("run-x", 1), ("run-x", 2)]
    assert store.get(2).record.outcome == "blocked"
    with pytest.raises(AuditStoreError, match=r"'run-x' matches several audit records \(seq 1 run run-x attempt 1 .*"
                       r"seq 2 run run-x attempt 2 .*\); give its seq number or a longer run id or hash prefix"):  # fmt: skip
        store.get("run-x")


def test_lookup_errors_say_what_to_give(store: AuditStore) -> None:
    for i in range(8):
        store.append(make_record(f"run-{i}"))
    with pytest.raises(AuditStoreError, match=r"^no audit record has seq 99; `cubeguard audit list` shows them$"):
        store.get(99)
    with pytest.raises(AuditStoreError, match=r"^no audit record has seq, run id or hash 'zzz'"):
        store.get("zzz")
    with pytest.raises(AuditStoreError, match=r"^give a seq number, or the start of a run id or record hash$"):
        store.get("")
    with pytest.raises(AuditStoreError, match=r"^'run-' matches several audit records .*; \.\.\.\); give its seq"):
        store.get("run-")


def test_run_id_prefix_is_literal_and_case_sensitive(store: AuditStore) -> None:
    store.append(make_record("Run_1"))
    store.append(make_record("RunX1"))
    assert store.get("Run_").run_id == "Run_1"  # '_' is not a LIKE wildcard here
    with pytest.raises(AuditStoreError, match="no audit record"):
        store.get("run_")


def test_update_and_delete_are_refused_by_the_database(store: AuditStore) -> None:
    stored = store.append(make_record())
    connection = raw(store)
    with pytest.raises(sqlite3.IntegrityError, match=r"^audit records are append-only$"):
        connection.execute("UPDATE audit_records SET record = '{}' WHERE seq = 1")
    with pytest.raises(sqlite3.IntegrityError, match=r"^audit records are append-only$"):
        connection.execute("DELETE FROM audit_records")
    connection.close()
    assert list(store.records()) == [stored]
    assert store.missing_guards() == []


def test_the_store_offers_no_way_to_change_or_remove_records() -> None:
    public = {name for name in dir(AuditStore) if not name.startswith("_")}
    assert public == {"append", "close", "for_path", "get", "issued_seq", "latest", "missing_guards", "records"}


def test_reopening_an_existing_store_keeps_its_records(tmp_path: Path) -> None:
    with AuditStore.for_path(tmp_path / "a.db") as store:
        stored = store.append(make_record())
    with AuditStore.for_path(tmp_path / "a.db", create=False) as store:
        assert list(store.records()) == [stored]


def test_a_missing_store_is_not_created_when_create_is_false(tmp_path: Path) -> None:
    with pytest.raises(
        AuditStoreError, match=r"^there is no audit store at .*nope\.db; check output\.audit_url \(or audit --url\)$"
    ):
        AuditStore.for_path(tmp_path / "nope.db", create=False)
    assert not (tmp_path / "nope.db").exists()
    (tmp_path / "empty.db").touch()
    with pytest.raises(
        AuditStoreError, match=r"empty\.db holds no audit store yet; check output\.audit_url \(or audit --url\)$"
    ):
        AuditStore.for_path(tmp_path / "empty.db", create=False)


def test_a_database_of_another_application_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "prefect.db"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE flow_run (id TEXT)")
    connection.close()
    with pytest.raises(AuditStoreError, match=r"prefect\.db is not an audit store \(it holds tables flow_run\); give"):
        AuditStore.for_path(other)
    with sqlite3.connect(tmp_path / "lookalike.db") as connection:
        connection.execute("CREATE TABLE audit_records (seq INTEGER, note TEXT)")
    connection.close()
    with pytest.raises(AuditStoreError, match=r"has an audit_records table that is not cubeguard's; give another"):
        AuditStore.for_path(tmp_path / "lookalike.db")


def test_urls_that_cannot_be_opened_say_what_to_check(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("this is not a database\n" * 100)
    cases = {
        f"sqlite:///{tmp_path / 'notes.txt'}": "file is not a database",
        f"sqlite:///{tmp_path / 'no' / 'such' / 'dir.db'}": "unable to open database file",
        "not a url at all": "Could not parse SQLAlchemy URL",
        "nosuchdb://host/x": "Can't load plugin",
        "postgresql://auditor:hunter2@localhost:1/audit": "port 1 failed: Connection refused",  # nothing listens
        "mysql://auditor:hunter2@localhost:1/audit": "its database driver is not installed",
        "postgresql://auditor:hunter2@localhost:port/audit": "invalid literal for int()",
    }
    for url, why in cases.items():
        with pytest.raises(AuditStoreError) as caught:
            AuditStore(url)
        message = str(caught.value)
        assert message.startswith(f"audit store {schema.shown_url(url)} cannot be opened: ")
        assert why in message
        assert message.endswith("; check output.audit_url (or audit --url)")
        assert "hunter2" not in message


def test_passwords_are_masked_in_the_url_shown() -> None:
    assert schema.shown_url("postgresql://auditor:hunter2@db:5432/audit") == "postgresql://auditor:***@db:5432/audit"
    assert schema.shown_url("postgresql//auditor:hunter2@db/x") == "postgresql//***@db/x"
    assert schema.shown_url("postgresql://auditor:hunter2@db:port/x") == "postgresql://***@db:port/x"
    assert schema.shown_url("not a url") == "not a url"


def test_a_failed_append_never_shows_the_record(store: AuditStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schema, "BUSY_TIMEOUT", 0.05)
    with AuditStore(store.url) as impatient:
        blocker = raw(store)
        blocker.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(AuditStoreError, match=r"cannot append the record: database is locked; check") as caught:
                impatient.append(make_record())
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
    assert str(SECRET_D) not in str(caught.value)
    assert "steps[0]" not in str(caught.value)
    assert impatient.url == store.url


def _append_many(path: str, worker: str, count: int, barrier: Any) -> None:
    """Child process: open (maybe create) the store, wait for the other, append ``count`` records."""
    barrier.wait()
    with AuditStore.for_path(path) as store:
        for i in range(count):
            store.append(make_record(f"{worker}-{i:02d}"))


def test_two_processes_appending_at_once_give_one_intact_chain(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    workers = [context.Process(target=_append_many, args=(path, name, 50, barrier)) for name in ("p", "q")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=300)
    assert [worker.exitcode for worker in workers] == [0, 0]

    with AuditStore.for_path(path, create=False) as store:
        stored = list(store.records())
        report = verify(store)
    assert report.ok, report.problems
    assert report.records == 100
    assert [s.seq for s in stored] == list(range(1, 101))
    run_ids = [s.run_id for s in stored]
    for name in ("p", "q"):
        assert [r for r in run_ids if r.startswith(name)] == [f"{name}-{i:02d}" for i in range(50)]


def test_code_version_gives_the_checkout_commit() -> None:
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    version = code_version()
    assert re.fullmatch(r"[0-9a-f]{40}", version["commit"])
    assert version["commit"] == head
    assert isinstance(version["dirty"], bool)
    assert version["package"] == importlib.metadata.version("cubeguard")


def test_no_commit_outside_a_git_work_tree(tmp_path: Path) -> None:
    assert record_module._git_state(tmp_path) == (None, None)


def test_library_versions_skip_missing_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(record_module, "LIBRARIES", (*record_module.LIBRARIES, "no-such-distribution-xyz"))
    versions = library_versions()
    assert versions["numpy"] == np.__version__
    assert versions["great-expectations"] == importlib.metadata.version("great-expectations")
    assert "no-such-distribution-xyz" not in versions


def test_canonical_json_is_sorted_compact_utf8_and_stable() -> None:
    data = {"b": [1, 2.5, (3, -0.0)], "a": "Zürich", "c": {"z": None, "y": True}, "n": np.int64(7)}
    text = canonical_json(data)
    assert text == '{"a":"Zürich","b":[1,2.5,[3,-0.0]],"c":{"y":true,"z":null},"n":7}'.encode()
    assert canonical_json(json.loads(text)) == text
    assert canonical_json({"x": 0.1 + 0.2}) == b'{"x":0.30000000000000004}'
    assert canonical_json([float("nan"), float("inf"), -float("inf")]) == b'["NaN","Infinity","-Infinity"]'


def test_canonical_json_refuses_what_json_cannot_hold() -> None:
    with pytest.raises(TypeError, match="an audit record cannot hold a set; give JSON data"):
        canonical_json({"a": {1, 2}})
    with pytest.raises(TypeError, match="audit record keys must be strings"):
        canonical_json({1: "a"})


def test_a_record_serialises_non_finite_gate_values_as_strings() -> None:
    record = make_record(gates=[{"check": "max_hellinger", "value": float("nan")}])
    assert b'"value":"NaN"' in canonical_json(record)


def test_sha256_file_streams_files_larger_than_a_block(tmp_path: Path) -> None:
    content = np.random.default_rng(1).bytes(2 * (1 << 20) + 12345)
    (tmp_path / "big.bin").write_bytes(content)
    assert sha256_file(tmp_path / "big.bin") == hashlib.sha256(content).hexdigest()


def test_tree_checksums_cover_every_file_by_posix_path(tmp_path: Path) -> None:
    (tmp_path / "c1.zarr" / "count" / "c").mkdir(parents=True)
    (tmp_path / "c1.zarr" / "count" / "c" / "0").write_bytes(b"\x00\x01")
    (tmp_path / "c1.zarr" / "zarr.json").write_text("{}")
    (tmp_path / "a.csv").write_text("x\n")
    (tmp_path / "empty").mkdir()
    sums = tree_checksums(tmp_path)
    assert list(sums) == ["a.csv", "c1.zarr/count/c/0", "c1.zarr/zarr.json"]
    assert sums["c1.zarr/count/c/0"] == hashlib.sha256(b"\x00\x01").hexdigest()
    with pytest.raises(AuditStoreError, match=r"a\.csv is not a folder; give the folder whose files to checksum"):
        tree_checksums(tmp_path / "a.csv")


def test_record_fields_are_validated() -> None:
    with pytest.raises(ValidationError, match="is not in UTC"):
        make_record(started_at="2026-01-05T10:00:00+01:00")
    with pytest.raises(ValidationError, match="is not in UTC"):
        make_record(finished_at="2026-01-05T10:00:00")
    with pytest.raises(ValidationError, match="is not an ISO-8601 time"):
        make_record(started_at="yesterday")
    for bad in ("../etc/passwd", "/etc/passwd", ".", "a/./b", "a//b", "a/", "a\\b", ""):
        with pytest.raises(ValidationError, match="must be a normalised relative posix path inside the published"):
            make_record(outputs={bad: "0" * 64})
    assert list(make_record(outputs={"protected.zarr/c1/zarr.json": "0" * 64}).outputs) == [
        "protected.zarr/c1/zarr.json"
    ]
    with pytest.raises(ValidationError, match="String should match pattern"):
        make_record(outputs={"a.csv": "not-a-checksum"})
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        make_record(password="x")
    with pytest.raises(ValidationError, match="frozen"):
        make_record().outcome = "published"  # type: ignore[misc]


def test_secrets_stay_out_of_repr_and_redacted_views() -> None:
    record = make_record()
    assert str(SECRET_D) not in repr(record)
    shown = json.dumps(record.redacted())
    assert str(SECRET_D) not in shown
    assert record.redacted()["secrets"] == {"steps[0].D": "<withheld>", "steps[0].V": "<withheld>"}
    assert str(SECRET_D) in canonical_json(record).decode()  # the store itself keeps them

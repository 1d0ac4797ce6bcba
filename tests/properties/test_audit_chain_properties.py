"""Properties of the audit hash chain (Hypothesis): any appended records verify; any changed byte is named."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.audit import AuditRecord, AuditStore, canonical_json, verify
from tests.unit.test_audit_store import make_record

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
sha256 = st.text("0123456789abcdef", min_size=64, max_size=64)
path_parts = st.text("abcz019_.-", min_size=1, max_size=6).filter(lambda part: part.strip("."))
output_paths = st.lists(path_parts, min_size=1, max_size=3).map("/".join)


@st.composite
def records(draw: st.DrawFn) -> AuditRecord:
    """A record with arbitrary text, secrets, seeds, gate results and outputs."""
    outcome = draw(st.sampled_from(["published", "blocked", "failed", "running"]))
    return make_record(
        run_id=draw(st.text(min_size=1, max_size=12)),
        attempt=draw(st.integers(1, 5)),
        user=draw(st.text(max_size=8)),
        config_text=draw(st.text(max_size=40)),
        secrets=draw(st.dictionaries(st.text(max_size=10), json_values, max_size=3)),
        seeds=draw(st.dictionaries(st.text(max_size=10), st.integers(), max_size=3)),
        gates=draw(st.lists(st.dictionaries(st.text(max_size=8), json_values, max_size=3), max_size=3)),
        outputs=draw(st.dictionaries(output_paths, sha256, max_size=3)),
        outcome=outcome,
        error=draw(st.none() | st.text(max_size=20)),
    )


def appended(folder: str, batch: list[AuditRecord]) -> AuditStore:
    store = AuditStore.for_path(Path(folder) / "audit.db")
    for record in batch:
        store.append(record)
    return store


@settings(max_examples=30, deadline=None)
@given(st.lists(records(), min_size=1, max_size=5))
def test_any_appended_records_verify_and_read_back(batch: list[AuditRecord]) -> None:
    with tempfile.TemporaryDirectory() as folder, appended(folder, batch) as store:
        report = verify(store)
        stored = list(store.records())
    assert report.ok, report.problems
    assert report.records == len(batch)
    assert [s.record for s in stored] == batch
    assert [s.payload for s in stored] == [canonical_json(r) for r in batch]


@settings(max_examples=40, deadline=None)
@given(st.lists(records(), min_size=1, max_size=4), st.data())
def test_any_changed_byte_of_any_record_is_named(batch: list[AuditRecord], data: Any) -> None:
    with tempfile.TemporaryDirectory() as folder, appended(folder, batch) as store:
        seq = data.draw(st.integers(1, len(batch)), label="seq")
        payload = bytearray(store.get(seq).payload)
        at = data.draw(st.integers(0, len(payload) - 1), label="byte")
        payload[at] = data.draw(st.integers(0, 255).filter(lambda b: b != payload[at]), label="new value")
        connection = sqlite3.connect(Path(folder) / "audit.db", isolation_level=None)
        connection.execute("DROP TRIGGER audit_records_no_update")
        connection.execute("UPDATE audit_records SET record = CAST(? AS TEXT) WHERE seq = ?", (bytes(payload), seq))
        connection.close()
        report = verify(store)
        assert store.get(seq).payload == bytes(payload)
    assert f"record seq {seq} has been altered: its content no longer matches its hash" in report.problems
    assert not any(f"seq {other} " in p for p in report.problems for other in range(1, len(batch) + 1) if other != seq)

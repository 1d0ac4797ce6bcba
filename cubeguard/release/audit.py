"""A release attempt's audit record, and the reconciliation of publications a crash cut short.

The publish step commits the "published" record *before* the release folder is renamed into place,
so a visible release always has a committed record. A run that stops between that commit and the
rename leaves a record of a release that never became visible: :func:`reconcile` (run when the next
release of the same output folder starts, under its lock) appends a "failed" record for each such
case, so the store tells what happened; ``cubeguard audit verify`` accepts the pair.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

from cubeguard.audit.record import Outcome, utc_now
from cubeguard.audit.store import StoredRecord
from cubeguard.config.load import Release
from cubeguard.pipeline.auditing import audit_store_of, record_attempt
from cubeguard.release.results import Gated, Published, StepResult
from cubeguard.release.spec import RunSpec
from cubeguard.secrets import SecretResolver

Results = MutableMapping[str, StepResult]
NEVER_VISIBLE = "reconciled: the run stopped after its audit record and before the release became visible"


def audit_attempt(
    spec: RunSpec,
    results: Results,
    *,
    outcome: Outcome,
    error: str | None,
    resolver: SecretResolver | None = None,
) -> StoredRecord:
    """Append this attempt's record (gates and publication taken from ``results``) to the audit store."""
    gated = results.get("gate")
    published = results.get("publish")
    return record_attempt(
        spec.release(),
        run_id=spec.run_id,
        attempt=spec.attempt,
        started_at=spec.started_at or utc_now(),
        outcome=outcome,
        overrides=spec.overrides,
        gates=list(gated.rows) if isinstance(gated, Gated) else None,
        published=_publication(published) if isinstance(published, Published) else None,
        error=error,
        reader=resolver,
    )


def _publication(published: Published) -> dict[str, Any]:
    return {"release_id": published.release_id, "path": published.path, "checksums": published.checksums}


def reconcile(release: Release) -> list[int]:
    """Append a "failed" record for every "published" record whose release never became visible.

    Returns the seq numbers of the records it appended (none when every publication completed).
    """
    with audit_store_of(release) as store:
        pending: dict[tuple[str, int], StoredRecord] = {}
        for stored in store.records():
            record = stored.record
            key = (record.run_id, record.attempt)
            if record.outcome == "published" and record.published_path and not Path(record.published_path).is_dir():
                pending[key] = stored
            elif record.outcome == "failed":
                pending.pop(key, None)
        appended = []
        for stored in pending.values():
            failed = stored.record.model_copy(
                update={"outcome": "failed", "error": NEVER_VISIBLE, "finished_at": utc_now(), "outputs": {}}
            )
            appended.append(store.append(failed).seq)
    return appended

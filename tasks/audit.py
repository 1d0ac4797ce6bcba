"""Record every release attempt (published, blocked or failed) in the internal audit store."""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.runtime import flow_run

from cubeguard.pipeline.auditing import record_attempt
from cubeguard.pipeline.run import RunSpec
from tasks.secrets import read_prefect_secret


@task(name="audit")
def audit_run(
    spec: RunSpec,
    started_at: str,
    outcome: str,
    gates: dict[str, Any] | None,
    published: dict[str, Any] | None,
    error: str | None,
) -> dict[str, Any]:
    """Append this attempt's record; returns its sequence number and hash (no secret in them)."""
    stored = record_attempt(
        spec.release(),
        run_id=str(flow_run.get_id() or "local"),
        attempt=int(flow_run.get_run_count() or 1),
        started_at=started_at,
        outcome=outcome,  # type: ignore[arg-type]
        overrides=spec.overrides,
        gates=(gates or {}).get("rows"),
        published=published,
        error=error,
        reader=read_prefect_secret,
    )
    return {"seq": stored.seq, "hash": stored.hash}

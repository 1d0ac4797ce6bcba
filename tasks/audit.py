"""Record every release attempt (published, blocked or failed) in the internal audit store."""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.runtime import flow_run

from cubeguard.release.run import Outcome, Results, audit_attempt
from cubeguard.release.spec import RunSpec
from tasks.secrets import read_prefect_secret


@task(name="audit")
def audit_run(spec: RunSpec, results: Results, started_at: str, outcome: Outcome, error: str | None) -> dict[str, Any]:
    """Append this attempt's record; returns its sequence number and hash (no secret in them)."""
    run = {"run_id": str(flow_run.get_id() or "local"), "attempt": int(flow_run.get_run_count() or 1)}
    return audit_attempt(
        spec, results, started_at=started_at, outcome=outcome, error=error, resolver=read_prefect_secret, **run
    )

"""Record a release attempt that did not publish (blocked or failed) in the internal audit store.

A published attempt is recorded by the publish step itself, before the release becomes visible.
"""

from __future__ import annotations

from typing import Any

from prefect import task

from cubeguard.audit.record import Outcome
from cubeguard.release.audit import Results, audit_attempt, reconcile
from cubeguard.release.spec import RunSpec
from tasks.secrets import read_prefect_secret


@task(name="audit")
def audit_run(spec: RunSpec, results: Results, outcome: Outcome, error: str | None) -> dict[str, Any]:
    """Append this attempt's record; returns its sequence number and hash (no secret in them)."""
    stored = audit_attempt(spec, results, outcome=outcome, error=error, resolver=read_prefect_secret)
    return {"seq": stored.seq, "hash": stored.hash}


@task(name="reconcile-audit")
def reconcile_audit(spec: RunSpec) -> list[int]:
    """Close the records of earlier publications a crash cut short (before the rename)."""
    return reconcile(spec.release())

"""Rerun a published release from its audit record in a temporary folder and compare bit for bit."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from cubeguard.audit.record import AuditRecord
from cubeguard.pipeline.reproduce import Comparison, check_inputs, compare_outputs, plan_reproduction
from flows.release import release_flow


def reproduce_release(record: AuditRecord, parent: Path | None = None) -> Comparison:
    """Run the recorded config, secrets and inputs again (every step recomputed) and compare outputs.

    The rerun writes into a temporary folder under ``parent`` (default: the system's temporary
    folder), readable by this user only; it holds unprotected counts and an audit record with the
    secrets, so it is removed, with everything in it, before this returns or raises.
    """
    check_inputs(record)
    with tempfile.TemporaryDirectory(prefix="cubeguard-reproduce-", dir=parent) as scratch:
        plan = plan_reproduction(record, Path(scratch))
        saved = {k: os.environ.get(k) for k in plan.env}
        os.environ.update(plan.env)
        try:
            result = release_flow(str(plan.config), plan.overrides, plan.release_id, True)
        finally:
            plan.config.unlink(missing_ok=True)
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        return compare_outputs(plan.expected, Path(result["published"]))

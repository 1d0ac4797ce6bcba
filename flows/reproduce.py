"""Rerun a published release from its audit record into a scratch folder and compare bit for bit."""

from __future__ import annotations

import os
from pathlib import Path

from cubeguard.audit.record import AuditRecord
from cubeguard.pipeline.reproduce import Comparison, check_inputs, compare_outputs, plan_reproduction
from flows.release import release_flow


def reproduce_release(record: AuditRecord, scratch: Path) -> tuple[Comparison, Path]:
    """Run the recorded config, secrets and inputs again (every step recomputed) and compare outputs."""
    check_inputs(record)
    plan = plan_reproduction(record, scratch)
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
    published = Path(result["published"])
    return compare_outputs(plan.expected, published), published

"""Publish a gated release atomically, and show its summary in the Prefect UI as an artifact."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pandas as pd
from prefect import task
from prefect.artifacts import create_markdown_artifact

from cubeguard.audit.record import sha256_file
from cubeguard.pipeline.run import RunSpec
from cubeguard.publish.manifest import MANIFEST_NAME
from cubeguard.publish.stage import make_release_id, publish_release
from cubeguard.report.summary_md import release_markdown
from tasks.progress import report


@task(name="publish")
def publish(spec: RunSpec, release_id: str | None) -> dict[str, Any]:
    """Move the protected store, flat exports and manifest into ``published/<release-id>``."""
    release = spec.release()
    rid = release_id or make_release_id(release.config.name, datetime.now(UTC))
    out = release.config.output
    done = publish_release(release, rid, out.protected_store, out.exports, progress=report)
    checksums = {**done.checksums, MANIFEST_NAME: sha256_file(done.path / MANIFEST_NAME)}
    return {"release_id": rid, "path": str(done.path), "checksums": checksums}


@task(name="summary-artifact")
def summary_artifact(result: dict[str, Any]) -> str:
    """A markdown table of gates and measures, attached to the flow run (no secret parameter in it)."""
    return str(
        create_markdown_artifact(
            key="release-summary",
            markdown=release_markdown(result, pd.read_parquet(result["measures"]["measures"])),
            description=f"Release {result['release_id']}: gates, cubes and measures",
        )
    )

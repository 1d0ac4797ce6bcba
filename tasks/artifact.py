"""Show a published release's summary in the Prefect UI as an artifact."""

from __future__ import annotations

from typing import Any

import pandas as pd
from prefect import task
from prefect.artifacts import create_markdown_artifact

from cubeguard.report.summary_md import release_markdown


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

"""Serve the release flow as a Prefect deployment: scheduled runs and reruns from the Prefect UI.

``cubeguard deploy CONFIG`` registers a deployment named after the release, with the config path
as its default parameter, an optional cron schedule, and waits for runs. A run started from the
UI may change ``overrides`` (e.g. ``{"steps[0].js": 3}``), ``release_id`` or ``fresh``; every run,
scheduled or manual, goes through the same gates, publishing and audit record.
"""

from __future__ import annotations

from pathlib import Path

from cubeguard.config import load_release
from flows.release import release_flow


def serve_release(config_path: Path, name: str | None = None, cron: str | None = None, limit: int = 1) -> None:
    """Register the deployment ``cubeguard-release/<name>`` and run its runs here until stopped."""
    release = load_release(config_path)  # a bad config stops here, before anything is registered
    release_flow.serve(
        name=name or release.config.name,
        cron=cron,
        parameters={"config_path": str(config_path.resolve())},
        description=f"Protected release of {release.config.name} ({len(release.config.hypercubes)} hypercubes).",
        tags=["cubeguard"],
        limit=limit,
        print_starting_message=True,
    )

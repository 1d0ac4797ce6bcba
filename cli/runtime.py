"""Process settings for running Prefect locally: a project-local home, SQLite, no telemetry."""

from __future__ import annotations

import os
from pathlib import Path


def prefect_env(home: Path | None = None) -> None:
    """Set Prefect defaults (only where the user has not set them) before Prefect is imported."""
    home = home or Path.cwd() / ".cubeguard" / "prefect"
    home.mkdir(parents=True, exist_ok=True)
    defaults = {
        "PREFECT_HOME": str(home),
        "DO_NOT_TRACK": "1",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
        "PREFECT_LOGGING_LEVEL": "CRITICAL",  # the CLI prints its own one-sentence errors
        "DASK_LOGGING__DISTRIBUTED": "error",
    }
    for k, v in defaults.items():
        os.environ.setdefault(k, v)

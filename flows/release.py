"""The release flow: prepare input -> validate -> tabulate (protection, gates, publishing follow)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow

from cubeguard.config import load_release
from tasks.release import prepare_input, tabulate, validate


@flow(name="cubeguard-release", log_prints=False)
def release_flow(config_path: str) -> dict[str, Any]:
    """Run one release of the config at ``config_path``; returns a small summary."""
    release = load_release(config_path)  # fail fast on a bad config, before any data is read
    store = release.config.output.store
    report_file = store.parent / f"{store.name}.validation.json"
    source = prepare_input(config_path)
    checked = validate(config_path, str(report_file))
    cubes = tabulate(config_path, str(store))
    return {"input": source, "validation": checked, "cubes": cubes, "store": str(Path(store))}

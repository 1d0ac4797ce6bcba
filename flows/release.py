"""The release flow: prepare input -> validate -> pre-tabular -> tabulate -> protect (gates and publishing follow)."""

from __future__ import annotations

from typing import Any

from prefect import flow

from cubeguard.config import load_release
from tasks.release import pre_tabular, prepare_input, protect, store_paths, tabulate, validate


@flow(name="cubeguard-release", log_prints=False)
def release_flow(config_path: str) -> dict[str, Any]:
    """Run one release of the config at ``config_path``; returns a small summary."""
    load_release(config_path)  # fail fast on a bad config, before any data is read
    source = prepare_input(config_path)
    checked = validate(config_path)
    swapped = pre_tabular(config_path)
    cubes = tabulate(config_path)
    protected = protect(config_path)
    return {
        "input": source,
        "validation": checked,
        "cubes": cubes,
        "pre_tabular": swapped,
        "protection": protected,
        "stores": store_paths(config_path),
    }

"""The release flow: prepare input -> validate -> pre-tabular -> tabulate -> protect -> measure -> gate (publishing follows)."""

from __future__ import annotations

from typing import Any

from prefect import flow

from cubeguard.config import load_release
from cubeguard.errors import ReleaseBlocked
from tasks.release import (
    gate,
    measure,
    pre_tabular,
    prepare_input,
    protect,
    report_html,
    store_paths,
    tabulate,
    validate,
)


@flow(name="cubeguard-release", log_prints=False)
def release_flow(config_path: str) -> dict[str, Any]:
    """Run one release of the config at ``config_path``; returns a small summary."""
    load_release(config_path)  # fail fast on a bad config, before any data is read
    source = prepare_input(config_path)
    checked = validate(config_path)
    swapped = pre_tabular(config_path)
    cubes = tabulate(config_path)
    protected = protect(config_path)
    measured = measure(config_path)
    gated = gate(config_path)
    report = report_html(config_path, gated["rows"])
    if not gated["passed"]:
        raise ReleaseBlocked(gated["failures"])
    return {
        "measures": measured,
        "gates": {k: v for k, v in gated.items() if k != "rows"},
        "report": report,
        "input": source,
        "validation": checked,
        "cubes": cubes,
        "pre_tabular": swapped,
        "protection": protected,
        "stores": store_paths(config_path),
    }

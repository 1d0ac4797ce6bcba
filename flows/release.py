"""The release flow: validate -> pre-tabular -> tabulate -> protect -> measure -> gate -> publish.

Every attempt, published, blocked or failed, leaves one record in the internal audit store. The
output folder is locked for the whole run, so two releases started at once into the same folder
cannot interleave their writes: the second stops at once with a clear message.
"""

from __future__ import annotations

import os
from typing import Any, TypeVar

from prefect import Flow, flow, unmapped
from prefect.task_runners import ThreadPoolTaskRunner

from cubeguard.audit.record import utc_now
from cubeguard.config import load_release
from cubeguard.errors import ReleaseBlocked
from cubeguard.pipeline.run import RunSpec
from cubeguard.publish.lock import release_lock
from cubeguard.secrets import resolve_references
from tasks.audit import audit_run
from tasks.progress import report
from tasks.publish import publish, summary_artifact
from tasks.release import (
    gate,
    measure,
    pre_tabular,
    prepare_input,
    protect_finish,
    protect_one,
    protect_start,
    report_html,
    store_paths,
    tabulate,
    tabulate_finish,
    tabulate_one,
    tabulate_start,
    validate,
)
from tasks.secrets import read_prefect_secret

T = TypeVar("T")


@flow(name="cubeguard-release", log_prints=False, task_runner=ThreadPoolTaskRunner(max_workers=os.cpu_count() or 2))
def release_flow(
    config_path: str,
    overrides: dict[str, Any] | None = None,
    release_id: str | None = None,
    fresh: bool = False,
    tabulate_parts: int = 1,
) -> dict[str, Any]:
    """Run one release of the config at ``config_path``; returns a small summary.

    Args:
        config_path: The release config (YAML).
        overrides: Config keys to change for this run, e.g. ``{"steps[0].js": 3}`` (from the UI).
        release_id: The published folder name (default ``<name>-<UTC time>``).
        fresh: Recompute every step even if an earlier attempt finished it.
        tabulate_parts: Tabulate in this many row-group partitions at once (for Dask workers).
    """
    overrides = dict(overrides or {})
    release = load_release(config_path, overrides or None, read_prefect_secret)  # fail fast on a bad config
    resolve_references(release.config, read_prefect_secret)  # every secret reference resolves, or exit 2 now
    started = utc_now()
    state: dict[str, Any] = {"spec": RunSpec(config_path, overrides, fresh=fresh), "gates": None, "published": None}
    with release_lock(release.config.output.folder):
        try:
            result = _steps(state, release_id, tabulate_parts)
        except ReleaseBlocked as exc:
            audit_run(state["spec"], started, "blocked", state["gates"], None, str(exc))
            raise
        except BaseException as exc:
            audit_run(state["spec"], started, "failed", state["gates"], None, f"{type(exc).__name__}: {exc}")
            raise
        result["audit"] = audit_run(state["spec"], started, "published", state["gates"], state["published"], None)
    summary_artifact(result)
    return result


def _tabulate(spec: RunSpec, parts: int) -> list[dict[str, object]]:
    """Tabulate row-group partitions in parallel tasks (Dask workers), then sum them exactly."""
    start = tabulate_start(spec, parts)
    if "resumed" in start:
        return start["resumed"]  # type: ignore[no-any-return]
    futures = tabulate_one.map(unmapped(spec), range(len(start["parts"])), start["parts"])
    return tabulate_finish(spec, [f.result() for f in futures])  # type: ignore[no-any-return]


def _protect(spec: RunSpec) -> list[dict[str, object]]:
    """Protect every cube, one task per cube (spread over Dask workers when the flow runs on Dask)."""
    start = protect_start(spec)
    if "resumed" in start:
        return start["resumed"]  # type: ignore[no-any-return]
    summaries = []
    for future in protect_one.map(unmapped(spec), start["cubes"]):
        summaries.append(future.result())
        report("protect", 1)
    return protect_finish(spec, summaries)  # type: ignore[no-any-return]


def with_dask(flow_fn: Flow[..., T], address: str | None, workers: int) -> Flow[..., T]:
    """``flow_fn`` with its tasks on the Dask scheduler at ``address``, or on a local cluster of ``workers``."""
    if not address and workers <= 0:
        return flow_fn
    from prefect_dask import DaskTaskRunner

    if address:
        return flow_fn.with_options(task_runner=DaskTaskRunner(address=address))
    cluster = {"n_workers": workers, "threads_per_worker": 1, "processes": True, "dashboard_address": None}
    return flow_fn.with_options(task_runner=DaskTaskRunner(cluster_kwargs=cluster))


def _steps(state: dict[str, Any], release_id: str | None, parts: int) -> dict[str, Any]:
    first: RunSpec = state["spec"]
    prepared = prepare_input(first.config_path, first.overrides, first.fresh)
    spec = state["spec"] = RunSpec(**prepared["spec"])
    checked = validate(spec)
    swapped = pre_tabular(spec)
    cubes = tabulate(spec) if parts <= 1 else _tabulate(spec, parts)
    protected = _protect(spec)
    measured = measure(spec)
    gated = state["gates"] = gate(spec)
    report = report_html(spec, gated["rows"])
    if not gated["passed"]:
        raise ReleaseBlocked(gated["failures"])
    published = state["published"] = publish(spec, release_id)
    return {
        "release_id": published["release_id"],
        "published": published["path"],
        "measures": measured,
        "gates": {k: v for k, v in gated.items() if k != "rows"},
        "gate_rows": gated["rows"],
        "report": report,
        "input": prepared["input"],
        "validation": checked,
        "cubes": cubes,
        "pre_tabular": swapped,
        "protection": protected,
        "stores": store_paths(spec),
    }

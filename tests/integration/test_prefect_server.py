"""A real local Prefect server: ``cubeguard deploy`` registers the deployment, a UI-style run changes a parameter."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cubeguard.audit.store import AuditStore
from tests.conftest import TINY_CONFIG, tiny_microdata
from tests.prefect_server import serve_and_run, start_server, stop

TRIGGER = """
import asyncio, json, sys, time
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
from prefect.deployments import run_deployment
run = run_deployment("cubeguard-release/tiny", parameters=json.loads(sys.argv[1]), timeout=900)

async def logs():
    async with get_client() as client:
        found = await client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run.id])))
        return [entry.message for entry in found]

time.sleep(3)  # the run's last log lines reach the API in the next batch
print(json.dumps({"state": run.state.type.value, "name": run.state.name, "logs": asyncio.run(logs())}))
"""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[dict[str, str]]:
    proc, env = start_server(tmp_path)
    try:
        yield env
    finally:
        stop(proc)


@pytest.mark.slow
def test_served_deployment_runs_with_a_parameter_changed_from_the_ui(server: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    tiny_microdata().to_parquet(tmp_path / "data" / "persons.parquet")
    (tmp_path / "tiny.yaml").write_text(TINY_CONFIG)
    params = {"overrides": {"steps[0].mono": False}, "release_id": "ui-rerun"}  # secrets only by reference
    answer = serve_and_run(tmp_path, server, TRIGGER, params)
    assert answer["state"] == "COMPLETED", answer
    logs = "\n".join(answer["logs"])  # what the run's Logs tab in the UI shows
    for line in ("tabulate: started", "protect: done in ", "gates passed", "published "):
        assert line in logs, logs
    published = tmp_path / "out" / "published" / "ui-rerun"
    assert (published / "manifest.json").is_file()
    with AuditStore.for_path(tmp_path / "out" / "internal" / "audit.sqlite") as store:
        (stored,) = list(store.records())
    record = stored.record
    assert record.outcome == "published" and record.release_id == "ui-rerun"
    assert '"steps[0].mono": false' in record.config_text and record.run_id != "local"

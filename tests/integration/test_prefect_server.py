"""A real local Prefect server: ``cubeguard serve`` registers the deployment, a UI-style run changes a parameter."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from cubeguard.audit.store import AuditStore
from tests.conftest import TINY_CONFIG, tiny_microdata

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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(check: object, what: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(1)
    raise AssertionError(f"timed out after {seconds} s waiting for {what}")


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=5) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@pytest.fixture
def server(tmp_path: Path) -> Iterator[dict[str, str]]:
    port = _free_port()
    env = {
        **os.environ,
        "PREFECT_HOME": str(tmp_path / ".prefect"),
        "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "PREFECT_SERVER_UI_ENABLED": "false",
    }
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        _wait(lambda: _healthy(env["PREFECT_API_URL"]), "the Prefect server", 240)
        yield env
    finally:
        proc.terminate()
        proc.wait(60)
        log.close()


@pytest.mark.slow
def test_served_deployment_runs_with_a_parameter_changed_from_the_ui(server: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    tiny_microdata().to_parquet(tmp_path / "data" / "persons.parquet")
    (tmp_path / "tiny.yaml").write_text(TINY_CONFIG)
    log = (tmp_path / "serve.log").open("w")
    serve = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "serve", "tiny.yaml"],
        cwd=tmp_path, env=server, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        _wait(lambda: "cubeguard-release/tiny" in (tmp_path / "serve.log").read_text(), "the deployment", 240)
        params = {"overrides": {"steps[0].mono": False}, "release_id": "ui-rerun"}  # secrets only by reference
        done = subprocess.run(
            [sys.executable, "-c", TRIGGER, json.dumps(params)],
            env=server, capture_output=True, text=True, timeout=1200, check=True,
        )  # fmt: skip
    finally:
        serve.terminate()
        serve.wait(60)
        log.close()
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["state"] == "COMPLETED", done.stdout
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

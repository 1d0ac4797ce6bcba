"""A real local Prefect server for the tests, and a deployment served on it and run as the UI runs one."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(check: Callable[[], bool], what: str, seconds: float) -> None:
    """Return once ``check()`` holds; fail after ``seconds`` naming ``what``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(1)
    raise AssertionError(f"timed out after {seconds} s waiting for {what}")


def healthy(url: str) -> bool:
    """Whether the Prefect API at ``url`` answers its health check."""
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=5) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def start_server(folder: Path, ui: bool = False) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    """``prefect server start`` on a free loopback port (its UI too with ``ui``), answering; its process and env."""
    api = f"http://127.0.0.1:{free_port()}/api"
    env = {
        **os.environ,
        "PREFECT_HOME": str(folder / ".prefect"),
        "PREFECT_API_URL": api,
        "PREFECT_UI_API_URL": api,  # what the UI's pages call, from the browser
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "PREFECT_SERVER_UI_ENABLED": "true" if ui else "false",
    }
    port = api.rsplit(":", 1)[1].removesuffix("/api")
    with (folder / "server.log").open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", port],
            env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        wait_for(lambda: healthy(api), "the Prefect server", 240)
    except BaseException:
        stop(proc)
        raise
    return proc, env


def stop(proc: subprocess.Popen[bytes]) -> None:
    """End a process started here, waiting for it."""
    proc.terminate()
    proc.wait(60)


def serve_and_run(
    folder: Path, env: dict[str, str], trigger: str, params: dict[str, Any], serving: dict[str, str] | None = None
) -> dict[str, Any]:
    """``cubeguard deploy tiny.yaml`` in ``folder``, then ``trigger`` run with ``params``; what it printed.

    ``env`` is the server's client environment; the serving process also gets ``serving`` (secrets,
    log levels). ``trigger`` is a Python script that runs the deployment as the UI's "Custom run"
    does (``run_deployment``) and prints one JSON line, which is returned.
    """
    with (folder / "serve.log").open("w") as log:
        serve = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "deploy", "tiny.yaml"],
            cwd=folder, env={**env, **(serving or {})}, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        wait_for(lambda: "cubeguard-release/tiny" in (folder / "serve.log").read_text(), "the deployment", 240)
        done = subprocess.run(
            [sys.executable, "-c", trigger, json.dumps(params)],
            env=env, capture_output=True, text=True, timeout=1200, check=True,
        )  # fmt: skip
    finally:
        stop(serve)
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer

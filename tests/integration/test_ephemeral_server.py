"""Prefect's temporary API server lives exactly as long as the ``cubeguard release`` that started it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

pytestmark = [
    pytest.mark.prefect,
    pytest.mark.skipif(sys.platform != "linux", reason="the server dies with the release through Linux's prctl"),
]
APP = "prefect.server.api.server:create_app"


def servers_of(home: Path) -> list[psutil.Process]:
    """The Prefect API servers (uvicorn) running with this PREFECT_HOME."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if APP in (proc.info["cmdline"] or []) and proc.environ().get("PREFECT_HOME") == str(home):
                found.append(proc)
        except psutil.Error:  # ended meanwhile, or not ours to read
            continue
    return found


def listening(proc: psutil.Process) -> bool:
    try:
        return any(c.status == psutil.CONN_LISTEN for c in proc.net_connections(kind="tcp"))
    except psutil.Error:
        return False


def wait_for(check: Callable[[], bool], what: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds} s waiting for {what}")
        time.sleep(0.1)


@pytest.fixture
def home(tiny_release: Path) -> Iterator[Path]:
    """The release's PREFECT_HOME; any server of it still running at the end is killed."""
    home = tiny_release.parent / ".prefect"
    yield home
    for proc in servers_of(home):
        proc.kill()


def release(config: Path, home: Path, *args: str) -> subprocess.Popen[bytes]:
    """``cubeguard release CONFIG ARGS`` started in the background; its errors go to ``release.err``."""
    env = {**os.environ, "PREFECT_HOME": str(home)}
    env.pop("PREFECT_API_URL", None)
    with (config.parent / "release.err").open("wb") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "cli.main", "release", str(config), *args],
            cwd=config.parent, env=env, stdout=subprocess.DEVNULL, stderr=err,
        )  # fmt: skip


def test_a_killed_release_takes_its_prefect_server_with_it(tiny_release: Path, home: Path) -> None:
    run = release(tiny_release, home)
    try:
        wait_for(lambda: any(listening(p) for p in servers_of(home)), "the Prefect server to listen", 240)
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait()
    wait_for(lambda: not servers_of(home), "no Prefect server of the killed release", 10)


@pytest.mark.slow
def test_dask_workers_share_the_release_server_and_it_stops_at_exit(tiny_release: Path, home: Path) -> None:
    run = release(tiny_release, home, "--workers", "2")
    seen: set[int] = set()
    while run.poll() is None:  # a worker's own server would live as long as the worker, seconds
        seen |= {p.pid for p in servers_of(home)}
        time.sleep(0.2)
    assert run.returncode == 0, (tiny_release.parent / "release.err").read_text()
    assert len(seen) == 1  # each worker used to start a server of its own
    wait_for(lambda: not servers_of(home), "the Prefect server to stop", 10)

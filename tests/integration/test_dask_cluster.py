"""A release on a Dask cluster of separate processes, as on real machines: the same files as one process.

The test starts ``dask scheduler`` and two ``dask worker`` processes on 127.0.0.1, each its own
process with no Prefect settings in its environment, and releases through ``--dask-address``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from distributed import Client

from cubeguard.audit.record import sha256_file

pytestmark = [pytest.mark.prefect, pytest.mark.slow]
WORKERS = 2


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def scheduler(tmp_path: Path) -> Iterator[str]:
    """The address of a scheduler with two single-threaded worker processes, all stopped afterwards."""
    address = f"tcp://127.0.0.1:{free_port()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    dask = [sys.executable, "-m", "dask"]
    logs = tmp_path / "dask-logs"
    logs.mkdir()
    commands = {
        "scheduler": [*dask, "scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1],
                      "--dashboard-address", ":0"],
        **{f"w{k}": [*dask, "worker", address, "--nthreads", "1", "--nworkers", "1", "--dashboard-address", ":0",
                     "--name", f"w{k}"] for k in range(WORKERS)},
    }  # fmt: skip
    procs = []
    for name, command in commands.items():
        with (logs / f"{name}.log").open("wb") as log:
            procs.append(subprocess.Popen(command, cwd=tmp_path, env=env, stderr=log))
    try:
        with Client(address, timeout=120) as client:
            client.wait_for_workers(WORKERS, timeout=120)
        yield address
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def release(config: Path, release_id: str, *args: str) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "cli.main", "release", str(config), "--release-id", release_id, "--fresh", *args],
        cwd=config.parent, env={**os.environ, "PREFECT_HOME": str(config.parent / ".prefect")},
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr


def published_files(folder: Path) -> dict[str, str]:
    """Checksums of a published release's files, its manifest left out (it holds the time and id)."""
    return {
        p.relative_to(folder).as_posix(): sha256_file(p)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "manifest.json"
    }


def test_a_release_on_separate_scheduler_and_worker_processes_matches_one_process(
    tiny_release: Path, scheduler: str
) -> None:
    release(tiny_release, "cluster", "--dask-address", scheduler, "--parts", "2")
    with Client(scheduler, timeout=60) as client:
        ran = client.run(lambda dask_worker: dask_worker.state.executed_count)
        imported = client.run(lambda: "cubeguard.release.steps" in sys.modules)
    assert len(ran) == WORKERS and all(n > 0 for n in ran.values()), ran  # both workers ran release tasks
    assert all(imported.values())
    release(tiny_release, "local")
    published = tiny_release.parent / "out" / "published"
    cluster, local = published_files(published / "cluster"), published_files(published / "local")
    assert len(cluster) > 10 and cluster == local

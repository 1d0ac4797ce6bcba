"""Process settings for running Prefect locally: a project-local home, SQLite, no telemetry.

Without a Prefect API URL, Prefect runs flows against a temporary API server: a uvicorn
subprocess (``prefect.server.api.server.SubprocessASGIServer``) that it starts on first use,
waits for (about 3 s on 2 cores) and stops at a normal exit. A release that is killed (SIGKILL,
the OOM killer) never reaches that exit, and the server, ~225 MB, would outlive it.
:func:`launch_ephemeral_server` starts the same server itself: from the main thread, with a
parent-death signal, so that on Linux it dies with the command that started it however that
command ends; and without waiting, so that the server starts while the command imports its flows.
"""

from __future__ import annotations

import atexit
import ctypes
import gc
import importlib.util
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cubeguard.errors import InternalError

_PR_SET_PDEATHSIG = 1  # from linux/prctl.h
_FROZEN_AT_EXIT: list[bool] = []
SERVER_APP = "prefect.server.api.server:create_app"  # what SubprocessASGIServer runs


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
    # Prefect's events worker logs under its own top-level name, outside PREFECT_LOGGING_LEVEL, and
    # warned "Still processing items" on stderr after a one-sentence error.
    logging.getLogger("EventsWorker").setLevel(logging.ERROR)


@dataclass
class LocalServer:
    """Prefect's temporary API server in a child process that this one started (see the module text)."""

    process: subprocess.Popen[bytes]
    url: str

    def wait_ready(self, timeout: float | None = None) -> None:
        """Return once the server answers its health check; raise if it ended or never answered."""
        limit = timeout or float(os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180"))
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise InternalError(
                    f"Prefect's temporary API server ended with exit code {self.process.returncode} before it "
                    "answered; its messages are above"
                )
            if _healthy(f"{self.url}/health"):
                return
            time.sleep(0.05)
        raise InternalError(f"Prefect's temporary API server did not answer within {limit:.0f} s")

    def stop(self) -> None:
        """End the server (at a normal exit; on Linux the kernel ends it anyway when this process ends)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def launch_ephemeral_server() -> LocalServer | None:
    """Start Prefect's temporary API server now, without waiting for it; on Linux it dies with this process.

    Returns None, starting nothing, when a Prefect API URL is configured (a real server) or off
    Linux (there Prefect starts the server on first use and stops it at a normal exit only). The
    server needs about 3 s to answer; the caller imports the flows meanwhile and calls
    :meth:`LocalServer.wait_ready` before the first flow runs. ``PREFECT_API_URL`` is set before
    Prefect is imported, so Prefect and local Dask workers use this server rather than starting
    their own. Call it from the main thread: the parent-death signal follows the thread that
    started the child.
    """
    if configured_api_url() or sys.platform != "linux":
        return None
    port = _free_port()
    url = f"http://127.0.0.1:{port}/api"
    env = {**os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
    command = [sys.executable, "-m", "uvicorn", "--app-dir", str(_prefect_parent()), "--factory", SERVER_APP,
               "--host", "127.0.0.1", "--port", str(port), "--log-level", "error", "--lifespan", "on"]  # fmt: skip
    process = subprocess.Popen(command, env=env, preexec_fn=_die_with(os.getpid()))
    server = LocalServer(process, url)
    atexit.register(server.stop)
    os.environ["PREFECT_API_URL"] = url
    return server


def configured_api_url() -> str | None:
    """The Prefect API URL set in the environment or in the active Prefect profile, read without Prefect."""
    if os.environ.get("PREFECT_API_URL"):
        return os.environ["PREFECT_API_URL"]
    home = Path(os.environ.get("PREFECT_HOME", Path.home() / ".prefect"))
    path = Path(os.environ.get("PREFECT_PROFILES_PATH", home / "profiles.toml"))
    try:
        profiles = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return None
    active = os.environ.get("PREFECT_PROFILE") or profiles.get("active")
    value = profiles.get("profiles", {}).get(active, {}).get("PREFECT_API_URL")
    return str(value) if value else None


def _prefect_parent() -> Path:
    """The folder holding the ``prefect`` package, found without importing it (as uvicorn's --app-dir)."""
    spec = importlib.util.find_spec("prefect")
    if spec is None or spec.origin is None:
        raise InternalError("the prefect package is not installed; reinstall cubeguard's environment")
    return Path(spec.origin).parent.parent


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (OSError, ValueError):
        return False


def freeze_heap() -> None:
    """Leave the objects alive now out of later garbage collections, and all of them out of the one at exit.

    The modules a release imports (Prefect, Great Expectations, pydantic, matplotlib) leave many
    objects that live until exit; Python's final collection walked them for about 2 s after a small
    release had finished, whatever its outcome. Freezing again at exit (atexit runs before that
    collection) skips it; the process's memory is returned whole when it ends.
    """
    gc.freeze()
    if not _FROZEN_AT_EXIT:
        atexit.register(gc.freeze)
        _FROZEN_AT_EXIT.append(True)


def _die_with(parent: int) -> Callable[[], None]:
    """A ``preexec_fn`` asking Linux to SIGKILL the child when ``parent`` ends."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork, not in the child

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent ended before the signal was asked for
            os._exit(1)

    return preexec

"""Process settings for running Prefect locally: a project-local home, SQLite, no telemetry.

Without ``PREFECT_API_URL`` Prefect runs flows against a temporary API server: a uvicorn
subprocess (``prefect.server.api.server.SubprocessASGIServer``) that it starts on first use and
stops at a normal exit. A release that is killed (SIGKILL, the OOM killer) never reaches that
exit, and the server, ~225 MB, would outlive it. :func:`start_ephemeral_server` starts that server
itself, from the main thread, with a parent-death signal, so that on Linux it dies with the
command that started it, however that command ends.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_PR_SET_PDEATHSIG = 1  # from linux/prctl.h


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


def start_ephemeral_server() -> None:
    """Start Prefect's temporary API server now, killed by the kernel when this process ends (Linux).

    Does nothing when an API URL is set (a real server) or off Linux (there Prefect starts the
    server on first use and stops it at a normal exit only). Prefect's own calls find this server:
    it is the instance ``SubprocessASGIServer()`` returns, and starting it again does nothing;
    child processes find it through ``PREFECT_API_URL``. Call it from the main thread: the
    parent-death signal follows the thread that started the child.
    """
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import PREFECT_API_URL

    if PREFECT_API_URL.value() or sys.platform != "linux":
        return

    class DiesWithParent(SubprocessASGIServer):
        def _run_uvicorn_command(self) -> subprocess.Popen[Any]:
            with _popen_preexec(_die_with(os.getpid())):
                return super()._run_uvicorn_command()

    server = DiesWithParent()
    server.start()
    # Worker processes (a local Dask cluster) inherit the address and use this server too, rather
    # than each starting a server of its own that nothing stops when the release is killed.
    os.environ["PREFECT_API_URL"] = server.api_url


def _die_with(parent: int) -> Callable[[], None]:
    """A ``preexec_fn`` asking Linux to SIGKILL the child when ``parent`` ends."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork, not in the child

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent ended before the signal was asked for
            os._exit(1)

    return preexec


@contextmanager
def _popen_preexec(preexec: Callable[[], None]) -> Iterator[None]:
    """``subprocess.Popen`` runs ``preexec`` in the child, for the calls inside this block only."""
    popen = subprocess.Popen
    subprocess.Popen = functools.partial(popen, preexec_fn=preexec)  # type: ignore[misc, assignment]
    try:
        yield
    finally:
        subprocess.Popen = popen  # type: ignore[misc]

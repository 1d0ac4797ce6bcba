"""A publish in its own process, for the crash and lock tests of test_publish_crash.py.

:func:`publish_child` is the target of a ``multiprocessing`` process (forkserver context, with this
module preloaded, so a child starts without importing cubeguard again). Modes:

- ``run``: publish normally;
- ``crash``: ``os._exit(137)`` at checkpoint ``at`` (as SIGKILL would: no cleanup, no flush);
- ``pause``: at checkpoint ``at`` write ``folder/paused`` (holding the lock), then wait for
  ``folder/go`` (at most 180 s) and carry on.

Exit code 0 after a publish, 3 when the store is locked (the message in ``folder/locked.txt``),
137 on a crash, 1 on any other error (its traceback in ``folder/error.txt``).
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from pathlib import Path

# dask.array (xarray's chunk manager) and distributed (dask's scheduler lookup) are imported on
# the first open and compute; imported here, in the forkserver, so that each child starts warm.
import dask.array  # noqa: F401
import distributed  # noqa: F401
import xarray as xr

import cubeguard.publish.stage as stage
from cubeguard.config import load_release
from cubeguard.publish.lock import ReleaseLocked

LOCKED_EXIT = 3
CRASH_EXIT = 137
PAUSE_LIMIT = 180

xr.backends.list_engines()  # discovered once in the forkserver rather than in every child


def publish_child(config: str, release_id: str, folder: str, mode: str = "run", at: str = "") -> None:
    """Publish ``release_id`` of the release ``config`` as the mode says (see the module docstring)."""
    out = Path(folder)
    if mode != "run":
        stage._checkpoint = _hook(mode, at, out)
    try:
        release = load_release(config)
        stage.publish_release(release, release_id, release.config.output.protected_store, ("csv", "parquet"))
    except ReleaseLocked as exc:
        (out / "locked.txt").write_text(str(exc))
        sys.exit(LOCKED_EXIT)
    except Exception:
        (out / "error.txt").write_text(traceback.format_exc())
        raise


def _hook(mode: str, name: str, folder: Path):  # type: ignore[no-untyped-def]
    def checkpoint(at: str) -> None:
        if at != name:
            return
        if mode == "crash":
            os._exit(CRASH_EXIT)
        (folder / "paused").write_text(str(os.getpid()))
        deadline = time.monotonic() + PAUSE_LIMIT
        while not (folder / "go").exists() and time.monotonic() < deadline:
            time.sleep(0.05)

    return checkpoint

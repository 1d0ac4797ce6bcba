"""One release at a time per store: an exclusive lock on ``published/.lock``.

The lock is a non-blocking ``fcntl.flock`` on an open file. The operating system drops it when its
holder's process ends, however it ends (SIGKILL, power loss aside), so a crashed release never
blocks the next one. The file holds the holder's pid, host and start time, only to say who holds
it. ``flock`` is per open file, so the lock is not re-entrant: taking it twice, even in one process,
raises :class:`ReleaseLocked`. It works on local filesystems; over NFS it depends on the server.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from cubeguard.errors import CubeguardError

LOCK_NAME = ".lock"


class ReleaseLocked(CubeguardError):
    """Another release holds the lock of this store; ``holder`` says who, when it could be read."""

    def __init__(self, folder: Path, holder: dict[str, object] | None) -> None:
        self.folder = folder
        self.holder = holder
        who = f" (pid {holder['pid']} on {holder['host']}, started {holder['started']})" if holder else ""
        super().__init__(f"another release{who} is publishing into {folder}; wait for it to finish, then run again")


@contextmanager
def release_lock(published_root: Path) -> Iterator[None]:
    """Hold the exclusive publishing lock of ``published_root`` for the ``with`` block.

    Args:
        published_root: The folder releases are published into (created if missing).

    Raises:
        ReleaseLocked: Another process (or another open of the lock here) holds it.
    """
    published_root.mkdir(parents=True, exist_ok=True)
    fd = os.open(published_root / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ReleaseLocked(published_root, _read_holder(fd)) from None
        _write_holder(fd)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)  # before unlocking, so the next reader never sees a stale holder
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _write_holder(fd: int) -> None:
    holder = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(holder).encode(), 0)


def _read_holder(fd: int) -> dict[str, object] | None:
    """The holder written in the lock file, or None while it is still being written."""
    try:
        holder = json.loads(os.pread(fd, 4096, 0))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return holder if isinstance(holder, dict) and {"pid", "host", "started"} <= holder.keys() else None

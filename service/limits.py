"""A rate limit shared by every worker of a service: a sliding window of query times per client.

``cubeguard tables --workers N`` runs N processes; a limit kept in each would let a client ask N
times as much. The query times live in one small SQLite database (WAL) in a folder the service
owns, and each query is counted in one ``BEGIN IMMEDIATE`` transaction, so the processes take
turns: at most ``per_minute`` queries per client in any 60 seconds, whichever worker answers.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

WINDOW = 60.0  # seconds
BUSY_TIMEOUT = 10.0  # seconds a worker waits for another's transaction
_SCHEMA = """
CREATE TABLE IF NOT EXISTS hits (client TEXT NOT NULL, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS hits_client_at ON hits (client, at);
"""


class RateLimit:
    """At most ``per_minute`` queries per client in any 60 seconds, counted in the database at ``path``."""

    def __init__(self, per_minute: int, path: Path, clock: Callable[[], float] = time.time) -> None:
        self.per_minute = per_minute
        self.clock = clock
        path.parent.mkdir(parents=True, exist_ok=True)
        # one connection per process, used under a lock (sqlite3 connections are not shared by threads)
        self._db = sqlite3.connect(path, timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False)
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        self._calls = 0

    def allow(self, client: str) -> bool:
        """Count a query of ``client``; False when it is over the limit (not counted then)."""
        now = self.clock()
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")  # one worker at a time: count and insert as one step
            try:
                self._db.execute(
                    "DELETE FROM hits WHERE client = ? AND (at <= ? OR at > ?)", (client, now - WINDOW, now + WINDOW)
                )  # the window, and times from a clock set back since
                (seen,) = self._db.execute("SELECT COUNT(*) FROM hits WHERE client = ?", (client,)).fetchone()
                allowed = bool(seen < self.per_minute)
                if allowed:
                    self._db.execute("INSERT INTO hits (client, at) VALUES (?, ?)", (client, now))
                self._calls += 1
                if self._calls % 1000 == 0:  # clients that stopped asking
                    self._db.execute("DELETE FROM hits WHERE at <= ?", (now - WINDOW,))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return allowed

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._db.close()


def limits_file(folder: Path, host: str, port: int) -> Path:
    """The database of the service listening on ``host:port`` for the release in output folder ``folder``.

    One per address, so every worker of a service shares it (and a restart keeps the window), while
    two services of one release on different ports keep their own.
    """
    name = "".join(c if c.isalnum() or c in "-." else "_" for c in f"{host}-{port}")
    return folder / "internal" / "service" / name / "limits.sqlite"

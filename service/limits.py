"""A rate limit shared by every worker of a service: a sliding window of query times per client.

``cubeguard tables --workers N`` runs N processes; a limit kept in each would let a client ask N
times as much. The counts live in one small SQLite database (WAL) in a folder the service owns,
and each query is counted in one ``BEGIN IMMEDIATE`` transaction, so the processes take turns:
at most ``per_minute`` queries per client in any 60 seconds, whichever worker answers.

Queries are counted per client in tenths of a second (:data:`TICK`), so a window is at most 601
rows however fast a client asks (one row per query made every count cost more the busier the
service was). A query is allowed while the ticks that can hold a query of the last 60 seconds
hold fewer than ``per_minute``; the oldest of them may reach up to a tick further back, so the
window errs on the strict side by at most 0.1 s.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

WINDOW = 60.0  # seconds
BUSY_TIMEOUT = 10.0  # seconds a worker waits for another's transaction
TICK = 0.1  # seconds counted together
_TICKS = round(WINDOW / TICK)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS ticks (
    client TEXT NOT NULL, tick INTEGER NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (client, tick)
) WITHOUT ROWID;
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
        tick = int(self.clock() // TICK)
        first = tick - _TICKS  # the tick of a query exactly 60 s ago: every later query is in [first, tick]
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")  # one worker at a time: count and insert as one step
            try:
                self._db.execute(
                    "DELETE FROM ticks WHERE client = ? AND (tick < ? OR tick > ?)", (client, first, tick + _TICKS)
                )  # the window, and ticks from a clock set back since
                (seen,) = self._db.execute(
                    "SELECT COALESCE(SUM(n), 0) FROM ticks WHERE client = ? AND tick <= ?", (client, tick)
                ).fetchone()
                allowed = bool(seen < self.per_minute)
                if allowed:
                    self._db.execute(
                        "INSERT INTO ticks (client, tick, n) VALUES (?, ?, 1) "
                        "ON CONFLICT (client, tick) DO UPDATE SET n = n + 1",
                        (client, tick),
                    )
                self._calls += 1
                if self._calls % 1000 == 0:  # clients that stopped asking
                    self._db.execute("DELETE FROM ticks WHERE tick < ?", (first,))
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

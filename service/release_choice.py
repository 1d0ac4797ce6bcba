"""The release every worker of a service serves, chosen by ``POST /admin/reload`` on any one of them.

``cubeguard tables --workers N`` runs N processes, and a reload request reaches only the worker
that answers it. That worker records the release it switched to here (one row in a small SQLite
database beside the rate limit's, with a generation that grows by one per choice); every worker
reads the row once a second (:data:`FOLLOW_SECONDS`) and switches when the generation is newer
than its own, and a worker started later (one replacing a worker that died) opens the chosen
release rather than the one the command named. Each worker's old engine keeps answering until its
new one is open, so every answer still comes whole from one release.

``cubeguard tables`` forgets the choice when it starts, so a restart serves what its command says.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

FOLLOW_SECONDS = 1.0  # how often each worker looks for a newer choice
BUSY_TIMEOUT = 10.0  # seconds a worker waits for another's transaction
_SCHEMA = """
CREATE TABLE IF NOT EXISTS choice (
    one INTEGER PRIMARY KEY CHECK (one = 1), release_id TEXT NOT NULL, generation INTEGER NOT NULL
);
"""


class ReleaseChoice:
    """The release chosen for every worker of one service, kept in the database at ``path``."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False)
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)

    def choose(self, release_id: str) -> int:
        """Record ``release_id`` as every worker's release; its generation."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                (last,) = self._db.execute("SELECT COALESCE(MAX(generation), 0) FROM choice").fetchone()
                self._db.execute("INSERT OR REPLACE INTO choice VALUES (1, ?, ?)", (release_id, last + 1))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return int(last) + 1

    def current(self) -> tuple[int, str] | None:
        """(generation, release id) of the last choice, or None if none was made since the service started."""
        with self._lock:
            row = self._db.execute("SELECT generation, release_id FROM choice").fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    def forget(self) -> None:
        """Drop the choice (a service starting serves the release its command names)."""
        with self._lock:
            self._db.execute("DELETE FROM choice")

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._db.close()


def choice_file(limits: Path) -> Path:
    """The choice's database of the service whose rate limit is kept in ``limits``."""
    return limits.with_name("release.sqlite")


def chosen_release(path: Path) -> tuple[int, str] | None:
    """(generation, release id) chosen in the database at ``path``, or None (none chosen, or no database)."""
    if not path.is_file():
        return None
    choice = ReleaseChoice(path)
    try:
        return choice.current()
    finally:
        choice.close()


def forget_choice(limits: Path) -> None:
    """Forget the release chosen by an earlier run of the service whose rate limit is kept in ``limits``."""
    choice = ReleaseChoice(choice_file(limits))
    choice.forget()
    choice.close()

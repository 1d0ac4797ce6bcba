"""The rate limit is one sliding window per client, shared by every process that opens its database."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

from service.limits import RateLimit, limits_file


def test_a_sliding_window_per_client(tmp_path: Path) -> None:
    now = [1000.0]
    limit = RateLimit(3, tmp_path / "l.sqlite", clock=lambda: now[0])
    assert [limit.allow("a") for _ in range(4)] == [True, True, True, False]
    assert limit.allow("b")  # another client has its own window
    now[0] += 59.9
    assert not limit.allow("a")
    now[0] += 0.2  # the first three are 60 s old now
    assert [limit.allow("a") for _ in range(4)] == [True, True, True, False]


def test_a_clock_set_back_does_not_lock_a_client_out(tmp_path: Path) -> None:
    now = [1000.0]
    limit = RateLimit(2, tmp_path / "l.sqlite", clock=lambda: now[0])
    assert limit.allow("a") and limit.allow("a") and not limit.allow("a")
    now[0] -= 3600  # the machine's clock was an hour fast
    assert limit.allow("a")


def _ask(path: str, n: int, answers: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    limit = RateLimit(25, Path(path))
    answers.put(sum(limit.allow("same client") for _ in range(n)))


def test_processes_sharing_the_database_share_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    RateLimit(25, path).close()  # created once, as the command does before its workers start
    answers: multiprocessing.Queue = multiprocessing.Queue()  # type: ignore[type-arg]
    workers = [multiprocessing.Process(target=_ask, args=(str(path), 40, answers)) for _ in range(3)]
    for w in workers:
        w.start()
    counts = [answers.get(timeout=60) for _ in workers]
    for w in workers:
        w.join(timeout=60)
    assert sum(counts) == 25, counts  # 120 asked in three processes; the limit holds for all of them


def test_each_served_address_has_its_own_database(tmp_path: Path) -> None:
    assert (
        limits_file(tmp_path, "127.0.0.1", 8000)
        == tmp_path / "internal" / "service" / "127.0.0.1-8000" / "limits.sqlite"
    )
    assert limits_file(tmp_path, "::1", 8000).parent.name == "__1-8000"


def test_a_busy_client_costs_one_row_per_tenth_of_a_second(tmp_path: Path) -> None:
    now = [1000.0]
    limit = RateLimit(3000, tmp_path / "l.sqlite", clock=lambda: now[0])
    for _ in range(3000):  # 3,000 queries in 3 s
        assert limit.allow("a")
        now[0] += 0.001
    assert not limit.allow("a")  # every one of them counted
    limit.close()
    with sqlite3.connect(tmp_path / "l.sqlite") as db:
        (rows,) = db.execute("SELECT COUNT(*) FROM ticks").fetchone()
    assert rows <= 31

"""The table service under faults (issue 38), in a bounded soak on loopback.

20 clients ask tables for a fixed time while the release served is switched back and forth between
two publications of the same microdata under different parameters (so their answers differ), and,
in a second run, while a worker process of `cubeguard tables --workers 2` is killed. Every answer
must come whole from one release (its values equal that release's answer, never a mix), no request
answers 5xx, and the server's memory stays within a stated bound. Each run writes its table
(requests, answers, refusals, errors by kind, wrong answers, RSS at start and end) to the test's
folder and prints it (``pytest -s``).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cubeguard.tables.formats import encode
from cubeguard.tables.query import TableQuery
from cubeguard.tables.served import open_served
from service.app import create_app
from tests.browser import served
from tests.tables_release import TABLES, publish

CLIENTS = 20
SECONDS = 20.0
#: Growth of the server's resident memory over a soak that counts as flat (the answer caches fill first).
RSS_BOUND_MB = 150
#: Seconds after a worker is killed within which every dropped connection must fall.
DROP_WINDOW_S = 2.0
TOKEN = "CUBEGUARD_TEST_SOAK_TOKEN"
RULES = TABLES + f"  rate_limit_per_minute: 100000\n  admin_token_env: {TOKEN}\n"
QUERIES = [
    {"breakdowns": "GEO.2,SEX"},
    {"breakdowns": "GEO.2,AGE.L"},
    {"breakdowns": "GEO.1,SEX,AGE.M"},
    {"breakdowns": "SEX,AGE.M"},
    {"breakdowns": "GEO.2,SEX", "mean": "age"},
    {"breakdowns": "AGE.M", "population": "total", "filter": "SEX:1"},
]


def _query(params: dict[str, str]) -> TableQuery:
    filters = dict([params["filter"].split(":")]) if "filter" in params else {}
    return TableQuery(breakdowns=params["breakdowns"].split(","), filters=filters, mean=params.get("mean"))


@pytest.fixture(scope="module")
def two_releases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Publications r1 (the tiny release) and r2 (the same microdata, another p-table) in one folder."""
    from cubeguard.release.run import PlainRunner, prepare, walk
    from cubeguard.release.spec import RunSpec
    from cubeguard.release.steps import Services
    from expectations.release import gate_release
    from schemas.validate import validate_release

    config = publish(tmp_path_factory.mktemp("soak"), tables=RULES)
    services = Services(validate=validate_release, gate=gate_release)
    spec, prepared = prepare(RunSpec(str(config), {"steps[0].V": 2.5, "steps[0].D": 4}, release_id="r2"), services)
    walk(spec, PlainRunner(services), {"prepare": prepared})
    return config


def _expected(config: Path) -> dict[tuple[str, int], list[Any]]:
    """Per release and query, the values its answer holds."""
    found = {}
    for rid in ("tiny-r1", "r2"):
        engine = open_served(config, rid)
        for k, params in enumerate(QUERIES):
            found[(rid, k)] = json.loads(encode(engine.answer(_query(params)), "json"))["value"]
    assert any(found[("tiny-r1", k)] != found[("r2", k)] for k in range(len(QUERIES)))  # else a mix would not show
    return found


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _ask(base: str, k: int) -> tuple[str, Any]:
    """One request: ("ok", body), ("status", code) or ("error", kind)."""
    url = f"{base}/api/table?" + urllib.parse.urlencode(QUERIES[k])
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return "ok", json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return "status", exc.code
    except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
        return "error", type(getattr(exc, "reason", exc)).__name__


def _soak(
    base: str, expected: dict[tuple[str, int], list[Any]], fault: Any, drops: list[float] | None = None
) -> Counter[str]:
    """CLIENTS threads asking for SECONDS while ``fault(stop)`` runs beside them; the tally.

    ``drops``, if given, receives the ``time.monotonic()`` of each dropped connection.
    """
    tally: Counter[str] = Counter()
    lock = threading.Lock()
    stop = threading.Event()

    def client(seed: int) -> None:
        rng = random.Random(seed)
        while not stop.is_set():
            k = rng.randrange(len(QUERIES))
            kind, found = _ask(base, k)
            with lock:
                tally["requests"] += 1
                if kind == "ok":
                    rid = found["extension"]["release_id"]
                    tally["answers"] += 1
                    tally[f"answers from {rid}"] += 1
                    tally["wrong"] += found["value"] != expected[(rid, k)]
                elif kind == "status":
                    tally[f"HTTP {found}"] += 1
                else:
                    tally[f"connection {found}"] += 1
                    if drops is not None:
                        drops.append(time.monotonic())

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    fault(stop)
    time.sleep(max(0.0, SECONDS))
    stop.set()
    for t in threads:
        t.join(timeout=60)
    return tally


def _report(folder: Path, name: str, tally: Counter[str], rss: tuple[float, float]) -> None:
    table = {**dict(sorted(tally.items())), "rss_start_mb": round(rss[0]), "rss_end_mb": round(rss[1])}
    (folder / f"{name}.json").write_text(json.dumps(table, indent=1))
    print(f"\n{name}: {json.dumps(table)}")


@pytest.mark.slow
def test_answers_stay_whole_while_the_release_is_reloaded_under_20_clients(
    two_releases: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN, "soak-secret-token")
    expected = _expected(two_releases)
    app = create_app(two_releases, release_id="tiny-r1", precompute=False)
    server = served(app)
    base = next(server)
    _ask(base, 0)  # warm
    start = _rss_mb(os.getpid())

    def reloading(stop: threading.Event) -> None:
        def loop() -> None:
            flip = 0
            while not stop.is_set():
                rid = ("r2", "tiny-r1")[flip % 2]
                request = urllib.request.Request(
                    f"{base}/admin/reload?release_id={rid}", method="POST",
                    headers={"Authorization": "Bearer soak-secret-token"},
                )  # fmt: skip
                with urllib.request.urlopen(request, timeout=60) as response:
                    assert response.status == 200
                flip += 1
                time.sleep(0.5)

        threading.Thread(target=loop, daemon=True).start()

    tally = _soak(base, expected, reloading)
    end = _rss_mb(os.getpid())
    next(server, None)
    _report(two_releases.parent, "soak-reload", tally, (start, end))
    assert tally["answers"] > 100 and tally["answers from tiny-r1"] > 0 and tally["answers from r2"] > 0
    assert tally["wrong"] == 0  # every answer whole from one release
    assert tally["answers"] == tally["requests"]  # no 5xx, no refusal, no dropped connection
    assert end - start < RSS_BOUND_MB


@contextlib.contextmanager
def _workers(config: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``cubeguard tables CONFIG --release-id tiny-r1 --workers 2`` answering on a free port; stopped after."""
    port = _free_port()
    env = {**os.environ, "PREFECT_HOME": str(config.parent / ".prefect")}
    command = [sys.executable, "-m", "cli.main", "tables", str(config), "--release-id", "tiny-r1",
               "--port", str(port), "--workers", "2"]  # fmt: skip
    log = (config.parent / "workers.log").open("w")
    service = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while _ask(base, 0)[0] != "ok":
            assert time.monotonic() < deadline and service.poll() is None, (config.parent / "workers.log").read_text()
            time.sleep(0.5)
        yield base, service
    finally:
        os.killpg(service.pid, signal.SIGTERM)
        service.wait(60)
        log.close()


@pytest.mark.slow
def test_a_killed_worker_is_replaced_and_no_answer_is_5xx_or_wrong(two_releases: Path) -> None:
    expected = _expected(two_releases)
    killed_at: list[float] = []
    drops: list[float] = []
    with _workers(two_releases) as (base, service):
        workers = _children(service.pid)
        assert len(workers) == 2, workers
        start = sum(_rss_mb(p) for p in workers)

        def killing(stop: threading.Event) -> None:
            def kill() -> None:
                time.sleep(SECONDS / 3)
                killed_at.append(time.monotonic())
                os.kill(workers[0], signal.SIGKILL)

            threading.Thread(target=kill, daemon=True).start()

        tally = _soak(base, expected, killing, drops)
        after = _children(service.pid)
        end = sum(_rss_mb(p) for p in after)
    late = [round(t - killed_at[0], 3) for t in drops]
    tally["drops_within_ms"] = round(1000 * max(late, default=0.0))
    _report(two_releases.parent, "soak-worker-killed", tally, (start, end))
    assert len(after) == 2 and workers[0] not in after  # the killed worker was replaced
    assert tally["wrong"] == 0 and not [k for k in tally if k.startswith("HTTP 5")]
    dropped = sum(v for k, v in tally.items() if k.startswith("connection"))
    assert tally["answers"] + dropped == tally["requests"]
    # Connections drop only as the killed worker goes: those it held, and those the kernel still
    # routed to its socket until its process had finished exiting (a client may be dropped twice).
    assert dropped > 0 and all(0 <= t < DROP_WINDOW_S for t in late), late


@pytest.mark.slow
def test_a_reload_reaches_every_worker_and_the_worker_that_replaces_one(
    two_releases: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN, "soak-secret-token")  # the service's environment
    with _workers(two_releases) as (base, service):
        assert _serving(base, 40) == {"tiny-r1"}
        request = urllib.request.Request(f"{base}/admin/reload?release_id=r2", method="POST",
                                         headers={"Authorization": "Bearer soak-secret-token"})  # fmt: skip
        with urllib.request.urlopen(request, timeout=120) as response:
            assert json.loads(response.read()) == {"release_id": "r2"}
        switched = _until(lambda: _serving(base, 40) == {"r2"}, 30)
        workers = _children(service.pid)
        os.kill(workers[0], signal.SIGKILL)
        _until(lambda: len(set(_children(service.pid)) - set(workers)) == 1, 60)
        replaced = _until(lambda: _ask(base, 0)[0] == "ok" and _serving(base, 40) == {"r2"}, 60)
    print(f"\nevery worker served r2 {switched:.1f} s after the reload; a replaced worker {replaced:.1f} s after")
    assert switched < 30 and replaced < 60


def _serving(base: str, n: int) -> set[str]:
    """The releases ``n`` requests on new connections were answered from (each worker takes some)."""
    found = set()
    for _ in range(n):
        with urllib.request.urlopen(f"{base}/api/release", timeout=30) as response:
            found.add(json.loads(response.read())["release_id"])
    return found


def _until(check: Callable[[], bool], seconds: float) -> float:
    """Seconds until ``check()`` holds; fails the test after ``seconds``."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > seconds:
            pytest.fail(f"not so within {seconds} s")
        time.sleep(0.2)
    return time.monotonic() - start


def _children(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False).stdout.split()
    kids = [int(p) for p in found]
    workers = []
    for kid in kids:
        cmdline = Path(f"/proc/{kid}/cmdline").read_bytes().replace(b"\0", b" ")
        if b"spawn_main" in cmdline:  # uvicorn's worker processes (not the resource tracker)
            workers.append(kid)
    return sorted(workers)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])

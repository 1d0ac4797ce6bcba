"""The flexible table service under load: 20 concurrent clients on the EU 2021 synthetic census.

Run: ``.venv/bin/python benchmarks/tables_service.py [--persons 10000000] [--duration 60] [--skip-release]``.

1. Prepare (``--skip-release`` reuses an earlier one): write ``work/bench-tables/eu2021_tables_<N>.yaml``,
   ``configs/eu2021.yaml`` with absolute classification paths, its microdata and output folder in
   ``work/bench-tables/`` and a ``tables:`` section (:data:`OFFERED`: GEO.N, GEO.L, GEO.M and 15
   breakdowns of 13 person variables; population ``total``; at most 4 variables; no data rules,
   so every table is answered in full; ``max_cells`` and the rate limit out of the way), then run
   ``cubeguard release CONFIG --set input.synthetic.persons=N`` (timed, with the peak RSS of its
   process tree). ``CUBEGUARD_CKM_D`` / ``CUBEGUARD_CKM_V`` default to 5 / 3.
2. Start ``cubeguard tables CONFIG --port P`` as a subprocess and wait for ``/api/release``.
3. For each table kind (2-way: a geography and one variable; 3-way: and two; 4-way: and three;
   the geography GEO.L or GEO.M, the variables distinct), drawn from all such tables in a seeded
   order: ``solo``, one client asking the first few tables one after the other (the service time of
   a cold table without queueing); ``cold``, ``--clients`` clients asking back to back tables never
   asked before (every answer computed: tabulation, margins, noise) until none are left or
   ``--duration`` has passed; then a fixed pool of ``--pool`` tables is asked once (so the service's
   caches hold them, as far as they fit) and ``warm`` has the clients draw from the pool for
   ``--duration`` seconds (answers from the caches: HTTP and the query log). Per phase: requests,
   refusals (422 naming a rule), errors (anything else), latency percentiles, queries per second,
   the server's CPU seconds and peak RSS, and this (client) process's CPU seconds.
4. Before the server starts, a separate process (twice: as is, and with ``OMP_WAIT_POLICY=PASSIVE``)
   opens the same release in-process and times each stage of a query on a sample of the pool
   (cells with margins, protection, rules, JSON body, the query log's insert), to show
   where the time goes.

Writes ``benchmarks/results/tables_service.{json,md}`` (``--results-dir`` elsewhere for trials).
Target (the issue): 20 concurrent clients on the EU synthetic census at 10M persons; on 2 cores a
geography and three variables in under 100 ms at the median and 300 ms at the 95th percentile; no
error.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import itertools
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._measure import RESULTS, machine

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "work" / "bench-tables"
CLI = Path(sys.executable).with_name("cubeguard")
GEOGRAPHIES = ["GEO.L", "GEO.M"]  # the geographies of the load's tables
#: Offered breakdowns: the three geographies of the brief and person variables of the eu2021 cubes
#: (one classification per microdata column, so the config check accepts them).
OFFERED = [
    "GEO.N", "GEO.L", "GEO.M",
    "SEX", "AGE.L", "AGE.M", "AGE.H", "LMS.H", "CAS.H", "EDU", "OCC", "IND.L", "SIE", "HST.H", "FST.H", "LOC",
    "COC.L", "POB.L",
]  # fmt: skip
KINDS = {"2-way": 1, "3-way": 2, "4-way": 3}  # variables beside the geography
TARGET_P50_MS, TARGET_P95_MS = 100.0, 300.0
CELL_BUCKETS = [1_000, 10_000, 100_000, 1_000_000]
#: The stage timings run once as the service runs (numba's OpenMP threads spin after a parallel
#: region) and once with OpenMP's threads sleeping at once, which changes the margins' cost.
STAGE_VARIANTS = {"default": {}, "OMP_WAIT_POLICY=PASSIVE": {"OMP_WAIT_POLICY": "PASSIVE"}}


# --- 1. prepare -------------------------------------------------------------------------------------


def demo_age() -> dict[str, Any]:
    """The magnitude perturbation of age in configs/demo.yaml (its cell key step's ``magnitudes.age``)."""
    import yaml

    step = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text(encoding="utf-8"))["steps"][0]
    return {k: v for k, v in step["magnitudes"]["age"].items() if k != "ptable_file"}


def config_path(persons: int) -> Path:
    return WORK / f"eu2021_tables_{persons}.yaml"


def write_config(persons: int) -> Path:
    """configs/eu2021.yaml with absolute paths, its data in work/bench-tables/ and a tables section."""
    import yaml

    src = ROOT / "configs" / "eu2021.yaml"
    cfg = yaml.safe_load(src.read_text(encoding="utf-8"))
    for var in cfg["variables"].values():
        if "file" in var:
            var["file"] = str((src.parent / var["file"]).resolve())
    cfg["name"] = "eu2021-tables"
    cfg["input"]["microdata"] = str(WORK / f"eu{persons}" / "persons.parquet")
    cfg["input"]["synthetic"]["persons"] = persons
    cfg["output"]["folder"] = str(WORK / f"out{persons}")
    cfg["tables"] = {
        "breakdowns": OFFERED,
        "populations": ["total"],
        "max_dimensions": 4,
        "max_cells": 50_000_000,
        "rate_limit_per_minute": 1_000_000,
        "means": {"age": {"column": "age", "label": "Age in years"}},
    }
    cfg["steps"][0]["magnitudes"] = {
        "age": {**demo_age(), "ptable_file": str(ROOT / "configs" / "ptables" / "demo_age_num.csv")}
    }
    path = config_path(persons)
    path.parent.mkdir(parents=True, exist_ok=True)
    head = f"# Written by benchmarks/tables_service.py from configs/eu2021.yaml ({persons:,} persons).\n"
    path.write_text(head + yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return path


def ckm_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("CUBEGUARD_CKM_D", "5")
    env.setdefault("CUBEGUARD_CKM_V", "3")
    return env


class TreeSampler:
    """Peak RSS of a process and its children, sampled every ``every`` seconds in a thread."""

    def __init__(self, pid: int, every: float = 0.25) -> None:
        import psutil

        self.proc = psutil.Process(pid)
        self.every = every
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def rss(self) -> int:
        import psutil

        total = 0
        with contextlib.suppress(psutil.Error):
            for p in [self.proc, *self.proc.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    total += p.memory_info().rss
        return total

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.peak = max(self.peak, self.rss())

    def __enter__(self) -> TreeSampler:
        self.peak = self.rss()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def release(persons: int) -> dict[str, Any]:
    """Write the config and run the release once, timed."""
    import psutil

    config = write_config(persons)
    log = WORK / f"release_{persons}.log"
    cmd = [str(CLI), "release", str(config), "--set", f"input.synthetic.persons={persons}"]
    print("$", " ".join(cmd), flush=True)
    t0 = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=ckm_env(), stdout=out, stderr=subprocess.STDOUT)
        with TreeSampler(proc.pid, every=0.5) as sampler:
            rc = proc.wait()
    seconds = time.perf_counter() - t0
    usage = psutil.Process().cpu_times()  # children_*: the reaped release process (and its children)
    if rc != 0:
        raise SystemExit(f"release failed (exit {rc}); see {log}")
    record = {
        "command": " ".join(cmd),
        "persons": persons,
        "seconds": round(seconds, 1),
        "cpu_seconds": round(usage.children_user + usage.children_system, 1),
        "peak_rss_mb": round(sampler.peak / 2**20),
        "load_avg_1min": round(os.getloadavg()[0], 2),
        "config": str(config.relative_to(ROOT)),
        "log": str(log.relative_to(ROOT)),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    (WORK / f"release_{persons}.json").write_text(json.dumps(record, indent=2))
    return record


# --- 2. server --------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def clock(per: dict[str, list[float]], name: str) -> Iterator[None]:
    """Append the block's milliseconds to ``per[name]``."""
    t = time.perf_counter()
    yield
    per.setdefault(name, []).append((time.perf_counter() - t) * 1000)


@contextlib.contextmanager
def server(config: Path, port: int, log: Path, workers: int = 1) -> Iterator[tuple[subprocess.Popen[bytes], float]]:
    """``cubeguard tables CONFIG --port PORT [--workers N]`` running and answering; its start-up seconds."""
    import httpx

    cmd = [str(CLI), "tables", str(config), "--port", str(port), *(["--workers", str(workers)] if workers > 1 else [])]
    print("$", " ".join(cmd), flush=True)
    out = log.open("w")
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=ckm_env(), stdout=out, stderr=subprocess.STDOUT)
    try:
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"the table service stopped (exit {proc.returncode}); see {log}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/api/release", timeout=5).status_code == 200:
                    break
            if time.perf_counter() - t0 > 600:
                raise SystemExit(f"the table service did not answer within 600 s; see {log}")
            time.sleep(0.25)
        yield proc, time.perf_counter() - t0
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        out.close()


def wait_precomputed(url: str, t0: float) -> tuple[int, float]:
    """Wait until the service has tabulated its planned crossings; their number and the seconds since ``t0``.

    Each check is a new connection, which any worker may take: 20 answers in a row say ready.
    """
    import httpx

    ready = 0
    while True:
        done = httpx.get(f"{url}/api/release", timeout=5).json().get("precomputed", {"ready": 0, "planned": 0})
        ready = ready + 1 if done["ready"] >= done["planned"] else 0
        if ready >= 20:
            return int(done["planned"]), time.perf_counter() - t0
        time.sleep(0.05 if ready else 0.25)


def vm_hwm_mb(pid: int) -> float | None:
    """The kernel's peak resident memory of ``pid`` (VmHWM), summed over its worker processes."""
    import psutil

    total, found = 0, False
    with contextlib.suppress(psutil.Error):
        for p in [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]:
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{p.pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        total, found = total + int(line.split()[1]), True
    return round(total / 1024, 1) if found else None


def tree_cpu(pid: int) -> float:
    """CPU seconds (user and system) of ``pid`` and its living worker processes."""
    import psutil

    total = 0.0
    with contextlib.suppress(psutil.Error):
        for p in [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                t = p.cpu_times()
                total += t.user + t.system
    return total


# --- 3. load ----------------------------------------------------------------------------------------

Table = tuple[str, ...]


def universe(variables: list[dict[str, Any]], kind: str, seed: int) -> list[tuple[Table, int]]:
    """Every table of ``kind`` (a geography first, then distinct variables), with its cells, shuffled."""
    cells = {lvl["id"]: len(lvl["codes"]) for v in variables for lvl in v["levels"]}
    levels = [(v["id"], lvl["id"]) for v in variables if v["id"] != "GEO" for lvl in v["levels"]]
    out = []
    for geo in GEOGRAPHIES:
        for combo in itertools.combinations(levels, KINDS[kind]):
            if len({var for var, _ in combo}) == len(combo):
                table = (geo, *(bid for _, bid in combo))
                n = 1
                for b in table:
                    n *= cells[b]
                out.append((table, n))
    random.Random(f"{seed}-{kind}").shuffle(out)
    return out


def summary(results: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    """Counts, latency percentiles (ms) and throughput of a phase's requests."""
    import numpy as np

    ok: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    for r in results:
        (ok if r["status"] == 200 else refused if r["status"] == 422 and r.get("rule") else errors).append(r)
    lat = np.array([r["ms"] for r in ok + refused], dtype=np.float64)
    pct = (lambda q: round(float(np.percentile(lat, q)), 1)) if lat.size else (lambda q: None)
    cells = [r["cells"] for r in results]
    by_cells: dict[str, Any] = {}
    edges = [0, *CELL_BUCKETS, float("inf")]
    for lo, hi in itertools.pairwise(edges):
        ms = [r["ms"] for r in ok if lo <= r["cells"] < hi]
        if ms:
            name = f"<{hi:,}" if hi != float("inf") else f">={lo:,}"
            by_cells[name] = {"requests": len(ms), "p50_ms": round(statistics.median(ms), 1)}
    return {
        "requests": len(results),
        "answered": len(ok),
        "refused": len(refused),
        "refusal_rules": sorted({r["rule"] for r in refused}),
        "errors": len(errors),
        "error_examples": [f"{r['status']} {r.get('error', '')}"[:200] for r in errors[:3]],
        "distinct_tables": len({r["table"] for r in results}),
        "seconds": round(seconds, 2),
        "qps": round(len(results) / seconds, 1) if seconds > 0 else None,
        "p50_ms": pct(50),
        "p95_ms": pct(95),
        "p99_ms": pct(99),
        "max_ms": round(float(lat.max()), 1) if lat.size else None,
        "mean_ms": round(float(lat.mean()), 1) if lat.size else None,
        "cells_median": int(statistics.median(cells)) if cells else None,
        "cells_max": max(cells) if cells else None,
        "mb_received": round(sum(r["bytes"] for r in results) / 2**20, 1),
        "p50_ms_by_cells": by_cells,
    }


class RawClient:
    """One kept-alive HTTP/1.1 connection on asyncio streams: send a GET, read the whole body.

    The load generator shares the server's 2 cores, so its own CPU is taken from the server's: httpx
    spent about 3 ms of CPU per 590 KB table read, this about 0.5 ms (``--client``). Bodies by
    ``Content-Length`` (as uvicorn sends them), chunked, or until the server closes.
    """

    def __init__(self, base: str) -> None:
        host, _, port = base.removeprefix("http://").partition(":")
        self.host, self.port = host, int(port or 80)
        self.streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def get(self, path: str, params: dict[str, str]) -> tuple[int, bytes]:
        """Status and body of ``GET path?params`` (a failed connection is closed and raises)."""
        from urllib.parse import urlencode

        if self.streams is None:
            self.streams = await asyncio.open_connection(self.host, self.port)
        reader, writer = self.streams
        try:
            writer.write(f"GET {path}?{urlencode(params)} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n\r\n".encode())
            lines = (await reader.readuntil(b"\r\n\r\n")).split(b"\r\n")
            head = dict(line.lower().split(b":", 1) for line in lines[1:] if b":" in line)
            headers = {k.strip(): v.strip() for k, v in head.items()}
            ends = headers.get(b"connection") == b"close"
            if b"content-length" in headers:
                body = await reader.readexactly(int(headers[b"content-length"]))
            elif headers.get(b"transfer-encoding") == b"chunked":
                body = await _chunked(reader)
            else:
                body, ends = await reader.read(), True
            if ends:
                await self.close()
            return int(lines[0].split()[1]), body
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        if self.streams is not None:
            self.streams[1].close()
            self.streams = None


async def _chunked(reader: asyncio.StreamReader) -> bytes:
    parts = []
    while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)
    await reader.readuntil(b"\r\n")
    return b"".join(parts)


async def ask(fetch: Any, table: Table, cells: int, mean: bool = False) -> dict[str, Any]:
    """One GET /api/table, timed until its whole body is read; with ``mean``, the mean age unless AGE is crossed.

    ``fetch(path, params)`` gives the status and body.
    """
    params = {"breakdowns": ",".join(table), "population": "total", "format": "json"}
    if mean and not any(b.startswith("AGE") for b in table):  # a mean of age by age is refused
        params["mean"] = "age"
    t0 = time.perf_counter()
    rec: dict[str, Any] = {"table": ",".join(table), "cells": cells}
    try:
        status, body = await fetch("/api/table", params)
        rec["ms"] = (time.perf_counter() - t0) * 1000
        rec["status"], rec["bytes"] = status, len(body)
        if status == 422:
            said = json.loads(body)
            rec["rule"] = said.get("rule") if said.get("refused") else None
            rec["error"] = "" if rec["rule"] else body[:200].decode(errors="replace")
        elif status != 200:
            rec["error"] = body[:200].decode(errors="replace")
    except Exception as exc:  # any failure is an error of the run
        rec.update(ms=(time.perf_counter() - t0) * 1000, status=-1, bytes=0, error=f"{type(exc).__name__}: {exc}")
    return rec


async def run_phase(
    base: str, clients: int, duration: float, queue: list[tuple[Table, int]] | None, pool: list[tuple[Table, int]] | None,
    seed: int, mean: bool = False, kind: str = "raw",
) -> tuple[list[dict[str, Any]], float]:  # fmt: skip
    """``clients`` clients back to back: from ``queue`` (each table once) or drawing from ``pool``.

    ``kind``: each client a :class:`RawClient`, or an ``httpx.AsyncClient`` with one connection.
    """
    import httpx

    results: list[dict[str, Any]] = []
    todo = iter(queue or [])
    t0 = time.perf_counter()
    deadline = t0 + duration

    async def one(k: int) -> None:
        rng = random.Random(f"{seed}-{k}")
        async with contextlib.AsyncExitStack() as stack:
            if kind == "raw":
                raw = RawClient(base)
                stack.push_async_callback(raw.close)
                fetch = raw.get
            else:
                limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
                client = await stack.enter_async_context(httpx.AsyncClient(base_url=base, timeout=600, limits=limits))

                async def fetch(path: str, params: dict[str, str]) -> tuple[int, bytes]:
                    resp = await client.get(path, params=params)
                    return resp.status_code, resp.content

            while time.perf_counter() < deadline:
                if pool is not None:
                    table, cells = rng.choice(pool)
                else:
                    nxt = next(todo, None)
                    if nxt is None:
                        return
                    table, cells = nxt
                results.append(await ask(fetch, table, cells, mean))

    await asyncio.gather(*(one(k) for k in range(clients)))
    return results, time.perf_counter() - t0


def measured(proc_pid: int, fn: Any) -> tuple[Any, dict[str, Any]]:
    """Run ``fn()`` with the server's CPU seconds and peak RSS and this process's CPU seconds."""
    import psutil

    def busy() -> float:  # CPU seconds the whole machine spent on anything
        t = psutil.cpu_times()
        return float(sum(t)) - float(t.idle) - float(getattr(t, "iowait", 0.0))

    c0, me0, all0 = tree_cpu(proc_pid), time.process_time(), busy()
    with TreeSampler(proc_pid, every=0.2) as sampler:
        out = fn()
    server_cpu = tree_cpu(proc_pid) - c0
    client_cpu = time.process_time() - me0
    return out, {
        "server_cpu_seconds": round(server_cpu, 1),
        "client_cpu_seconds": round(client_cpu, 1),
        # other processes on the (shared) machine, from the system-wide CPU times
        "other_cpu_seconds": round(max(busy() - all0 - server_cpu - client_cpu, 0.0), 1),
        "server_peak_rss_mb": round(sampler.peak / 2**20),
        "load_avg_1min": round(os.getloadavg()[0], 2),  # the machine is shared: other work shows here
    }


def ping(base: str, n: int = 200) -> dict[str, Any]:
    """HTTP round trips of one client to ``/api/release`` (no table, no query log): the framework's share."""
    import httpx
    import numpy as np

    ms = []
    with httpx.Client(base_url=base, timeout=60) as client:
        for _ in range(n):
            t0 = time.perf_counter()
            client.get("/api/release").raise_for_status()
            ms.append((time.perf_counter() - t0) * 1000)
    return {"kind": "-", "phase": "ping", "requests": n, "p50_ms": round(float(np.median(ms)), 2),
            "p95_ms": round(float(np.percentile(ms, 95)), 2)}  # fmt: skip


def wait_quiet(pid: int, limit: float, window: float = 3.0, share: float = 0.15) -> float:
    """Wait (at most ``limit`` s) until other processes use under ``share`` of a core; the seconds waited.

    The machine is shared (test suites of other sessions run on the same 2 cores); a phase started
    while they run measures them too. Each phase still records the CPU others took during it.
    """
    import psutil

    t0 = time.perf_counter()
    while time.perf_counter() - t0 < limit:
        b0 = psutil.cpu_times()
        s0, m0 = tree_cpu(pid), time.process_time()
        time.sleep(window)
        b1 = psutil.cpu_times()
        busy = (sum(b1) - b1.idle - b1.iowait) - (sum(b0) - b0.idle - b0.iowait)
        mine = time.process_time() - m0 if pid == os.getpid() else 0.0
        others = busy - (tree_cpu(pid) - s0) - (time.process_time() - m0) + mine
        if others < share * window:
            break
    return time.perf_counter() - t0


def load(base: str, pid: int, args: argparse.Namespace) -> dict[str, Any]:
    """The three phases for each kind of table."""
    import httpx

    variables = httpx.get(f"{base}/api/variables", timeout=60).json()
    phases: dict[str, Any] = {"-/ping": ping(base)}
    print(f"ping (GET /api/release, one client): p50 {phases['-/ping']['p50_ms']} ms", flush=True)
    for kind in args.kinds:
        tables = universe(variables, kind, args.seed)
        solo, rest = tables[: args.solo], tables[args.solo :]
        pool = tables[: args.pool]
        print(f"{kind}: {len(tables)} tables (pool {len(pool)})", flush=True)
        runs = {  # phase: (clients, seconds, tables each asked once, pool drawn from)
            "solo": (1, 1e9, solo, None),
            "cold": (args.clients, args.duration, rest, None),
            "prewarm": (args.clients, 1e9, pool, None),
            "warm": (args.clients, args.duration, None, pool),
        }
        for phase, (clients, seconds, queue, drawn) in runs.items():
            waited = wait_quiet(pid, args.wait_quiet) if phase in ("cold", "warm") else 0.0
            (results, took), usage = measured(
                pid,
                functools.partial(
                    asyncio.run, run_phase(base, clients, seconds, queue, drawn, args.seed, args.mean, args.client)
                ),
            )
            s = {"kind": kind, "phase": phase, "clients": clients, **summary(results, took), **usage}
            s["waited_for_quiet_seconds"] = round(waited, 1)
            phases[f"{kind}/{phase}"] = s
            print(
                f"  {phase:8s} {s['requests']:6d} req {s['errors']} err {s['refused']} refused  "
                f"p50 {s['p50_ms']} p95 {s['p95_ms']} p99 {s['p99_ms']} ms  {s['qps']} q/s  "
                f"server cpu {s['server_cpu_seconds']} s, client cpu {s['client_cpu_seconds']} s, "
                f"others {s['other_cpu_seconds']} s, "
                f"rss {s['server_peak_rss_mb']} MB, load {s['load_avg_1min']}",
                flush=True,
            )
    return {"universe": {k: len(universe(variables, k, args.seed)) for k in args.kinds}, "phases": phases}


# --- the machine's speed: the engine alone on the same tables, before and after the phases ------------


def yardstick(config: Path, kind: str, seed: int, skip: int, n: int, mean: bool) -> dict[str, Any]:
    """CPU ms per table of the engine alone (one thread, this process) on the first ``n`` cold tables.

    This machine's speed changed by up to 2x within an hour (the same script: 7.3 and 16.5 ms a
    table); timed right before and after the phases, on the tables the cold phase starts with, it
    says how fast the machine was while they ran.
    """
    from cubeguard.tables.describe import describe_variables
    from cubeguard.tables.formats import encode
    from cubeguard.tables.query import TableQuery
    from cubeguard.tables.served import open_served

    engine = open_served(config)
    engine.build_crossings()
    tables = [t for t, _ in universe(describe_variables(engine), kind, seed)][skip : skip + n]
    started = time.process_time()
    for t in tables:
        with_mean = mean and not any(b.startswith("AGE") for b in t)
        encode(engine.answer(TableQuery(breakdowns=list(t), mean="age" if with_mean else None)), "json")
    return {"tables": len(tables), "cpu_ms_per_table": round((time.process_time() - started) / len(tables) * 1000, 2)}


def run_yardstick(args: argparse.Namespace, when: str) -> dict[str, Any] | None:
    """:func:`yardstick` in a process of its own (its memory is gone after), or None if it failed."""
    cmd = [sys.executable, __file__, "--yardstick-only", "--persons", str(args.persons), "--seed", str(args.seed),
           "--solo", str(args.solo), "--yardstick", str(args.yardstick), "--kinds", args.kinds[0]]  # fmt: skip
    if args.mean:
        cmd.append("--mean")
    done = subprocess.run(cmd, cwd=ROOT, env=ckm_env(), capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
        return None
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"yardstick ({when}): engine alone {found['cpu_ms_per_table']} ms a table", flush=True)
    return found


# --- 4. where the time goes (in-process, server stopped) --------------------------------------------


def stages(config: Path, kinds: list[str], seed: int, pool: int, sample: int) -> dict[str, Any]:
    """Each stage of a query timed in this process on ``sample`` pool tables of each kind.

    The stages are those of :meth:`cubeguard.tables.engine.TableEngine.answer` and of the service's
    body: the cells with their margins (summed from a crossing, or tabulated), cube, protection,
    rules, JSON-stat body, query log.
    """
    import tempfile

    import numpy as np

    from cubeguard.audit.queries import QueryLog
    from cubeguard.tables.describe import describe_variables
    from cubeguard.tables.formats import encode, json_stat
    from cubeguard.tables.query import TableQuery
    from cubeguard.tables.rules import check_form, check_values
    from cubeguard.tables.served import open_served

    t0 = time.perf_counter()
    engine = open_served(config)
    opened = time.perf_counter() - t0
    engine.build_crossings()  # as the service does when it starts
    protect, build = engine.protect, json_stat

    def body_of(answer: Any) -> bytes:
        return encode(answer, "json")

    variables = describe_variables(engine)
    tmp = tempfile.TemporaryDirectory(dir=WORK)
    log = QueryLog(f"sqlite:///{tmp.name}/queries.sqlite")
    out: dict[str, Any] = {"open_seconds": round(opened, 2), "records": engine.store.records, "kinds": {}}
    # Warm the numba kernels (compiled once per process, cached on disk) before timing.
    engine.tabulate(TableQuery(breakdowns=["GEO.L", "SEX"]))
    for kind in kinds:
        tables = universe(variables, kind, seed)[:pool]
        chosen = random.Random(f"{seed}-stages-{kind}").sample(tables, min(sample, len(tables)))
        per: dict[str, list[float]] = {}
        cells: list[int] = []
        sizes: list[int] = []
        for table, n in chosen:
            cells.append(n)
            query = TableQuery(breakdowns=list(table))
            bds = [engine.offered[b] for b in table]
            t_all = time.perf_counter()
            with clock(per, "check_form"):
                check_form(query, engine.spec, engine.offered)
            with clock(per, "cells_with_margins"):  # summed from a crossing, or tabulated, margins included
                full_c, full_k, _ = engine._full(query, bds)
            with clock(per, "protect"):
                published = protect(full_c, full_k, engine.store.key_scale)
            with clock(per, "check_values"):
                check_values(published, bds, engine.spec)
            per.setdefault("compute_total", []).append((time.perf_counter() - t_all) * 1000)
            answer = engine.answer(query)  # the engine's own path (cached from here on)
            with clock(per, "cache_hit"):
                engine.answer(query)
            with clock(per, "json_build"):
                build(answer)
            with clock(per, "json_body"):
                sizes.append(len(body_of(answer)))
            with clock(per, "query_log_insert"):
                log.append("127.0.0.1", engine.release_id, query.model_dump(), "answered", None, n)
        out["kinds"][kind] = {
            "tables": len(chosen),
            "cells_median": int(np.median(cells)),
            "cells_max": int(max(cells)),
            "json_kb_median": round(float(np.median(sizes)) / 1024, 1),
            "median_ms": {k: round(float(np.median(v)), 2) for k, v in per.items()},
            "mean_ms": {k: round(float(np.mean(v)), 2) for k, v in per.items()},
            "us_per_cell_json": round(float(np.sum(per["json_body"])) * 1000 / max(sum(cells), 1), 3),
        }
        print(f"  stages {kind}: {out['kinds'][kind]['median_ms']}", file=sys.stderr, flush=True)
    log.close()
    tmp.cleanup()
    return out


# --- 5. results -------------------------------------------------------------------------------------


def verdicts(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets against the measured phases."""
    phases = payload["load"]["phases"]
    out = []
    for phase in ("cold", "warm"):
        s = phases.get(f"4-way/{phase}")
        if s is None:
            continue
        out.append({"target": f"4-way p50 < {TARGET_P50_MS:.0f} ms ({phase})", "measured": s["p50_ms"],
                    "met": s["p50_ms"] is not None and s["p50_ms"] < TARGET_P50_MS})  # fmt: skip
        out.append({"target": f"4-way p95 < {TARGET_P95_MS:.0f} ms ({phase})", "measured": s["p95_ms"],
                    "met": s["p95_ms"] is not None and s["p95_ms"] < TARGET_P95_MS})  # fmt: skip
    errors = sum(s.get("errors", 0) for s in phases.values())
    out.append({"target": "no error (all phases)", "measured": errors, "met": errors == 0})
    return out


def _client_text(args: dict[str, Any]) -> str:
    """How the clients spoke HTTP (results from before ``--client`` used httpx)."""
    if args.get("client", "httpx") == "httpx":
        return "httpx"
    return "HTTP/1.1 on asyncio streams, `RawClient`"


def _yardstick_text(sticks: dict[str, Any], a: dict[str, Any]) -> list[str]:
    """The machine's speed as the engine alone showed it before and after the phases (results from before: none)."""
    before, after = sticks.get("before"), sticks.get("after")
    if not before or not after:
        return []
    return [
        "",
        f"Machine speed (the yardstick, `--yardstick`): the engine alone, one thread in a separate process, answered "
        f"the first {before['tables']} tables of the cold phase{' (with the mean where asked)' if a.get('mean') else ''} "
        f"in {before['cpu_ms_per_table']} ms of CPU a table before the phases and {after['cpu_ms_per_table']} ms after; "
        "this machine's speed varies by up to 2x within an hour, so runs compare only with the yardstick beside them.",
    ]


def markdown(p: dict[str, Any]) -> str:
    m, a = p["machine"], p["args"]
    rel = p.get("release") or {}
    lines = [
        "# Flexible table service under load (`benchmarks/tables_service.py`)",
        "",
        f"EU 2021 programme on its synthetic census of {a['persons']:,} persons; commit {m['commit']}, {m['date']}, "
        f"{m['cpus']} cores, Python {m['python']}. Server: `cubeguard tables` "
        f"({'one uvicorn process' if a.get('workers', 1) == 1 else str(a['workers']) + ' uvicorn worker processes'}), clients: "
        f"{a['clients']} asyncio clients ({_client_text(a)}) in the benchmark process on the same 2 cores, one keep-alive "
        f"connection each, back to back. Tables: a geography ({' or '.join(GEOGRAPHIES)}) and 1, 2 or 3 distinct "
        "variables from the offered breakdowns, in a seeded order; population total, JSON. No data rules are set, "
        "so every table is answered in full.",
        "",
        f"Release{' (reused, run ' + str(rel.get('date')) + ')' if rel.get('reused') else ''}: "
        f"`{rel.get('command', '(skipped)')}`: {rel.get('seconds', '?')} s, CPU {rel.get('cpu_seconds', '?')} s, "
        f"peak RSS {rel.get('peak_rss_mb', '?')} MB. Service start-up until `/api/release` answers: "
        f"{p['server']['startup_seconds']} s; its {p['server'].get('crossings', 0)} finest crossings "
        f"(tables.precompute_cells) tabulated after {p['server'].get('crossings_seconds', '-')} s, before the phases; "
        f"server peak RSS (VmHWM) {p['server']['vm_hwm_mb']} MB, "
        f"CPU {p['server']['cpu_seconds']} s over the run.",
        *_yardstick_text(p.get("yardstick") or {}, a),
        "",
        "Phases: **solo** one client, the first tables of the order (service time of a cold table, no queueing); "
        "**cold** all clients, each query a table never asked before (summed from a crossing or tabulated, margins, noise, rules) until the "
        f"tables of the kind run out or {a['duration']:g} s pass; **warm** all clients drawing for {a['duration']:g} s "
        f"from a pool of {a['pool']} tables (or all of the kind, if fewer) that the service has cached as far as its "
        "caches hold them (the pool is asked once before, in the prewarm phase). Latencies in ms, from sending the request until the body is read.",
        "",
        "| kind | phase | clients | requests | distinct tables | refused | errors | p50 | p95 | p99 | max | q/s | "
        "median cells | max cells | MB received | server CPU s | client CPU s | other processes' CPU s | "
        "server peak RSS MB | load (1 min) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    ping = p["load"]["phases"].get("-/ping")
    for s in p["load"]["phases"].values():
        if s["phase"] == "ping":
            continue
        lines.append(
            f"| {s['kind']} | {s['phase']} | {s['clients']} | {s['requests']:,} | {s['distinct_tables']:,} | "
            f"{s['refused']} | {s['errors']} | {s['p50_ms']} | {s['p95_ms']} | {s['p99_ms']} | {s['max_ms']} | "
            f"{s['qps']} | {s['cells_median']:,} | {s['cells_max']:,} | {s['mb_received']} | "
            f"{s['server_cpu_seconds']} | {s['client_cpu_seconds']} | {s.get('other_cpu_seconds', '')} | "
            f"{s['server_peak_rss_mb']:,} | "
            f"{s.get('load_avg_1min', '')} |"
        )
    if ping:
        lines += ["", f"HTTP alone (one client, {ping['requests']} x `GET /api/release`, no table and no query log): "
                  f"p50 {ping['p50_ms']} ms, p95 {ping['p95_ms']} ms."]  # fmt: skip
    lines += ["", "Median latency (ms) by table size (cells, totals included), cold and warm phases:", ""]
    buckets = [f"<{b:,}" for b in CELL_BUCKETS] + [f">={CELL_BUCKETS[-1]:,}"]
    lines += ["| kind | phase | " + " | ".join(buckets) + " |", "|---|---|" + "---:|" * len(buckets)]
    for s in p["load"]["phases"].values():
        if s["phase"] in ("cold", "warm"):
            cell = [s["p50_ms_by_cells"].get(b) for b in buckets]
            lines.append(f"| {s['kind']} | {s['phase']} | " + " | ".join(
                f"{c['p50_ms']} ({c['requests']})" if c else "" for c in cell) + " |")  # fmt: skip
    lines += ["", "## Targets", "", "| target | measured | met |", "|---|---:|---|"]
    for v in p["verdicts"]:
        lines.append(f"| {v['target']} | {v['measured']} | {'yes' if v['met'] else '**no**'} |")
    for variant, st in (p.get("stages") or {}).items():
        names = ["check_form", "cells_with_margins", "protect",
                 "check_values", "compute_total", "cache_hit", "json_build", "json_body", "query_log_insert"]  # fmt: skip
        lines += ["", f"## Where the time goes ({variant})", ""]
        if variant == "default":
            lines += [
                f"One thread in a separate process (before the server starts), the release opened in-process "
                f"({st['open_seconds']} s, {st['records']:,} records); median ms per query over a sample of each "
                "kind's pool, with the service's crossings tabulated first. `compute_total` is what a cold table costs "
                "before its answer is cached (`cells_with_margins`: counts and key sums with every total, summed "
                "from a crossing or tabulated; the release's protection on the arrays, value rules); `json_build` "
                "is the body as Python objects, `json_body` the body's bytes as the service makes them (building "
                "included); `query_log_insert` one logged query (SQLite, one writer, committed before the answer "
                "is sent).",
                "",
            ]
        else:
            lines += [f"The same, with `{variant}` in the environment.", ""]
        lines += [
            "| stage | " + " | ".join(f"{k} (median {v['cells_median']:,} cells)" for k, v in st["kinds"].items()) + " |",
            "|---|" + "---:|" * len(st["kinds"]),
        ]  # fmt: skip
        for n in names:
            lines.append(f"| {n} | " + " | ".join(str(v["median_ms"].get(n, "")) for v in st["kinds"].values()) + " |")
        lines.append("| µs per cell, JSON body | " + " | ".join(
            str(v["us_per_cell_json"]) for v in st["kinds"].values()) + " |")  # fmt: skip
        lines.append("| JSON body KB (median) | " + " | ".join(
            str(v["json_kb_median"]) for v in st["kinds"].values()) + " |")  # fmt: skip
    if p.get("code_changed_during_run"):
        lines += ["", "**The code under test changed during the run** (`git diff --stat` against the start commit): "
                  + "; ".join(p["code_changed_during_run"])]  # fmt: skip
    if p.get("notes"):
        lines += ["", "## Notes", "", p["notes"]]
    return "\n".join(lines) + "\n"


CODE = ["cubeguard", "service", "cli", "flows", "tasks"]


def code_diff(since: str, stat: bool = False) -> str:
    """The code under test against commit ``since`` (working tree included: others edit it meanwhile)."""
    cmd = ["git", "diff", *(["--stat"] if stat else []), since, "--", *CODE]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT).stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--persons", type=int, default=10_000_000)
    ap.add_argument("--skip-release", action="store_true", help="Reuse the config and release of an earlier run.")
    ap.add_argument("--duration", type=float, default=60.0, help="Seconds of the cold and of the warm phase per kind.")
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument(
        "--workers", type=int, default=1, help="Worker processes of the service (cubeguard tables --workers)."
    )
    ap.add_argument("--pool", type=int, default=200, help="Tables of the warm phase's pool, per kind.")
    ap.add_argument("--solo", type=int, default=8, help="Tables asked by one client alone, per kind.")
    ap.add_argument("--stage-sample", type=int, default=30, help="Tables per kind timed stage by stage (0: none).")
    ap.add_argument("--kinds", nargs="+", default=list(KINDS), choices=list(KINDS))
    ap.add_argument("--seed", type=int, default=2021)
    ap.add_argument("--mean", action="store_true", help="Ask every table not crossing AGE with the mean age.")
    ap.add_argument("--client", choices=["raw", "httpx"], default="raw",
                    help="The clients' HTTP: asyncio streams (lean), or httpx as before 2026-11-28.")  # fmt: skip
    ap.add_argument("--wait-quiet", type=float, default=600.0, help="Most seconds to wait before a cold or warm "
                    "phase for other processes to leave the CPUs (0: do not wait).")  # fmt: skip
    ap.add_argument("--results-dir", type=Path, default=RESULTS)
    ap.add_argument("--name", default="tables_service", help="Result file name (without extension).")
    ap.add_argument("--notes", default="", help="Text for the Notes section of the markdown.")
    ap.add_argument("--render", action="store_true", help="Only rewrite the .md (and notes) from the .json.")
    ap.add_argument("--stages-only", action="store_true", help=argparse.SUPPRESS)  # internal: step 4, JSON out
    ap.add_argument("--yardstick", type=int, default=100, help="Cold tables the engine alone answers before and "
                    "after the phases, as a measure of the machine's speed (0: none).")  # fmt: skip
    ap.add_argument("--yardstick-only", action="store_true", help=argparse.SUPPRESS)  # internal: JSON out
    args = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    if args.render:
        write(json.loads((args.results_dir / f"{args.name}.json").read_text()), args)
        return
    config = config_path(args.persons)
    if args.yardstick_only:
        os.environ.update({k: v for k, v in ckm_env().items() if k.startswith("CUBEGUARD_CKM")})
        print(json.dumps(yardstick(config, args.kinds[0], args.seed, args.solo, args.yardstick, args.mean)))
        return
    if args.stages_only:
        os.environ.update({k: v for k, v in ckm_env().items() if k.startswith("CUBEGUARD_CKM")})
        print(json.dumps(stages(config, args.kinds, args.seed, args.pool, args.stage_sample)))
        return
    started = machine()
    diff_at_start = code_diff(started["commit"])
    if args.skip_release:
        if not config.exists():
            raise SystemExit(f"{config} does not exist; run without --skip-release first")
        done = WORK / f"release_{args.persons}.json"
        rel = {**json.loads(done.read_text()), "reused": True} if done.exists() else None
    else:
        rel = release(args.persons)
        print(f"release: {rel['seconds']} s, peak {rel['peak_rss_mb']} MB", flush=True)
    profiled: dict[str, Any] = {}
    if args.stage_sample:  # before the load, so both see the same code (others edit the tree meanwhile)
        for variant, extra in STAGE_VARIANTS.items():
            cmd = [sys.executable, __file__, "--stages-only", "--persons", str(args.persons), "--pool", str(args.pool),
                   "--stage-sample", str(args.stage_sample), "--seed", str(args.seed), "--kinds", *args.kinds]  # fmt: skip
            print(f"stages ({variant}) ...", flush=True)
            wait_quiet(os.getpid(), args.wait_quiet)
            done_stages = subprocess.run(cmd, cwd=ROOT, env={**ckm_env(), **extra}, capture_output=True, text=True)
            if done_stages.returncode == 0:
                profiled[variant] = json.loads(done_stages.stdout.strip().splitlines()[-1])
                for kind, k in profiled[variant]["kinds"].items():
                    print(f"  {kind}: {k['median_ms']}", flush=True)
            else:
                print(done_stages.stderr[-3000:], file=sys.stderr)
    port = free_port()
    with server(config, port, WORK / f"server_{args.persons}.log", args.workers) as (proc, startup):
        print(f"service answering after {startup:.1f} s (pid {proc.pid})", flush=True)
        crossings, precomputed = wait_precomputed(f"http://127.0.0.1:{port}", time.perf_counter() - startup)
        print(f"{crossings} finest crossings tabulated after {precomputed:.1f} s", flush=True)
        sticks = {"before": run_yardstick(args, "before") if args.yardstick else None}
        loaded = load(f"http://127.0.0.1:{port}", proc.pid, args)
        sticks["after"] = run_yardstick(args, "after") if args.yardstick else None
        srv = {
            "command": f"cubeguard tables {config.relative_to(ROOT)} --port {port}"
            + (f" --workers {args.workers}" if args.workers > 1 else ""),
            "startup_seconds": round(startup, 1),
            "crossings": crossings,
            "crossings_seconds": round(precomputed, 1),
            "vm_hwm_mb": vm_hwm_mb(proc.pid),
            "cpu_seconds": round(tree_cpu(proc.pid), 1),
        }
    payload: dict[str, Any] = {
        "machine": started,
        "code_changed_during_run": [
            line.strip() for line in code_diff(started["commit"], stat=True).splitlines() if line.strip()
        ]
        if code_diff(started["commit"]) != diff_at_start
        else [],
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "offered": OFFERED,
        "release": rel,
        "server": srv,
        "load": loaded,
        "stages": profiled,
        "yardstick": sticks,
    }
    write(payload, args)


def write(payload: dict[str, Any], args: argparse.Namespace) -> None:
    """The verdicts, then results/<name>.json and .md."""
    payload["verdicts"] = verdicts(payload)
    payload["notes"] = args.notes or payload.get("notes", "")
    args.results_dir.mkdir(parents=True, exist_ok=True)
    (args.results_dir / f"{args.name}.json").write_text(json.dumps(payload, indent=2) + "\n")
    md = args.results_dir / f"{args.name}.md"
    md.write_text(markdown(payload))
    print(f"wrote {md}")
    for v in payload["verdicts"]:
        print(f"  {v['target']}: {v['measured']} -> {'met' if v['met'] else 'NOT met'}")


if __name__ == "__main__":
    main()

"""Where a new served table's CPU goes: the engine alone, against the same tables asked over HTTP.

Run: ``.venv/bin/python benchmarks/tables_overhead.py [--tables 400] [--rounds 3]`` after
``benchmarks/tables_service.py`` has written its 10M-person release (``work/bench-tables``).

One process opens the release as ``cubeguard tables`` serves it (allocator tuned, objects frozen,
crossings mapped) and serves it with uvicorn in a thread. Per round, alternating which goes first:

* **engine**: the first ``--tables`` 4-way mean tables of the benchmark's order (those not crossing
  AGE), answered and written as JSON by two threads (the service computes two at a time);
* **served**: the same tables asked by 20 clients on asyncio streams from another process, each
  answer passing the rate limit, the query log and uvicorn as in the service.

Caches are emptied before each. Per phase: this process's CPU per table and its threads' context
switches per table (``/proc/<pid>/task/*/status``), so machines of different speed compare by the
difference. Writes ``benchmarks/results/tables_overhead.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._measure import machine, write_results
from benchmarks.tables_service import ckm_env, config_path, universe

CLIENT = """
import asyncio, json, sys
from benchmarks.tables_service import RawClient
port, tables = int(sys.argv[1]), json.loads(sys.stdin.read())
todo = iter(tables)
async def one():
    client = RawClient(f"http://127.0.0.1:{port}")
    for t in todo:
        status, body = await client.get("/api/table", {"breakdowns": ",".join(t), "mean": "age", "format": "json"})
        assert status == 200, body[:300]
    await client.close()
async def main():
    await asyncio.gather(*(one() for _ in range(20)))
asyncio.run(main())
"""


def switches() -> int:
    """Context switches of this process's threads so far (voluntary and not)."""
    total = 0
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            lines = (task / "status").read_text().splitlines()
        except OSError:  # a thread that ended meanwhile
            continue
        total += sum(int(line.split()[1]) for line in lines if "ctxt_switches" in line)
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--persons", type=int, default=10_000_000)
    ap.add_argument("--tables", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    os.environ.update(ckm_env())
    from service.memory import reuse_freed_memory

    reuse_freed_memory()  # as cubeguard tables does, before any thread
    import uvicorn

    from cubeguard.tables.describe import describe_variables
    from cubeguard.tables.formats import encode
    from cubeguard.tables.query import TableQuery
    from service.app import create_app

    app = create_app(config_path(args.persons), precompute=False, freeze=True)
    service, started = app.state.service, machine()
    engine = service.engine
    engine.build_crossings()
    tables = [t for t, _ in universe(describe_variables(engine), "4-way", 2021) if not any("AGE" in b for b in t)]
    tables = tables[: args.tables]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.1)
    port = server.servers[0].sockets[0].getsockname()[1]

    def in_engine() -> None:
        def answer(part: list[tuple[str, ...]]) -> None:
            for t in part:
                encode(engine.answer(TableQuery(breakdowns=list(t), mean="age")), "json")

        threads = [threading.Thread(target=answer, args=(tables[k::2],)) for k in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()

    def over_http() -> None:
        cmd = [sys.executable, "-c", CLIENT, str(port)]
        subprocess.run(cmd, input=json.dumps(tables), text=True, check=True, cwd=Path(__file__).parents[1])

    phases = {"engine": in_engine, "served": over_http}
    over_http()  # once before: crossings' pages mapped, code compiled
    rows: list[dict[str, Any]] = []
    for r in range(args.rounds):
        for name in sorted(phases, reverse=r % 2 == 1):
            engine._cache.clear()
            engine._cached_cells = 0
            with service._lock:
                service._bytes.clear()
                service._size = 0
            s0, c0, w0 = switches(), time.process_time(), time.perf_counter()
            phases[name]()
            cpu, wall, moved = time.process_time() - c0, time.perf_counter() - w0, switches() - s0
            n = len(tables)
            rows.append({"round": r, "phase": name, "tables": n, "cpu_ms_per_table": round(cpu / n * 1000, 2),
                         "wall_s": round(wall, 2), "switches_per_table": round(moved / n, 1)})  # fmt: skip
            print(rows[-1], flush=True)
    server.should_exit = True
    write_results("tables_overhead", {"machine": started, "args": vars(args), "rows": rows}, markdown)


def markdown(p: dict[str, Any]) -> str:
    m, a = p["machine"], p["args"]
    lines = [
        "# Where a new served table's CPU goes (`benchmarks/tables_overhead.py`)",
        "",
        f"EU 2021 programme at {a['persons']:,} persons; commit {m['commit']}, {m['date']}, {m['cpus']} cores, "
        f"Python {m['python']}. The first {a['tables']} new 4-way tables with the mean age, answered by the engine "
        "from two threads (engine), and asked over HTTP by 20 clients of another process from the same "
        "process's server (served), caches emptied before each; CPU and context switches of the server process.",
        "",
        "| round | phase | tables | CPU ms per table | wall s | context switches per table |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for row in p["rows"]:
        lines.append(f"| {row['round']} | {row['phase']} | {row['tables']} | {row['cpu_ms_per_table']} | "
                     f"{row['wall_s']} | {row['switches_per_table']} |")  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    main()

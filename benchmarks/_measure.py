"""Shared benchmark helpers: wall time and peak resident memory of a stage, results on disk."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def rss_bytes() -> int:
    """Current resident set size of this process."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@contextmanager
def stage(record: dict[str, Any], name: str) -> Iterator[None]:
    """Time a stage and sample its peak RSS every 20 ms into ``record[name]``."""
    peak = [rss_bytes()]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.02):
            peak[0] = max(peak[0], rss_bytes())

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        yield
    finally:
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        stop.set()
        t.join()
        record[name] = {
            "seconds": round(seconds, 3),
            "cpu_seconds": round(cpu, 3),
            "load_avg_1min": round(os.getloadavg()[0], 2),
            "peak_rss_mb": round(max(peak[0], rss_bytes()) / 2**20, 1),
        }


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "commit": commit,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def write_results(name: str, payload: dict[str, Any], markdown: Callable[[dict[str, Any]], str]) -> Path:
    """Write ``results/<name>.json`` and ``results/<name>.md``."""
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(payload, indent=2) + "\n")
    md = RESULTS / f"{name}.md"
    md.write_text(markdown(payload) + "\n")
    return md

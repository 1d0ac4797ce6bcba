"""Whole releases from a fresh process, as a production team runs them: wall, CPU and memory per step.

Run: ``uv run python benchmarks/release.py [--persons 1000000 10000000 40000000] [--small N] [--cluster N]``

- The EU 2021 programme (``configs/eu2021.yaml``, 119 cubes) at each ``--persons`` size, with
  Parquet exports: ``cubeguard release`` in a new process, its synthetic census (the config's
  seed and geography) generated beforehand, so the timed run is validate to publish. The process tree
  (the command, its Prefect server, any Dask workers) is sampled every 0.1 s; the release's own
  ``internal/timings.json`` says when each step began and ended, so every reading is given to a
  step. The growth from the smallest to the largest size is set against this machine's memory
  bandwidth (a numpy copy of 1 GiB): the time to stream the microdata's columns once at that speed.
- ``--small N``: ``configs/censusprotection-swap.yaml`` (30,578 persons, 4 cubes), N runs from the
  command to the published release (target: under 10 s).
- ``--cluster N``: a ``dask scheduler`` and two ``dask worker`` processes on 127.0.0.1, the
  programme at N persons released through ``--dask-address``, and its published files compared
  with the single-process run's at the same size.

Targets (issue 18, 2 cores): 10M persons under 90 s and 4 GB peak; 40M within 24 GB.
Results: ``benchmarks/results/release.{json,md}``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._measure import RESULTS, machine, write_results

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "benchmarks" / "work" / "release"
PROGRAMME = ROOT / "configs" / "eu2021.yaml"
SMALL = ROOT / "configs" / "censusprotection-swap.yaml"
TARGETS = {10_000_000: (90.0, 4096.0), 40_000_000: (None, 24576.0)}  # seconds, peak MB


class TreeSampler:
    """RSS of a process and all its descendants, read every 0.1 s: (unix time, MB) pairs."""

    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _rss(self) -> float:
        total = 0
        for proc in [self.root, *self.root.children(recursive=True)]:
            try:
                total += proc.memory_info().rss
            except psutil.Error:
                continue
        return total / 2**20

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            try:
                self.samples.append((time.time(), self._rss()))
            except psutil.Error:
                return

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def peak(self, start: float = 0.0, end: float = float("inf")) -> float:
        inside = [mb for t, mb in self.samples if start <= t <= end]
        return round(max(inside), 1) if inside else 0.0


def release(config: Path, folder: Path, persons: int | None, *extra: str) -> dict[str, Any]:
    """``cubeguard release`` in a new process; wall, CPU of the tree, peak RSS overall and per step."""
    sets = ["--set", f"output.folder={folder}", "--set", "output.exports=[parquet]"]
    if persons:  # each size its own synthetic census, in its own folder
        sets += ["--set", f"input.synthetic.persons={persons}", "--set", f"input.microdata={folder}/persons.parquet"]
    env = {**os.environ, "CUBEGUARD_CKM_D": os.environ.get("CUBEGUARD_CKM_D", "5"),
           "CUBEGUARD_CKM_V": os.environ.get("CUBEGUARD_CKM_V", "3"), "PREFECT_HOME": str(WORK / ".prefect")}  # fmt: skip
    env.pop("PREFECT_API_URL", None)
    command = [str(ROOT / ".venv" / "bin" / "cubeguard"), "release", str(config), *sets, "--fresh", *extra]
    t0 = time.time()
    proc = psutil.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with TreeSampler(proc.pid) as sampler:
        _, err = proc.communicate()
    wall = time.time() - t0
    if proc.returncode != 0:
        raise SystemExit(f"release failed ({proc.returncode}): {err.decode()[-2000:]}")
    steps = json.loads((folder / "internal" / "timings.json").read_text())
    for row in steps:
        row["peak_rss_mb"] = sampler.peak(row["started"], row["started"] + row["seconds"])
    first = min(r["started"] for r in steps)
    return {
        "wall_seconds": round(wall, 2),
        "before_first_step_seconds": round(first - t0, 2),
        "peak_rss_mb": sampler.peak(),
        "steps": steps,
    }


def children_cpu() -> float:
    """CPU seconds of every finished child of this process so far (user + system)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_release(config: Path, folder: Path, persons: int | None, *extra: str) -> dict[str, Any]:
    """One release, with the CPU seconds of its process tree."""
    c0 = children_cpu()
    run = release(config, folder, persons, *extra)
    run["cpu_seconds"] = round(children_cpu() - c0, 2)
    run["commit"] = machine()["commit"]
    return run


def bandwidth_gib_s() -> float:
    """This machine's copy bandwidth: the best of five numpy copies of 1 GiB (read + write counted)."""
    src = np.ones(2**27, dtype=np.float64)
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    return 2 * src.nbytes / 2**30 / best


def microdata_bytes(folder: Path) -> int:
    """Bytes of the synthetic census's columns in memory (what one pass over the records streams)."""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(folder / "persons.parquet").metadata
    rows = meta.num_rows
    return int(rows * sum(_width(meta.schema.column(i).physical_type) for i in range(meta.num_columns)))


def _width(physical: str) -> int:
    return {"INT32": 4, "INT64": 8, "FLOAT": 4, "DOUBLE": 8, "BOOLEAN": 1}.get(physical, 8)


def published_checksums(folder: Path) -> dict[str, str]:
    (release_dir,) = [p for p in (folder / "published").iterdir() if p.is_dir() and not p.name.startswith(".")]
    return {
        p.relative_to(release_dir).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(release_dir.rglob("*"))
        if p.is_file() and p.name != "manifest.json"
    }


def programme(persons: int) -> dict[str, Any]:
    folder = WORK / f"eu2021-{persons}"
    subprocess.run(["rm", "-rf", str(folder)], check=True)
    print(f"{persons:,} persons: synthetic census ...", flush=True)
    folder.mkdir(parents=True)
    t0 = time.perf_counter()
    make = (
        "from pathlib import Path; from cubeguard.synth import generate; "
        f"generate({persons}, 2021, Path({str(folder)!r}), geography='national')"
    )
    subprocess.run([sys.executable, "-c", make], check=True, cwd=ROOT)
    synth_seconds = round(time.perf_counter() - t0, 2)
    print(f"  {synth_seconds} s; release ...", flush=True)
    run = timed_release(PROGRAMME, folder, persons)
    run["synthetic_census_seconds"] = synth_seconds
    run["microdata_bytes"] = microdata_bytes(folder)
    print(f"  {run['wall_seconds']} s, peak {run['peak_rss_mb']} MB", flush=True)
    return run


def cluster(persons: int) -> dict[str, Any]:
    """The programme through a scheduler and two worker processes; files compared with one process's."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    dask = [sys.executable, "-m", "dask"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    # The programme's D and V are environment references: the workers protect cubes, so they resolve them.
    env.update({"CUBEGUARD_CKM_D": os.environ.get("CUBEGUARD_CKM_D", "5"),
                "CUBEGUARD_CKM_V": os.environ.get("CUBEGUARD_CKM_V", "3")})  # fmt: skip
    procs = [subprocess.Popen([*dask, "scheduler", "--host", "127.0.0.1", "--port", str(port),
                               "--dashboard-address", ":0"], env=env, stderr=subprocess.DEVNULL)]  # fmt: skip
    time.sleep(2)
    procs += [subprocess.Popen([*dask, "worker", address, "--nthreads", "1", "--nworkers", "1",
                                "--dashboard-address", ":0"], env=env, stderr=subprocess.DEVNULL)
              for _ in range(2)]  # fmt: skip
    try:
        from distributed import Client

        with Client(address, timeout=120) as client:
            client.wait_for_workers(2, timeout=120)
        single, on_cluster = WORK / f"eu2021-{persons}", WORK / f"eu2021-{persons}-cluster"
        subprocess.run(["rm", "-rf", str(on_cluster)], check=True)
        on_cluster.mkdir(parents=True)
        os.link(single / "persons.parquet", on_cluster / "persons.parquet")  # the same synthetic census
        run = timed_release(PROGRAMME, on_cluster, persons, "--dask-address", address)
        same = published_checksums(single) == published_checksums(on_cluster)
        run["files"] = len(published_checksums(on_cluster))
        run["identical_to_single_process"] = same
        return run
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)


def small(runs: int) -> list[dict[str, Any]]:
    folder = WORK / "censusprotection-swap"
    return [timed_release(SMALL, folder, None) for _ in range(runs)]


def _step_cell(step: dict[str, Any]) -> str:
    return f"{step['seconds']:.1f} / {step['cpu_seconds']:.1f} / {step['peak_rss_mb']:,.0f}"


def markdown(payload: dict[str, Any]) -> str:
    m = payload["machine"]
    lines = [
        "# Whole releases (`benchmarks/release.py`)",
        "",
        f"{m['cpus']} cores, Python {m['python']}, commit {m['commit']}, {m['date']}. Each run is "
        "`cubeguard release CONFIG --fresh` in a new process (ephemeral Prefect server included); "
        "peak RSS is the whole process tree's, sampled every 0.1 s.",
        "",
        f"Memory bandwidth here (numpy copy of 1 GiB): {payload['bandwidth_gib_s']:.1f} GiB/s.",
        "",
        "## The EU 2021 programme (119 cubes, Parquet exports), from the command to the published release",
        "",
        "| persons | wall s | CPU s | peak RSS MB | target | before the first step s | synthetic census (not timed) s | commit |",
        "| ---: | ---: | ---: | ---: | --- | ---: | ---: | --- |",
    ]
    for persons, run in payload["programme"].items():
        seconds, mb = TARGETS.get(int(persons), (None, None))
        verdict = []
        if seconds:
            verdict.append(f"{'met' if run['wall_seconds'] < seconds else 'NOT met'}: < {seconds:.0f} s")
        if mb:
            verdict.append(f"{'met' if run['peak_rss_mb'] < mb else 'NOT met'}: < {mb / 1024:.0f} GB")
        lines.append(
            f"| {int(persons):,} | {run['wall_seconds']} | {run['cpu_seconds']} | {run['peak_rss_mb']:,.0f} | "
            f"{'; '.join(verdict) or '-'} | {run['before_first_step_seconds']} | {run['synthetic_census_seconds']} | {run.get('commit', '-')} |"
        )
    lines += ["", "Per step (wall s / CPU s of the release process / peak RSS MB of the tree):", ""]
    runs = sorted(payload["programme"].values(), key=lambda run: -len(run["steps"]))  # the most steps first
    names = list(dict.fromkeys(r["step"] for run in runs for r in run["steps"]))
    lines.append("| persons | " + " | ".join(names) + " |")
    lines.append("| ---: |" + " ---: |" * len(names))
    for persons, run in payload["programme"].items():
        by_step = {r["step"]: r for r in run["steps"]}  # a step the run's commit did not have: "-"
        cells = [_step_cell(by_step[name]) if name in by_step else "-" for name in names]
        lines.append(f"| {int(persons):,} | " + " | ".join(cells) + " |")
    sizes = sorted(payload["programme"], key=int)
    if len(sizes) > 1:
        lo, hi = payload["programme"][sizes[0]], payload["programme"][sizes[-1]]
        ratio = int(sizes[-1]) / int(sizes[0])
        stream = [payload["programme"][s]["microdata_bytes"] / 2**30 / payload["bandwidth_gib_s"] for s in sizes]
        lines += [
            "",
            f"Growth from {int(sizes[0]):,} to {int(sizes[-1]):,} persons ({ratio:.0f}x the records): wall "
            f"{hi['wall_seconds'] / lo['wall_seconds']:.1f}x, CPU {hi['cpu_seconds'] / lo['cpu_seconds']:.1f}x, "
            f"peak RSS {hi['peak_rss_mb'] / lo['peak_rss_mb']:.1f}x. Streaming the microdata's columns once at "
            f"the machine's bandwidth takes {stream[0]:.3f} s and {stream[-1]:.3f} s: the release costs "
            f"{lo['wall_seconds'] / stream[0]:,.0f} and {hi['wall_seconds'] / stream[-1]:,.0f} such passes.",
        ]
    if payload.get("cluster"):
        c = payload["cluster"]
        lines += [
            "",
            "## A Dask cluster of separate processes",
            "",
            f"`dask scheduler` and two `dask worker` processes (1 thread each) on 127.0.0.1, the programme at "
            f"{int(c['persons']):,} persons through `--dask-address`: {c['wall_seconds']} s wall, peak "
            f"{c['peak_rss_mb']:,.0f} MB for the release's tree (workers are not its children). Published files: "
            f"{c['files']}, identical to the single-process run: **{c['identical_to_single_process']}** "
            f"(commit {c.get('commit', '-')}).",
        ]
    if payload.get("small"):
        walls = [r["wall_seconds"] for r in payload["small"]]
        lines += [
            "",
            "## A small release: `configs/censusprotection-swap.yaml` (30,578 persons, 4 cubes)",
            "",
            f"From the command to the published release, {len(walls)} runs at commit "
            f"{payload['small'][0].get('commit', '-')}: {', '.join(map(str, walls))} s "
            f"(median {sorted(walls)[len(walls) // 2]} s; target under 10 s: "
            f"{'met' if sorted(walls)[len(walls) // 2] < 10 else 'NOT met'}).",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--persons", type=int, nargs="*", default=[1_000_000, 10_000_000, 40_000_000])
    parser.add_argument("--small", type=int, default=5, help="Runs of the small release (0: none).")
    parser.add_argument("--cluster", type=int, default=0, help="Persons for the Dask cluster run (0: none).")
    parser.add_argument("--merge", action="store_true", help="Keep the earlier results of parts not run now.")
    parser.add_argument("--render", action="store_true", help="Only rewrite release.md from release.json.")
    args = parser.parse_args()
    if args.render:
        print(write_results("release", json.loads((RESULTS / "release.json").read_text()), markdown).read_text())
        return
    WORK.mkdir(parents=True, exist_ok=True)
    earlier = json.loads((RESULTS / "release.json").read_text()) if args.merge else {}
    payload: dict[str, Any] = {**earlier, "machine": machine(), "bandwidth_gib_s": round(bandwidth_gib_s(), 2)}
    payload["small"] = small(args.small) if args.small else earlier.get("small", [])
    payload["programme"] = {**earlier.get("programme", {}), **{str(n): programme(n) for n in args.persons}}
    write_results("release", payload, markdown)  # kept should the cluster run fail
    if args.cluster:
        if str(args.cluster) not in payload["programme"]:
            payload["programme"][str(args.cluster)] = programme(args.cluster)
        payload["cluster"] = {"persons": args.cluster, **cluster(args.cluster)}
    print(write_results("release", payload, markdown).read_text())


if __name__ == "__main__":
    main()

"""Benchmark: synth + validate + tabulate (+ write Zarr) over a whole release programme.

    uv run python benchmarks/tabulate.py --persons 1000000 10000000 [--config configs/eu2021.yaml]

Each population size runs in a fresh process so its peak memory is its own. Targets (issue 3, 2 cores,
10M persons): synth < 60 s, validation < 30 s, tabulation of the programme < 60 s, peak < 4 GB;
40M persons within 24 GB. Results: benchmarks/results/tabulate.{json,md}.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._measure import machine, stage, write_results


def run_one(persons: int, config: str, workdir: Path, geography: str) -> dict[str, Any]:
    """All stages for one population size, in this process."""
    from cubeguard.config import load_release
    from cubeguard.pipeline.tabulation import tabulate_release, write_tabulation
    from cubeguard.synth import generate
    from schemas.validate import validate_microdata

    rec: dict[str, Any] = {"persons": persons}
    with stage(rec, "synth"):
        generate(persons, 2021, workdir, geography=geography)  # type: ignore[arg-type]
    release = load_release(config)
    cfg = release.config
    cfg = cfg.model_copy(update={"input": cfg.input.model_copy(update={"microdata": workdir / "persons.parquet"})})
    release = dataclasses.replace(release, config=cfg)
    with stage(rec, "validate"):
        validate_microdata(release, workdir / "validation.json")
    with stage(rec, "tabulate"):
        tab = tabulate_release(release)
    with stage(rec, "write_zarr"):
        summaries = write_tabulation(release, tab, workdir / "cubes.zarr")
    rec["cubes"] = len(summaries)
    rec["cells"] = sum(s.cells for s in summaries)
    rec["bottom_cells"] = sum(s.bottom_cells for s in summaries)
    for name in ("synth", "validate", "tabulate"):
        rec[name]["persons_per_s"] = round(persons / max(rec[name]["seconds"], 1e-9))
    return rec


def markdown(payload: dict[str, Any]) -> str:
    """The results as a Markdown table: wall seconds with CPU seconds in brackets, and the load."""
    m = payload["machine"]
    stages = ("synth", "validate", "tabulate", "write_zarr")
    lines = [
        f"# Tabulation benchmark ({payload['config']})",
        "",
        f"{m['date']}, {m['cpus']} cores, Python {m['python']}, commit {m['commit']}.",
        "Wall seconds (CPU seconds); load = highest 1-minute load average over the stages (2 cores: above ~2",
        "other processes competed for the cores).",
        "",
        "| persons | cubes | cells | synth | validate | tabulate | write Zarr | tabulate persons/s | peak RSS MB | load |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in payload["runs"]:
        peak = max(r[s]["peak_rss_mb"] for s in stages)
        load = max(r[s].get("load_avg_1min", float("nan")) for s in stages)
        cells = " | ".join(f"{r[s]['seconds']} ({r[s].get('cpu_seconds', '-')})" for s in stages)
        lines.append(
            f"| {r['persons']:,} | {r['cubes']} | {r['cells']:,} | {cells} | "
            f"{r['tabulate']['persons_per_s']:,} | {peak:,.0f} | {load} |"
        )
    lines += [
        "",
        "Targets at 10M persons on 2 cores: synth < 60 s, validation < 30 s, tabulation < 60 s, peak < 4 GB;",
        "40M persons within 24 GB.",
    ]
    if payload.get("note"):
        lines += ["", payload["note"]]
    return "\n".join(lines)


def main() -> None:
    """Run each population size in a child process and write the results."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--persons", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--config", default="configs/eu2021.yaml")
    ap.add_argument("--geography", default="national")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(run_one(args.persons[0], args.config, Path(tmp), args.geography)))
        return
    runs = []
    for n in args.persons:
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                "--persons",
                str(n),
                "--config",
                args.config,
                "--geography",
                args.geography,
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(json.dumps(runs[-1]))
    md = write_results("tabulate", {"config": args.config, "machine": machine(), "runs": runs}, markdown)
    print(md.read_text())


if __name__ == "__main__":
    main()

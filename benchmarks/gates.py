"""The release's gate step alone, on stores a release left behind: before/after the core gates (issue 11).

Make the inputs once (the EU programme at 10M persons; D and V are the demo values)::

    CUBEGUARD_CKM_D=5 CUBEGUARD_CKM_V=3 cubeguard release configs/eu2021.yaml \\
        --set input.synthetic.persons=10000000 --set output.folder=/work/bench-eu10m \\
        --set input.microdata=/work/bench-eu10m/persons.parquet

Then time the gate step (what ``tasks/release.py::_gate`` runs: ``run_gates(cube_pairs(release),
measures, gates, docs_dir)``) of one code version, in a fresh process, imports done before the clock
starts; ``PYTHONPATH`` picks the version (e.g. ``git archive dbedf05`` unpacked elsewhere)::

    python benchmarks/gates.py run --label before --folder /work/bench-eu10m
    python benchmarks/gates.py run --label after --folder /work/bench-eu10m
    python benchmarks/gates.py compare --folder /work/bench-eu10m

``run`` times the release's own gates (``gates:`` of the config: for eu2021 only additivity, reported)
and a full set of gates (:data:`FULL`) that exercises every check, and writes the gate rows as
``_gate`` does; ``compare`` checks that the rows agree between the versions and writes
``results/gates.md`` and ``results/gates.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._measure import machine, stage, write_results

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "eu2021.yaml"
FULL = {
    "forbidden_values": [1, 2],
    "max_small_cells_unchanged": 0.5,
    "require_additivity": False,
    "max_hellinger": 0.05,
    "max_mean_absolute_deviation": 3.0,
}


def _rows(outcomes: Any) -> list[dict[str, Any]]:
    """Gate rows as ``tasks/release.py::_gate`` writes them."""
    return [
        {
            "cube": o.cube,
            "expectation": o.expectation,
            "status": "error" if o.error else ("pass" if o.success else ("fail" if o.blocking else "warn")),
            "observed": str(o.observed),
            "required": o.threshold,
        }
        for o in outcomes
    ]


def run(label: str, folder: Path, config: Path, commit: str) -> None:
    os.environ.setdefault("CUBEGUARD_CKM_D", "5")  # demo values; the gates never read them
    os.environ.setdefault("CUBEGUARD_CKM_V", "3")
    import pandas as pd

    import cubeguard
    from cubeguard.config import load_release
    from cubeguard.config.models import GateSpec
    from cubeguard.pipeline.measure import cube_pairs, measures_file
    from expectations.gates import run_gates

    release = load_release(config, {"output.folder": str(folder), "input.microdata": str(folder / "persons.parquet")})
    record: dict[str, Any] = {"label": label, "code": str(Path(cubeguard.__file__).parents[1]), "machine": machine()}
    if commit:
        record["machine"]["commit"] = commit
    work = folder / "bench-gates" / label
    with stage(record, "open_only"):  # part of each step below: opening the 238 Zarr groups lazily
        cube_pairs(release)
    for name, gates in (("release", release.config.gates), ("full", GateSpec(**FULL))):
        time.sleep(2)  # let the load of the previous stage settle
        record[f"load_before_{name}"] = [round(x, 2) for x in os.getloadavg()]
        with stage(record, name):
            measures = pd.read_parquet(measures_file(release))
            report = run_gates(cube_pairs(release), measures, gates, work / name / "gates")
        record[f"{name}_passed"] = report.passed
        record[f"{name}_outcomes"] = len(report.outcomes)
        (work / f"{name}.rows.json").write_text(json.dumps(_rows(report.outcomes), indent=1))
    (work / "timing.json").write_text(json.dumps(record, indent=2))
    print(json.dumps(record, indent=2))


def _markdown(payload: dict[str, Any]) -> str:
    lines = [
        "# Gate step, EU programme at 10M persons (119 cubes, 88.2M cells)",
        "",
        f"Stores: `{payload['folder']}` (one release, the same for both versions). Each version ran in a fresh",
        "process (`python benchmarks/gates.py run`), imports before the clock; a step is",
        "`run_gates(cube_pairs(release), measures, gates, docs_dir)` with Data Docs written, as",
        "`tasks/release.py::_gate`. *release*: the config's own gates (eu2021 sets none, so additivity only,",
        f"reported); *full*: every check ({payload['full_gates']}).",
        "",
        "| gates | version | wall s | CPU s | peak RSS MB | load avg (1 min) before / at end |",
        "|---|---|---:|---:|---:|---|",
    ]
    for name in ("release", "full"):
        for label in ("before", "after"):
            r = payload[label]
            s = r[name]
            lines.append(
                f"| {name} | {label} ({r['commit']}) | {s['seconds']:.1f} | {s['cpu_seconds']:.1f} | "
                f"{s['peak_rss_mb']:.0f} | {r[f'load_before_{name}'][0]} / {s['load_avg_1min']} |"
            )
    lines += [
        "",
        "Of each step, opening the 238 Zarr groups (`cube_pairs`, code this work did not change) took "
        + " and ".join(
            f"{payload[v]['open_only']['seconds']:.1f} s wall / {payload[v]['open_only']['cpu_seconds']:.1f} s CPU ({v})"
            for v in ("before", "after")
        )
        + ", measured on its own.",
    ]
    lines += ["", "Verdicts (gate rows: cube, expectation, status, observed, required):", ""]
    for name in ("release", "full"):
        same = payload["identical"][name]
        lines.append(f"- {name}: {payload['rows'][name]} rows, {'identical' if same else 'DIFFERENT'} before and after")
    lines += ["", f"Machine: {payload['machine']['cpus']} cores shared with other engineers; {payload['note']}"]
    return "\n".join(lines)


def compare(folder: Path, note: str) -> None:
    base = folder / "bench-gates"
    payload: dict[str, Any] = {"folder": str(folder), "full_gates": FULL, "identical": {}, "rows": {}, "note": note}
    for label in ("before", "after"):
        timing = json.loads((base / label / "timing.json").read_text())
        payload[label] = {**timing, "commit": timing["machine"]["commit"]}
        payload["machine"] = timing["machine"]
    for name in ("release", "full"):
        before = json.loads((base / "before" / f"{name}.rows.json").read_text())
        after = json.loads((base / "after" / f"{name}.rows.json").read_text())
        payload["identical"][name] = before == after
        payload["rows"][name] = len(after)
        if before != after:
            payload.setdefault("differences", {})[name] = [
                [b, a] for b, a in zip(before, after, strict=False) if b != a
            ][:20]
    print(write_results("gates", payload, _markdown).read_text())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["run", "compare"])
    parser.add_argument("--label", default="after")
    parser.add_argument("--folder", type=Path, default=Path("/work/bench-eu10m"))
    parser.add_argument("--config", type=Path, default=CONFIG)
    parser.add_argument("--commit", default="", help="Recorded as the code's commit (run from an archive).")
    parser.add_argument("--note", default="", help="A line on the machine's state, for the results.")
    args = parser.parse_args()
    if args.mode == "run":
        run(args.label, args.folder, args.config, args.commit)
    else:
        compare(args.folder, args.note)


if __name__ == "__main__":
    main()

"""The intruder's attacks on releases of every method family, beside the same attacks on unprotected counts.

For each shipped config, and for demo.yaml with its step replaced by one of each method family
(cell key, the four roundings, small cell adjustment, Barnardisation, stochastic perturbation) and
two deliberately weak ones (the cell key method with D = 1, js = 0; no protection at all), and the
demo with sums of age published in two added cubes (the means attack reads them), this
runs ``cubeguard release CONFIG --set gates.max_recovered_by_attack=0`` in a fresh output folder
and reads what the attack step found (``internal/attack.json``) and how long it took
(``internal/timings.json``): per attack, the small original cells attacked, recovered with
certainty (beside the self-test on the unprotected counts), disclosed within 1-2, and best-guess
hits against the base rate; whether the gate blocked the release. Derived configs are written
beside demo.yaml as ``configs/.attack-<name>.yaml`` (so their relative paths hold) and removed.

``--eu PERSONS`` also runs the EU 2021 programme (configs/eu2021.yaml) at that size and reports
the attack step's time there. Results: ``benchmarks/results/attack.{json,md}``.

Usage: ``python benchmarks/attack.py [--only demo ...] [--eu 1000000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._measure import machine, write_results

ROOT = Path(__file__).resolve().parents[1]
CLI = [str(ROOT / ".venv" / "bin" / "cubeguard")]
#: demo.yaml with its step replaced: (name, method family, steps, extra gates, cubes left out).
DERIVED: list[tuple[str, str, list[dict[str, Any]], dict[str, Any], list[str]]] = [
    ("conventional", "WEAK: conventional rounding, base 3", [{"method": "conventional_rounding", "base": 3}], {}, []),
    ("conventional-5", "conventional rounding, base 5", [{"method": "conventional_rounding", "base": 5}], {}, []),
    ("random-rounding", "random rounding, base 3", [{"method": "random_rounding", "base": 3}], {}, []),
    ("random-summed", "random rounding, base 3, margins summed",
     [{"method": "random_rounding", "base": 3, "margins": "summed"}], {}, []),
    ("controlled", "controlled rounding, base 3 (seed000 left out: 2.5M cells)",
     [{"method": "controlled_rounding", "base": 3, "steps": 2, "partition_above_cells": 1000}], {}, ["seed000"]),
    ("small-cell", "small cell adjustment, base 3", [{"method": "small_cell_adjustment", "base": 3}], {}, []),
    ("small-cell-seeded", "small cell adjustment, base 3, one seed for all cubes",
     [{"method": "small_cell_adjustment", "base": 3, "seed": 7}], {}, []),
    ("barnardisation", "Barnardisation, p = 0.2", [{"method": "barnardisation", "p": 0.2}], {}, []),
    ("weak-ckm", "WEAK: cell key, D = 1, V = 0.5, js = 0", [{"method": "cell_key", "D": 1, "V": 0.5, "js": 0}], {}, []),
    ("unprotected", "WEAK: no protection (identity)", [{"method": "identity"}], {}, []),
    ("demo-sums", "cell key, D = 5, V = 3, js = 2, with sums of age in two cubes (the means attack)", [], {}, []),
]  # fmt: skip
#: Cubes added to a derived config (the demo's own steps when its steps are empty): sums of age
#: beside counts, which only the means attack reads.
ADDED_CUBES: dict[str, list[dict[str, Any]]] = {
    "demo-sums": [
        {"id": "sums1", "breakdowns": ["GEO.H", "SEX", "LMS.H"], "sums": ["age"]},
        {"id": "sums2", "breakdowns": ["GEO.L", "SEX", "EDU"], "sums": ["age"]},
    ],
}
SHIPPED = [
    ("demo", "cell key, D = 5, V = 3, js = 2", "configs/demo.yaml"),
    ("demo-rounding", "semi-controlled rounding, base 3 (NUTS 2 controls)", "configs/demo-rounding.yaml"),
    ("demo-perturbation", "stochastic perturbation (control, fit)", "configs/demo-perturbation.yaml"),
    ("demo-swap", "ONS household and communal swap, then cell key", "configs/demo-swap.yaml"),
    ("censusprotection", "cell key (course p-table)", "configs/censusprotection.yaml"),
    ("censusprotection-swap", "targeted swap, then cell key", "configs/censusprotection-swap.yaml"),
    ("censusprotection-safe", "SAFE", "configs/censusprotection-safe.yaml"),
]


def derived_config(name: str, steps: list[dict[str, Any]], gates: dict[str, Any], drop: list[str]) -> Path:
    """demo.yaml with ``steps`` (and only the attack gate), written beside it."""
    config = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    config["steps"] = steps or config["steps"]
    config["gates"] = {**gates}
    config["hypercubes"] = [c for c in config["hypercubes"] if c["id"] not in drop] + ADDED_CUBES.get(name, [])
    config["output"]["folder"] = f"../work/attack-bench/{name}"
    config.pop("tables", None)  # flexible tables need the cell key method
    if config["steps"][0]["method"] == "identity":
        config["allow_unprotected"] = "attack benchmark: what an intruder gets from unprotected cubes"
    path = ROOT / "configs" / f".attack-{name}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def run(name: str, family: str, config: Path, folder: Path, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """One release with the attack gate; what the attack found and how long it took."""
    shutil.rmtree(folder, ignore_errors=True)
    sets = ["--set", "gates.max_recovered_by_attack=0", "--set", f"output.folder={folder}", *extra]
    t0 = time.perf_counter()
    env = {**os.environ, "CUBEGUARD_CKM_D": os.environ.get("CUBEGUARD_CKM_D", "5"),
           "CUBEGUARD_CKM_V": os.environ.get("CUBEGUARD_CKM_V", "3")}  # fmt: skip  # eu2021.yaml's references
    done = subprocess.run([*CLI, "release", str(config), *sets], capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - t0
    found = folder / "internal" / "attack.json"
    if not found.is_file():
        said = (done.stdout + done.stderr).strip().splitlines()
        return {"name": name, "family": family, "error": " ".join(said[-3:])[-400:], "release_s": round(seconds, 1)}
    timings = json.loads((folder / "internal" / "timings.json").read_text())
    attack_s = next(t["seconds"] for t in timings if t["step"] == "attack")
    return {
        "name": name,
        "family": family,
        "config": str(config.relative_to(ROOT)) if not config.name.startswith(".") else f"demo.yaml, {family}",
        "blocked": done.returncode != 0,
        "blocked_by_attack": "recovered_by_attack" in done.stdout or "RecoveredByAttack" in done.stdout,
        "release_s": round(seconds, 1),
        "attack_s": round(attack_s, 1),
        "findings": json.loads(found.read_text()),
    }


def _rows(result: dict[str, Any]) -> list[str]:
    facts = result["findings"]["facts"]
    out = []
    for attack in result["findings"]["attacks"]:
        mine = [f for f in facts if f["attack"] == attack and not f["unprotected"]]
        plain = [f for f in facts if f["attack"] == attack and f["unprotected"]]
        if not mine or not sum(f["targets"] for f in mine):
            continue
        total = {k: sum(f[k] for f in mine) for k in ("targets", "certain", "disclosed", "guessed", "base_rate")}
        self_hits = sum(f["guessed"] if attack == "averaging" else f["certain"] for f in plain)
        out.append(
            f"| {result['name']} | {attack} | {total['targets']:,} | **{total['certain']:,}** | {self_hits:,} | "
            f"{total['disclosed']:,} | {total['guessed']:,} | {total['base_rate']:,} |"
        )
    return out


def markdown(payload: dict[str, Any]) -> str:
    m = payload["machine"]
    lines = [
        "# Attacks on releases of every method family (`benchmarks/attack.py`)",
        "",
        f"{m['date']}, commit {m['commit']}, {m['cpus']} cores, Python {m['python']}. Each release ran with "
        "`--set gates.max_recovered_by_attack=0` in a fresh folder. Targets are the small original cells (1s "
        "and 2s) of every cube; *recovered* = interval one value (certainty); *self-test* = the same attack on "
        "the unprotected counts, which must recover every target; *disclosed* = interval within 1-2; best guess "
        "against the base rate of guessing the most common small value blind. Counts summed over the cubes.",
        "",
        "| release | method | blocked | release s | attack s | recovered (all attacks, worst cube) |",
        "|---|---|---|---:|---:|---:|",
    ]
    for r in payload["runs"]:
        if "error" in r:
            lines.append(f"| {r['name']} | {r['family']} | did not run: {r['error']} | {r['release_s']} | - | - |")
            continue
        worst = max((f["certain"] for f in r["findings"]["facts"] if not f["unprotected"]), default=0)
        blocked = "**yes**" if r["blocked"] else "no"
        lines.append(f"| {r['name']} | {r['family']} | {blocked} | {r['release_s']} | {r['attack_s']} | {worst:,} |")
    lines += [
        "",
        "| release | attack | small cells | recovered | self-test | disclosed 1-2 | best guess | base rate |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in payload["runs"]:
        lines += _rows(r) if "error" not in r else []
    if payload.get("eu"):
        eu = payload["eu"]
        lines += [
            "",
            f"EU 2021 programme at {eu['persons']:,} persons (configs/eu2021.yaml): attack step {eu['attack_s']} s "
            f"(release {eu['release_s']} s), blocked: {eu['blocked']}.",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", nargs="*", help="Run only these names.")
    parser.add_argument("--eu", type=int, default=0, help="Also the EU 2021 programme at this many persons.")
    parser.add_argument("--results", default="attack")
    args = parser.parse_args()
    work = ROOT / "work" / "attack-bench"
    runs = []
    jobs = [(n, f, ROOT / c) for n, f, c in SHIPPED] + [(n, f, derived_config(n, s, g, d)) for n, f, s, g, d in DERIVED]
    try:
        for name, family, config in jobs:
            if args.only and name not in args.only:
                continue
            print(f"{name} ...", flush=True)
            runs.append(run(name, family, config, work / name))
            print(f"  {runs[-1].get('error') or runs[-1].get('blocked')} {runs[-1].get('attack_s')} s", flush=True)
    finally:
        for path in (ROOT / "configs").glob(".attack-*.yaml"):
            path.unlink()
    payload: dict[str, Any] = {"machine": machine(), "runs": runs}
    if args.eu:
        sets = ("--set", f"input.synthetic.persons={args.eu}")
        eu = run("eu2021", "cell key (EU programme)", ROOT / "configs" / "eu2021.yaml", work / "eu2021", sets)
        payload["eu"] = {"persons": args.eu, **{k: eu[k] for k in ("release_s", "attack_s", "blocked")}}
    print(write_results(args.results, payload, markdown))


if __name__ == "__main__":
    main()

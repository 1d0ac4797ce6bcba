"""Controlled rounding across the EU 2021 programme: shared cells with and without ``hold``.

A census programme publishes the same cell in many cubes (e.g. GEO x SEX x AGE with every other
variable at its total). Controlled rounding couples the cells of a cube, so cubes rounded on their
own publish such a cell differently; ``hold: [[GEO.N, SEX, AGE.H]]`` rounds the margin tables over
those breakdowns first, the same way in every cube, and holds them (issue 13, item 5).

The EU programme (``configs/eu2021.yaml``) is tabulated from a synthetic census (national
geography); its cubes of at most ``--max-cells`` cells are rounded to base 3 with ``steps: 2`` and
``stop: first_feasible``, block by block above 2,000 cells, once without and once with ``hold``, and every pair of cubes of one
population is compared on the cells they share (``cubeguard.ckm.consistency``). A pair is *covered*
when every variable the two cubes share has the same breakdown in both and lies in the held group:
then every shared cell is a cell of a held margin table and must agree. Other pairs share cells
that no held table contains (a variable both cubes have beyond the group, or one variable at two
breakdowns, e.g. GEO.N and GEO.M), which ``hold`` does not promise to publish alike.

Usage: ``python benchmarks/rounding_hold.py [--persons 200000] [--max-cells 60000]``; writes
``benchmarks/results/rounding_hold.{json,md}``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._measure import machine, stage, write_results
from cubeguard.ckm.consistency import check_consistency
from cubeguard.errors import CubeguardError
from cubeguard.gates.additivity import check_additivity
from cubeguard.methods.controlled_rounding import ControlledRoundingStep, round_cube
from cubeguard.testing.eu_programme import small_cubes

HOLD = ["GEO.N", "SEX", "AGE.H"]
#: Cubes above this many cells are rounded block by block: a 4-D cube of 20,000 cells as one
#: program may spend the whole time limit looking for a zero-restricted rounding it may not have.
PARTITION_ABOVE = 2_000


def programme(persons: int, max_cells: int) -> dict[str, xr.Dataset]:
    """The EU programme's cubes of at most ``max_cells`` cells, tabulated from a synthetic census."""
    with tempfile.TemporaryDirectory() as tmp:
        return small_cubes(Path(tmp), persons, 2021, max_cells)


def rounded(cubes: dict[str, xr.Dataset], hold: list[list[str]]) -> tuple[dict[str, xr.Dataset], dict[str, str]]:
    """Every cube rounded (steps 2, first feasible), and the error of each cube that could not be."""
    step = ControlledRoundingStep(
        method="controlled_rounding",
        base=3,
        steps=2,
        stop="first_feasible",
        time_limit_s=30.0,
        partition_above_cells=PARTITION_ABOVE,
        hold=hold,
    )
    out, errors = {}, {}
    for cube_id, cube in cubes.items():
        try:
            out[cube_id] = round_cube(cube, step)
        except CubeguardError as error:
            errors[cube_id] = str(error)
    return out, errors


def covered(a: xr.Dataset, b: xr.Dataset) -> bool:
    """Every variable the two cubes share has one breakdown in both, and it is in the held group."""
    va, vb = dict(a.attrs["variables"]), dict(b.attrs["variables"])
    shared = set(va.values()) & set(vb.values())
    by_a = {v: d for d, v in va.items() if v in shared}
    by_b = {v: d for d, v in vb.items() if v in shared}
    return all(by_a[v] == by_b[v] and by_a[v] in HOLD for v in shared)


def compare(cubes: dict[str, xr.Dataset]) -> dict[str, dict[str, int]]:
    """Pairs, shared cells and mismatches, for covered and other pairs of one population."""
    tally = {
        kind: {"pairs": 0, "shared_cells": 0, "mismatches": 0, "pairs_with_mismatch": 0}
        for kind in ("covered", "other")
    }
    for (_, a), (_, b) in combinations(sorted(cubes.items()), 2):
        if a.attrs.get("population") != b.attrs.get("population"):
            continue
        report = check_consistency({str(a.attrs["cube_id"]): a, str(b.attrs["cube_id"]): b})
        t = tally["covered" if covered(a, b) else "other"]
        t["pairs"] += report.pairs
        t["shared_cells"] += report.shared_cells
        t["mismatches"] += report.mismatches
        t["pairs_with_mismatch"] += int(report.mismatches > 0)
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--persons", type=int, default=200_000)
    parser.add_argument("--max-cells", type=int, default=60_000)
    args = parser.parse_args()
    record: dict[str, Any] = {"machine": machine(), "persons": args.persons, "max_cells": args.max_cells, "hold": HOLD}
    started = time.perf_counter()
    cubes = programme(args.persons, args.max_cells)
    record["tabulate_seconds"] = time.perf_counter() - started
    record["cubes"] = {k: int(v["count"].size) for k, v in cubes.items()}
    for key, hold in (("without", []), ("with", [HOLD])):
        with stage(record, f"{key}_stage"):
            out, errors = rounded(cubes, hold)
        record[key] = {
            "rounded": len(out),
            "errors": errors,
            "additive": all(check_additivity(c).additive for c in out.values()),
            "multiples": all(bool(np.all(c["count"].values % 3 == 0)) for c in out.values()),
            "consistency": compare(out),
        }
    write_results("rounding_hold", record, markdown)


def markdown(r: dict[str, Any]) -> str:
    """The results page."""
    w, h = r["without"], r["with"]

    def row(kind: str) -> list[str]:
        a, b = w["consistency"][kind], h["consistency"][kind]
        return [
            f"| {kind} | {b['pairs']} | {b['shared_cells']:,} | {a['mismatches']:,} ({a['pairs_with_mismatch']} pairs) "
            f"| {b['mismatches']:,} ({b['pairs_with_mismatch']} pairs) |"
        ]

    return "\n".join(
        [
            "# Controlled rounding across the EU programme, with and without `hold` (benchmarks/rounding_hold.py)",
            "",
            f"{len(r['cubes'])} cubes of `configs/eu2021.yaml` of at most {r['max_cells']:,} cells "
            f"({sum(r['cubes'].values()):,} cells in all), tabulated from a synthetic census of {r['persons']:,} "
            f"persons; each rounded to base 3, `steps: 2`, `stop: first_feasible`, `partition_above_cells: 2000`; `hold: [[{', '.join(r['hold'])}]]`. "
            "Covered pairs: every variable the two cubes share has one breakdown in both, in the held group, so "
            "every shared cell lies in a held margin table. Other pairs also share cells no held table contains.",
            "",
            "| pairs of cubes | how many | shared cells | cells published differently, without `hold` | with `hold` |",
            "|---|---:|---:|---:|---:|",
            *row("covered"),
            *row("other"),
            "",
            f"Cubes rounded: {w['rounded']} without, {h['rounded']} with `hold`; all additive: "
            f"{'yes' if w['additive'] and h['additive'] else 'no'}; all multiples of 3: "
            f"{'yes' if w['multiples'] and h['multiples'] else 'no'}. Seconds: {r['without_stage']['seconds']:.1f} "
            f"without, {r['with_stage']['seconds']:.1f} with `hold` (peak RSS {r['with_stage']['peak_rss_mb']:.0f} MB).",
            "",
            f"Not rounded (the release would stop and say so; `fallback: rapid` is refused with `hold`): without "
            f"`hold` {', '.join(sorted(w['errors'])) or 'none'}, with `hold` {', '.join(sorted(h['errors'])) or 'none'}. "
            "The message, e.g.: " + next(iter({**w["errors"], **h["errors"]}.values()), "-"),
            "",
            f"Machine: {r['machine']['cpus']} cores, Python {r['machine']['python']}, commit {r['machine']['commit']}, "
            f"{r['machine']['date']}.",
        ]
    )


if __name__ == "__main__":
    main()

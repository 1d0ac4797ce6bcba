"""Does a zero-restricted controlled rounding exist? CP-SAT against HiGHS on the benchmark tables, in one run.

Handbook on SDC v2, 5.5.1: tables of three or more dimensions need not have a zero-restricted
rounding, and issue 13 asks cubeguard to say so, and what steps were needed. For each table, the
same question (one step, every cell to a multiple of 3 next to its count, every total additive):

- *CP-SAT*: ``cubeguard.methods.controlled_rounding.existence.zero_restricted`` (OR-Tools CP-SAT on
  the 0/1 system with every line's equation);
- *HiGHS*: ``controlled_round(..., steps=1, stop="first_feasible")``, the MIP the release step solves.

Each with a limit of ``--limit`` seconds (HiGHS may overrun it on large programs). Tables: those of
``benchmarks/rounding.py`` (census-like counts; ``census4d_151875`` is the issue's 150,000-cell
target) and seed 000's seven-way hypercube (2,469,600 cells, 1.5M synthetic persons).

Usage: ``python benchmarks/rounding_existence.py [--limit 120] [--skip-seed000]``; writes
``benchmarks/results/rounding_existence.{json,md}``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._measure import machine, write_results
from benchmarks.controlled_rounding import _hier, seed000_cube
from benchmarks.rounding import make_table
from cubeguard.cubes.tree import DimHierarchy
from cubeguard.methods.controlled_rounding.existence import zero_restricted
from cubeguard.methods.controlled_rounding.kernel import controlled_round

TABLES = ("flat3d_1000", "flat3d_10000", "flat3d_50000", "hier2d_2331", "census4d_151875")


def _hierarchies(name: str) -> tuple[np.ndarray, list[DimHierarchy]]:
    """Every cell of the named table and its hierarchies."""
    table = make_table(name)
    hier = []
    for dim in table.dims:
        parent = np.array(dim.parent, dtype=np.int64)
        depth = np.zeros(parent.size, dtype=np.int64)
        for k in range(parent.size):  # pre-order: a parent comes before its children
            depth[k] = 0 if parent[k] < 0 else depth[parent[k]] + 1
        hier.append(DimHierarchy(dim.name, tuple(dim.codes), parent, depth))
    return table.full(), hier


def ask(name: str, counts: np.ndarray, hier: list[DimHierarchy], limit: float) -> dict[str, Any]:
    """Both solvers' answers for one table, each timed."""
    started = time.perf_counter()
    found = zero_restricted(counts, hier, 3, limit)
    cp_wall = time.perf_counter() - started
    started = time.perf_counter()
    highs = controlled_round(counts, hier, 3, 1, "first_feasible", limit)
    highs_wall = time.perf_counter() - started
    answer = {"optimal": "exists", "first_feasible": "exists", "time_limit": "exists", "infeasible": "none"}
    return {
        "table": name,
        "cells": int(counts.size),
        "cp_sat": found.answer,
        "cp_sat_solver_s": round(found.seconds, 2),
        "cp_sat_wall_s": round(cp_wall, 2),
        "highs": answer.get(highs.status, "undecided"),
        "highs_status": highs.status,
        "highs_wall_s": round(highs_wall, 2),
    }


def release_step(name: str, limit: float) -> list[dict[str, Any]]:
    """The release step on the named table with one step and with two (defaults otherwise): seconds, outcome."""
    import json

    from cubeguard.errors import CubeguardError
    from cubeguard.methods.controlled_rounding import REPORT_ATTR, ControlledRoundingStep, round_cube
    from cubeguard.testing.cubes import Tree, build_cube

    table = make_table(name)
    cube = build_cube({d.name: Tree(d.codes, d.parent, d.depth) for d in table.dims}, table.interior)
    out = []
    for steps in (1, 2):
        step = ControlledRoundingStep(method="controlled_rounding", base=3, steps=steps, time_limit_s=limit)
        started = time.perf_counter()
        try:
            report = json.loads(round_cube(cube.assign_attrs(cube_id=name), step).attrs[REPORT_ATTR])
            outcome = {k: report[k] for k in ("status", "objective", "steps_used", "zero_restricted")}
        except CubeguardError as error:
            outcome = {"error": str(error)}
        out.append({"table": name, "steps": steps, "seconds": round(time.perf_counter() - started, 1)} | outcome)
        print(out[-1], flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=120.0)
    parser.add_argument("--skip-seed000", action="store_true")
    args = parser.parse_args()
    rows = []
    for name in TABLES:
        rows.append(ask(name, *_hierarchies(name), args.limit))
        print(rows[-1], flush=True)
    if not args.skip_seed000:
        cube = seed000_cube()
        rows.append(ask("seed000", np.asarray(cube["count"].values, dtype=np.int64), _hier(cube), args.limit))
        print(rows[-1], flush=True)
    steps = release_step("census4d_151875", args.limit)
    record = {"machine": machine(), "limit_s": args.limit, "rows": rows, "release_step": steps}
    write_results("rounding_existence", record, markdown)


def markdown(r: dict[str, Any]) -> str:
    """The results page."""
    m = r["machine"]
    lines = [
        "# Does a zero-restricted controlled rounding exist? (benchmarks/rounding_existence.py)",
        "",
        f"Base 3, one step (every cell to a multiple of 3 next to its count), every total additive; limit "
        f"{r['limit_s']:g} s each. CP-SAT: `existence.zero_restricted` (OR-Tools CP-SAT, every line's "
        "equation); HiGHS: `controlled_round(steps=1, stop='first_feasible')`, the release step's MIP. "
        "*none* is a proof of infeasibility, *exists* comes with a rounding, *undecided*: the limit came first.",
        "",
        "| table | cells | CP-SAT | CP-SAT s (solver) | HiGHS | HiGHS status | HiGHS s |",
        "|---|---:|---|---:|---|---|---:|",
    ]
    for row in r["rows"]:
        lines.append(
            f"| {row['table']} | {row['cells']:,} | {row['cp_sat']} | {row['cp_sat_wall_s']:.1f} "
            f"({row['cp_sat_solver_s']:.1f}) | {row['highs']} | {row['highs_status']} | {row['highs_wall_s']:.1f} |"
        )
    lines += [
        "",
        "The release step (`round_cube`, defaults: `stop: optimal`, block by block above 20,000 cells) on "
        "census4d_151875:",
        "",
        "| steps | seconds | outcome |",
        "|---:|---:|---|",
        *[
            f"| {s['steps']} | {s['seconds']:.1f} | "
            + (
                s.get("error")
                or f"{s['status']}, objective {s['objective']:,}, steps used {s['steps_used']}, "
                f"zero_restricted {s['zero_restricted']}"
            )
            + " |"
            for s in r.get("release_step", [])
        ],
        "",
        "Wall seconds include building each model in Python. Where CP-SAT says *none*, no zero-restricted "
        "rounding exists: the release step with `steps: 1` stops at once and says to raise `steps`, and with "
        "more steps it reports `zero_restricted: none` and skips the one-step solve of the whole table.",
        "",
        f"Machine: {m['cpus']} cores, Python {m['python']}, commit {m['commit']}, {m['date']}.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()

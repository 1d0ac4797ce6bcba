"""Controlled rounding of large 4-dimensional census tables: one program, block by block, RAPID.

Hundepool et al. (2024), Handbook on SDC v2, 5.5.1: tau-ARGUS's CRP "is capable of rounding tables
up to 150K cells on an average computer"; beyond that it partitions ("tables with over six million
cells have been successfully rounded this way"). Two tables, every variable but SEX a hierarchy:

* ``150k``: GEO (total, 8 regions, 9 areas each: 81 codes) x AGE (total, 4 bands of 5: 25) x SEX
  (3) x EDU (total, 4 levels of 5: 25) = 151,875 cells, 57,600 interior;
* ``6m``: GEO (total, 20 regions, 10 districts each, 15 areas each: 3,221 codes) x the same AGE,
  SEX and EDU = 6,039,375 cells, 2,400,000 interior;
* ``seed000``: seed 000's seven-way test hypercube (Shlomo 2009, section 2: NUTS2 x sex x 21 age
  groups x 5 activity x 13 occupation x 9 education x 5 citizenship, 2,469,600 cells with every
  total) tabulated from the synthetic census of ``benchmarks/paper_tables.py`` (1.5M persons).

For the first two, interior counts are Poisson with a mean drawn per cell from a gamma (shape 0.5, mean 3; PCG64 seed
2024), so about 38% are 0 and many are 1 or 2, as in a census hypercube. Base 3.

Measured in this one process, in this order: (1) the release step ``controlled_rounding`` with
``steps: 2``, the stop rule of ``--stop`` and its defaults (blocks of at most 1,000 free cells
above 20,000 cells, two threads), timed with its peak memory, its table checked additive by the
additivity gate; for the 150k table also with ``stop: first_feasible`` (each block stops at its
first rounding); (2) the RAPID solution; (3) the whole table as one zero-restricted program with
``stop: first_feasible`` (150k only); (4) small tables of the same kind (three and four
hierarchical variables), whose zero-restricted programs HiGHS proves infeasible. The lower bound
is every cell at its nearest multiple.
Writes ``benchmarks/results/controlled_rounding{,_6m,_seed000}.{json,md}``.

Usage: ``python benchmarks/controlled_rounding.py [--table 150k|6m|seed000] [--steps 2] [--time-limit 1800]
[--stop optimal|first_feasible|time_limit] [--fallback none|rapid] [--whole-limit 120]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._measure import machine, stage, write_results
from benchmarks.bench_measures import tree
from cubeguard.cubes.tree import DimHierarchy, hierarchies
from cubeguard.errors import CubeguardError
from cubeguard.gates.additivity import check_additivity
from cubeguard.methods.cells import interior, leaf_index
from cubeguard.methods.controlled_rounding import REPORT_ATTR, ControlledRoundingStep, controlled_round, round_cube
from cubeguard.methods.controlled_rounding.partition import rapid
from cubeguard.testing.cubes import Tree, build_cube, two_level_tree

BASE = 3
SEX = Tree(("S_T", "S1", "S2"), (-1, 0, 0), (0, 1, 1))


def census_cube(geo: Tree, seed: int = 2024) -> xr.Dataset:
    """GEO x AGE x SEX x EDU with census-like counts (see the module docstring)."""
    dims = {"GEO": geo, "AGE": two_level_tree("A", 4, 5), "SEX": SEX, "EDU": two_level_tree("E", 4, 5)}
    shape = tuple(len(t.leaves) for t in dims.values())
    rng = np.random.default_rng(seed)
    return build_cube(dims, rng.poisson(rng.gamma(0.5, 6.0, shape))).assign_attrs(cube_id="census4d")


def seed000_cube(persons: int = 1_500_000, seed: int = 2021) -> xr.Dataset:
    """Seed 000's seven-way hypercube on the synthetic census, as ``benchmarks/paper_tables.py`` tabulates it."""
    from benchmarks.paper_tables import CUBE, release_for
    from cubeguard.pipeline.tabulation import tabulate_release
    from cubeguard.synth import generate

    with tempfile.TemporaryDirectory() as tmp:
        generate(persons, seed, Path(tmp) / "census", geography="two_regions")
        release = release_for(Path(tmp) / "census" / "persons.parquet", Path(tmp) / "out", None)
        cube: xr.Dataset = tabulate_release(release).cube(0, {"cube_id": CUBE}).load()
    return cube


def table(name: str = "150k") -> xr.Dataset:
    """The named benchmark table."""
    if name == "seed000":
        return seed000_cube()
    return census_cube(
        two_level_tree("G", 8, 9) if name == "150k" else Tree(*(tuple(x) for x in tree("G", [20, 10, 15])))
    )


def _hier(cube: xr.Dataset) -> list[DimHierarchy]:
    found = hierarchies(cube)
    return [found[str(d)] for d in cube["count"].dims]


def small_tables() -> list[dict[str, Any]]:
    """Small tables of three and four hierarchical variables: HiGHS's verdict on zero-restricted rounding."""
    out = []
    for label, dims in (
        ("3 hierarchies (2 x 3 each)", {f"V{k}": two_level_tree(f"v{k}", 2, 3) for k in range(3)}),
        (
            "4 variables: 3 hierarchies (2 x 3) and SEX",
            {"G": two_level_tree("g", 2, 3), "A": two_level_tree("a", 2, 3), "S": SEX, "E": two_level_tree("e", 2, 3)},
        ),
    ):
        verdicts, seconds = [], 0.0
        for seed in range(10):
            shape = tuple(len(t.leaves) for t in dims.values())
            rng = np.random.default_rng(seed)
            cube = build_cube(dims, rng.poisson(rng.gamma(0.5, 6.0, shape)))
            started = time.perf_counter()
            solution = controlled_round(cube["count"].values, _hier(cube), BASE, 1, "first_feasible", 60.0)
            seconds += time.perf_counter() - started
            verdicts.append(solution.status)
        out.append({"table": label, "cells": int(cube["count"].size), "verdicts": verdicts, "seconds": seconds})
    return out


def deviation_figures(published: np.ndarray, counts: np.ndarray) -> dict[str, Any]:
    """Objective, the share of cells a base or more off, the largest deviation."""
    d = np.abs(published - counts)
    return {
        "objective": int(d.sum()),
        "beyond_one_base_share": float(np.mean(d >= BASE)),
        "max_deviation": int(d.max()),
    }


def _release_step(
    cube: xr.Dataset, counts: np.ndarray, step: ControlledRoundingStep, record: dict[str, Any], stage_name: str
) -> dict[str, Any]:
    """The release step on the table, timed into ``record[stage_name]``: its report, deviations and additivity."""
    try:
        with stage(record, stage_name):
            rounded = round_cube(cube, step)
    except CubeguardError as error:
        return {"error": str(error)}
    published = np.asarray(rounded["count"].values, dtype=np.int64)
    found: dict[str, Any] = json.loads(rounded.attrs[REPORT_ATTR]) | deviation_figures(published, counts)
    return found | {"stop": step.stop, "additive": bool(check_additivity(rounded).additive)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", choices=["150k", "6m", "seed000"], default="150k")
    parser.add_argument("--time-limit", type=float, default=1800.0)
    parser.add_argument("--whole-limit", type=float, default=120.0)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--stop", choices=["optimal", "first_feasible", "time_limit"], default="optimal")
    parser.add_argument("--fallback", choices=["none", "rapid"], default="none")
    args = parser.parse_args()
    cube = table(args.table)
    counts = np.asarray(cube["count"].values, dtype=np.int64)
    hier = _hier(cube)
    residual = counts % BASE
    record: dict[str, Any] = {"machine": machine(), "table_name": args.table, "time_limit_s": args.time_limit}
    record["table"] = {
        "dims": {h.dim: len(h.codes) for h in hier},
        "cells": int(counts.size),
        "interior": int(interior(counts, leaf_index(cube)).size),
        "zero_share_interior": round(float(np.mean(interior(counts, leaf_index(cube)) == 0)), 3),
        "lower_bound": int(np.minimum(residual, BASE - residual).sum()),
    }
    record["steps"], record["stop"], record["fallback"] = args.steps, args.stop, args.fallback
    stops = [args.stop] + (["first_feasible"] if args.table == "150k" and args.stop != "first_feasible" else [])
    for key, stop in zip(("step", "step_ff")[: len(stops)], stops, strict=True):
        step = ControlledRoundingStep(
            method="controlled_rounding",
            base=BASE,
            steps=args.steps,
            time_limit_s=args.time_limit,
            stop=stop,
            fallback=args.fallback,
        )
        record[key] = _release_step(cube, counts, step, record, f"{key}_stage")
    with stage(record, "rapid_stage"):
        fast = rapid(counts, hier, BASE)
    record["rapid"] = deviation_figures(fast, counts)
    if args.table == "150k":
        with stage(record, "whole_stage"):
            whole = controlled_round(counts, hier, BASE, 1, "first_feasible", args.whole_limit)
        record["whole"] = whole.report() | {"limit_s": args.whole_limit}
        record["small"] = small_tables()
    print(json.dumps({k: v for k, v in record.items() if k != "small"}, indent=1))
    write_results("controlled_rounding" + ("" if args.table == "150k" else f"_{args.table}"), record, markdown)


def markdown(r: dict[str, Any]) -> str:
    """The results page."""
    t = r["table"]
    dims = " x ".join(f"{d} ({n})" for d, n in t["dims"].items())
    lines = [
        f"# Controlled rounding of a {t['cells']:,}-cell table (benchmarks/controlled_rounding.py --table {r['table_name']})",
        "",
        f"Table: {dims} = {t['cells']:,} cells, {t['interior']:,} interior ({t['zero_share_interior']:.0%} of them 0); "
        f"base {BASE}. Lower bound on any rounding's total deviation (every cell at its nearest multiple): "
        f"{t['lower_bound']:,}.",
        "",
    ]
    if "whole" in r:
        w = r["whole"]
        lines += [
            f"**One program, zero-restricted, `stop: first_feasible`, {w['limit_s']:g} s:** status `{w['status']}` "
            f"after {r['whole_stage']['seconds']:.1f} s ({w['constraints']:,} equations, {w['variables']:,} binaries; "
            f"peak RSS {r['whole_stage']['peak_rss_mb']:.0f} MB).",
            "",
            "**Small tables of the same kind, zero-restricted (HiGHS, 10 seeds each):**",
            "",
            "| table | cells | verdicts | seconds, all 10 |",
            "|---|---:|---|---:|",
            *[
                f"| {x['table']} | {x['cells']:,} | {', '.join(sorted(set(x['verdicts'])))} "
                f"({x['verdicts'].count('infeasible')} of 10 infeasible) | {x['seconds']:.2f} |"
                for x in r["small"]
            ],
            "",
        ]
    runs = [(r[k], r[f"{k}_stage"]) for k in ("step", "step_ff") if k in r]
    for run, st in runs:
        if "error" in run:
            lines += [
                f"**The release step** `stop: {run.get('stop', r['stop'])}` stopped after {st['seconds']:.1f} s: "
                f"{run['error']}",
                "",
            ]
    ok = [(run, st) for run, st in runs if "error" not in run]
    fast = r["rapid"]

    def row(label: str, cells: list[str], rapid_cell: str) -> str:
        return f"| {label} | {' | '.join(cells)} | {rapid_cell} |"

    lines += [
        f"**The release step** `{{method: controlled_rounding, base: 3, steps: {r['steps']}, fallback: "
        f"{r['fallback']}}}` (defaults: blocks above {20_000:,} cells, at most 1,000 free cells a block, "
        f"{r['time_limit_s']:g} s), against RAPID:",
        "",
        "| figure | " + " | ".join(f"step, `stop: {run['stop']}`" for run, _ in ok) + " | RAPID |",
        "|---|" + "---:|" * (len(ok) + 1),
        row("status", [run["status"] for run, _ in ok], "-"),
        row(
            "blocks (of them solved again with their siblings)",
            [f"{run['blocks']:,} ({run['merged_blocks']:,})" for run, _ in ok],
            "-",
        ),
        row("steps used (every cell less than that many bases off)", [str(run["steps_used"]) for run, _ in ok], "-"),
        row("additive (the additivity gate)", ["yes" if run["additive"] else "no" for run, _ in ok], "yes"),
        row(
            "objective (sum of absolute deviations, all cells)",
            [f"{run['objective']:,}" for run, _ in ok],
            f"{fast['objective']:,}",
        ),
        row(
            "above the lower bound",
            [f"{run['objective'] / t['lower_bound'] - 1:.1%}" for run, _ in ok],
            f"{fast['objective'] / t['lower_bound'] - 1:.1%}",
        ),
        row(
            "cells a base or more off",
            [f"{run['beyond_one_base_share']:.2%}" for run, _ in ok],
            f"{fast['beyond_one_base_share']:.2%}",
        ),
        row("largest deviation", [f"{run['max_deviation']:,}" for run, _ in ok], f"{fast['max_deviation']:,}"),
        row("wall seconds", [f"{st['seconds']:.1f}" for _, st in ok], f"{r['rapid_stage']['seconds']:.2f}"),
        row(
            "CPU seconds (two threads)",
            [f"{st['cpu_seconds']:.1f}" for _, st in ok],
            f"{r['rapid_stage']['cpu_seconds']:.2f}",
        ),
        row("peak RSS, MB", [f"{st['peak_rss_mb']:.0f}" for _, st in ok], f"{r['rapid_stage']['peak_rss_mb']:.0f}"),
        "",
        f"Machine: {r['machine']['cpus']} cores, Python {r['machine']['python']}, commit {r['machine']['commit']}, "
        f"{r['machine']['date']}; 1-minute load average {runs[0][1]['load_avg_1min']} at the end of the first step.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()

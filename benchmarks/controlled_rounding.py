"""Performance sanity check of controlled rounding on one synthetic 4-dimensional table of ~150,000 cells.

Hundepool et al. (2024), Handbook on SDC v2, 5.5.1: tau-ARGUS's CRP "is capable of rounding tables
up to 150K cells on an average computer". The table: GEO (total, 8 regions, 9 areas each: 81
codes), AGE (total, 4 bands, 5 ages each: 25), SEX (total, 2: 3), EDU (total, 4 levels, 5 each:
25), 151,875 cells of which 57,600 interior; interior counts Poisson with a mean drawn per cell
from a gamma (shape 0.5, mean 3; PCG64 seed 2024), so about half the cells are small as in a
census hypercube. Rounded zero-restricted to base 3 with ``stop: time_limit``.

Times: building the program (the sparse additivity equations and the variables), HiGHS, and
publishing (interior to the full cube). Writes ``benchmarks/results/controlled_rounding.md``.

Usage: ``python benchmarks/controlled_rounding.py [--time-limit 600]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._measure import RESULTS, machine, stage
from cubeguard.measures.select import hierarchies
from cubeguard.methods.cells import interior, leaf_index, publish_interior
from cubeguard.methods.controlled_rounding import controlled_round
from cubeguard.methods.controlled_rounding.kernel import build_program
from tests.strategies import Tree, build_cube, two_level_tree


def table(seed: int = 2024) -> Any:
    """The synthetic cube (see the module docstring)."""
    sex = Tree(("S_T", "S1", "S2"), (-1, 0, 0), (0, 1, 1))
    dims = {
        "GEO": two_level_tree("G", 8, 9),
        "AGE": two_level_tree("A", 4, 5),
        "SEX": sex,
        "EDU": two_level_tree("E", 4, 5),
    }
    shape = tuple(len(t.leaves) for t in dims.values())
    rng = np.random.default_rng(seed)
    counts = rng.poisson(rng.gamma(0.5, 6.0, shape))
    return build_cube(dims, counts).assign_attrs(cube_id="bench4d")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=600.0)
    parser.add_argument("--base", type=int, default=3)
    args = parser.parse_args()
    cube = table()
    counts = cube["count"].values
    found = hierarchies(cube)
    hier = [found[str(d)] for d in cube["count"].dims]
    record: dict[str, Any] = {"machine": machine(), "time_limit_s": args.time_limit, "base": args.base}
    record["table"] = {
        "dims": {str(d): len(found[str(d)].codes) for d in cube["count"].dims},
        "cells": int(counts.size),
        "interior": int(np.prod([found[str(d)].leaves.size for d in cube["count"].dims])),
        "zero_share_interior": round(float(np.mean(interior(counts, leaf_index(cube)) == 0)), 3),
    }
    with stage(record, "build_only"):
        program = build_program(counts, hier, args.base, 1)
    record["nonzeros"] = int(program.rows.nnz)
    with stage(record, "round"):
        solution = controlled_round(counts, hier, args.base, 1, "time_limit", args.time_limit)
    record["solution"] = solution.report()
    if solution.published is not None:
        with stage(record, "publish"):
            out = publish_interior(cube, interior(solution.published, leaf_index(cube)))
        record["max_abs_noise"] = int(np.abs(out["noise"].values).max())
    print(record)
    (RESULTS / "controlled_rounding.md").write_text(markdown(record) + "\n")


def markdown(r: dict[str, Any]) -> str:
    """The results page."""
    s, t = r["solution"], r["table"]
    dims = " x ".join(f"{d} ({n})" for d, n in t["dims"].items())
    lines = [
        "# Controlled rounding, one 4-dimensional table (benchmarks/controlled_rounding.py)",
        "",
        f"Table: {dims} = {t['cells']:,} cells, {t['interior']:,} interior ({t['zero_share_interior']:.0%} of them 0); "
        f"zero-restricted, base {r['base']}, `stop: time_limit` with {r['time_limit_s']:g} s.",
        "",
        "| figure | value |",
        "|---|---:|",
        f"| status | {s['status']} |",
        f"| objective (sum of absolute deviations, all cells) | {s['objective']} |",
        f"| best bound | {s['bound']} |",
        f"| gap | {'-' if s['gap'] is None else format(s['gap'], '.4%')} |",
        f"| constraints (one per total or subtotal cell) | {s['constraints']:,} |",
        f"| binary variables | {s['variables']:,} |",
        f"| nonzeros of the additivity matrix | {r['nonzeros']:,} |",
        f"| building the program, s | {r['build_only']['seconds']} |",
        f"| rounding (build + HiGHS), wall s | {r['round']['seconds']} |",
        f"| of which HiGHS, s | {s['solver_seconds']} |",
        f"| publishing (interior to full cube), s | {r.get('publish', {}).get('seconds', '-')} |",
        f"| peak RSS, MB | {r['round']['peak_rss_mb']} |",
        f"| largest \\|published - original\\| | {r.get('max_abs_noise', '-')} |",
        "",
        f"Machine: {r['machine']['cpus']} cores shared with other engineers (1-minute load average "
        f"{r['round']['load_avg_1min']} at the end), Python {r['machine']['python']}, commit {r['machine']['commit']}, "
        f"{r['machine']['date']}.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()

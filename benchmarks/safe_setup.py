"""SAFE on the EU programme: what comes before model 2, phase by phase, and what one move costs.

Run: ``uv run python benchmarks/safe_setup.py [--persons 1000000 10000000]``.

The EU 2021 programme (``configs/eu2021.yaml``) on its synthetic census of each ``--persons`` size, its
103 cubes of all persons as the controlled tables (as ``benchmarks/safe.py``'s ``eu`` case). Timed one
after the other in this process: reading the step's columns, the elementary table, the controlled
tables' arrays, their original counts (``A y``) and model 3's per-variable sort orders. Then the
price of model 2's unit of work, on 3,000 random pairs of elementary cells next to each other in the
sort order SAFE uses: how many controlled cells moving one record between them changes, and how
long evaluating that move against every controlled cell's bound takes. Writes
``benchmarks/results/safe_setup.{json,md}``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._measure import machine, stage, write_results
from benchmarks.safe import WORK, _release

#: Seconds of the same phases at 1M persons on commit f7cf3ae, before prefix-sum tabulation and packed
#: sort keys (measured with this script's stages in a worktree of that commit, 2026-11-27, one run).
BEFORE_1M = {"elementary": 49.07, "tabulate": 280.55, "sort_orders": 12.92}
PAIRS = 3000
#: Unsafe cells of model 2's first pass timed (after 10 that compile the kernel).
SWEPT = 20_000
#: Microseconds per unsafe cell of that sweep on commit bfa977c, before the sweep remembered the cells
#: that stopped candidates and judged a repeated neighbour once (the same sweep, cells and bounds, in a
#: worktree of that commit, run beside this script on the 2 cores, 2026-11-28; the same moves were made).
BEFORE_SWEEP_US = {1_000_000: 10511.5, 10_000_000: 10845.7}
#: How the figures on the page were taken.
RUN_NOTE = (
    "This run shared the 2 cores with the sweep of commit bfa977c measured for the figures below, so its phases "
    "(reading aside) took 9-37 % longer than when run alone at commit f38fd3e."
)

# Measured by hand in the session that wrote this script (commit f38fd3e, 1M persons, one run each).
TRIED = """
Tried and not kept: model 2 as one sweep of a tree of the categories (the elementary cells sorted by
the partitions of each variable that the tables distinguish, most used first; a node groups its
children's leftover 1s and 2s once it holds 3 and moves them to the cheapest destination among them,
its latest safe cells and pulls from a safe cell; 1 or 2 left over join a safe cell of the node or
go up). EU programme at 1M persons (889,125 elementary cells, 868,864 unsafe):

- each choice judged against all 82.4M controlled cells: no pass finished in 7 minutes (about 20
  evaluations per group at about 1.3 ms each);
- judged against each variable's one-way margins only: 15 s, but cells of two or more variables
  deviated by up to 3,235 (99th percentile 43-93);
- judged against the 280,255 cells of the 284 distinct one- and two-way margin tables: 275 s, and
  two-way cells still deviated by up to 679: records drift from rare to common categories (e.g. from
  foreign-born to native-born), since moving the one rare record changes fewer cells than moving two
  common ones;
- the same with those bounds kept (no choice adding excess; a pass that removes under 2 % of the
  unsafe cells raises both bounds by one, as in the paper): all unsafe cells gone in 12 minutes at
  9 / 11, but three- to five-way cells deviated by up to 246-324 (99th percentile 29-39).

On the small cases the tree judged against every cell ended at 7 / 7 (course data) and 1 / 8
(seed 000) where the current model 2 reaches 2 / 6 and 1 / 6.
"""


def phases(persons: int) -> dict[str, Any]:
    """Each phase timed, the elementary table's size, and the cost of one move."""
    from cubeguard.methods.safe import kernel
    from cubeguard.methods.safe import method as safe_method
    from cubeguard.methods.safe.controlled import build, tabulate
    from cubeguard.methods.safe.elementary import elementary
    from cubeguard.methods.safe.search import _sort_orders
    from cubeguard.pipeline.pretabular import _read, release_tables

    release = _release("eu", WORK / "setup-out", persons, 600.0)
    step = release.config.pre_tabular[0].with_tables(release_tables(release))
    tables = step.release_tables
    timed: dict[str, Any] = {}
    with stage(timed, "read"):
        frame, _ = _read(release, step, safe_method.columns(step), {})
    with stage(timed, "elementary"):
        el = elementary(frame, safe_method.used_breakdowns(step, tables), safe_method._members(frame, tables))
    with stage(timed, "build"):
        ctl = build([safe_method._dimensions(el, t) for t in safe_method.controlled_tables(step, tables)])
    with stage(timed, "tabulate"):
        original = tabulate(ctl, el.cats, el.counts)
    with stage(timed, "sort_orders"):
        ranks, orders = _sort_orders(el.cats, ctl, el.fixed)
    order = orders[0]
    picks = np.random.default_rng(0).choice(np.arange(1, order.size), PAIRS, replace=False)
    nd, var, ptr, cstart, cval, base = ctl.arrays
    tmask = kernel.table_masks(nd, var)
    touched = [kernel.cells_changed(order[i - 1], order[i], el.cats, nd, var, ptr, cstart, cval, tmask) for i in picks]
    dev = np.zeros(ctl.n_cells, np.int64)
    bound = np.full(ctl.n_cells, 5, np.int64)
    scratch = np.zeros((4, kernel.MAX_DIMS), np.int64)
    kernel.evaluate(
        order[0], order[1], 1, el.cats, nd, var, ptr, cstart, cval, base, dev, bound, scratch, tmask
    )  # compile
    clock = time.perf_counter()
    for i in picks:
        kernel.evaluate(
            order[i - 1], order[i], 1, el.cats, nd, var, ptr, cstart, cval, base, dev, bound, scratch, tmask
        )
    per_move = (time.perf_counter() - clock) / PAIRS
    unsafe = (el.counts == 1) | (el.counts == 2)
    swept = sweep(el, ctl, original, ranks, orders)
    return {
        "persons": persons,
        "phases": timed,
        "elementary_cells": int(el.counts.size),
        "unsafe_cells": int(unsafe.sum()),
        "records_in_unsafe_cells": int(el.counts[unsafe].sum()),
        "controlled_cells": int(ctl.n_cells),
        "controlled_total": int(original[ctl.base].sum()),
        "cells_changed_per_move": float(np.mean(touched)),
        "evaluate_us_per_move": round(per_move * 1e6, 1),
        "sweep": swept,
    }


def sweep(el: Any, ctl: Any, original: np.ndarray, ranks: np.ndarray, orders: np.ndarray) -> dict[str, Any]:
    """Model 2's first pass on ``SWEPT`` unsafe cells (random order, start bounds 3 / 5 plus ``w``), timed."""
    from cubeguard.methods.safe import kernel
    from cubeguard.methods.safe.controlled import weights

    unsafe = np.flatnonzero((el.counts == 1) | (el.counts == 2))
    order = unsafe[np.random.default_rng(1).permutation(unsafe.size)][: SWEPT + 10]
    lim = weights(original) + np.where(ctl.dims <= 1, 3, 5)
    y = el.counts.astype(np.int64).copy()
    dev = np.zeros(ctl.n_cells, np.int64)
    log = np.zeros((2 * order.size + 16, 3), np.int64)
    fixed, strides = el.fixed, ctl.strides
    n_log, _ = kernel.feasible_sweep(
        order[:10], 4, y, el.cats, ranks, orders, fixed, *ctl.arrays, dev, lim, log, 0, strides
    )
    clock = time.perf_counter()
    args = (4, y, el.cats, ranks, orders, fixed, *ctl.arrays, dev, lim, log, n_log, strides)
    n_after, made = kernel.feasible_sweep(order[10:], *args)
    seconds = time.perf_counter() - clock
    tmask = kernel.table_masks(ctl.nd, ctl.var)
    changed = [kernel.cells_changed(a, b, el.cats, *ctl.arrays[:5], tmask) for a, b, _ in log[n_log:n_after]]
    return {
        "cells": SWEPT,
        "moves": int(made),
        "us_per_cell": round(seconds / SWEPT * 1e6, 1),
        "cells_changed_per_move_made": float(np.mean(changed)) if changed else 0.0,
    }


def markdown(record: dict[str, Any]) -> str:
    """The results page: one column per census size, and the figures before this change."""
    m, runs = record["machine"], record["runs"]
    lines = [
        "# SAFE on the EU programme: the phases before model 2 (`benchmarks/safe_setup.py`)",
        "",
        f"`configs/eu2021.yaml`, its 103 cubes of all persons as controlled tables, on the synthetic census; "
        f"{m['cpus']} cores, Python {m['python']}, commit {m['commit']}, {m['date']}. Seconds (peak RSS MB); "
        "*before*: commit f7cf3ae (np.unique over rows, every elementary cell added to every controlled cell "
        "holding it), measured with these stages. " + RUN_NOTE,
        "",
        "| phase | 1M before | " + " | ".join(f"{r['persons']:,}" for r in runs) + " |",
        "| --- | ---: |" + " ---: |" * len(runs),
    ]
    for name in runs[0]["phases"]:
        before = f"{BEFORE_1M[name]:.1f}" if name in BEFORE_1M else "-"
        cells = [f"{r['phases'][name]['seconds']:.1f} ({r['phases'][name]['peak_rss_mb']:,.0f})" for r in runs]
        lines.append(f"| {name} | {before} | " + " | ".join(cells) + " |")
    lines.append("")
    for r in runs:
        hours = r["unsafe_cells"] * r["evaluate_us_per_move"] / 1e6 / 3600
        lines += [
            f"{r['persons']:,} persons: {r['elementary_cells']:,} elementary cells, {r['unsafe_cells']:,} of them 1 or 2 "
            f"({r['records_in_unsafe_cells']:,} records); {r['controlled_cells']:,} controlled cells. Moving one "
            f"record to its neighbour in the sort order changes {r['cells_changed_per_move']:,.0f} controlled cells "
            f"on average ({PAIRS:,} pairs); evaluating such a move against every bound takes "
            f"{r['evaluate_us_per_move']:,.0f} us. A pass of model 2 evaluates at least one move per unsafe cell (up "
            f"to 8, and it needs many passes): at least {hours:.1f} hours of one core per pass.",
            "",
        ]
        sw = r["sweep"]
        before = BEFORE_SWEEP_US.get(r["persons"])
        was = f" (commit bfa977c: {before:,.0f} us)" if before else ""
        pass_hours = r["unsafe_cells"] * sw["us_per_cell"] / 1e6 / 3600
        lines += [
            f"Model 2 itself, its first pass over {sw['cells']:,} unsafe cells in random order at the start bounds: "
            f"{sw['us_per_cell']:,.0f} us per unsafe cell{was}, {sw['moves']:,} moves made, each changing "
            f"{sw['cells_changed_per_move_made']:,.0f} controlled cells on average; at that rate one pass over all "
            f"{r['unsafe_cells']:,} unsafe cells takes {pass_hours:.1f} hours of one core.",
            "",
        ]
    lines.append(TRIED)
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--persons", type=int, nargs="+", default=[1_000_000, 10_000_000])
    args = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    record = {"machine": machine(), "runs": [phases(n) for n in args.persons]}
    print(write_results("safe_setup", record, markdown).read_text())


if __name__ == "__main__":
    main()

"""SAFE's quality report: deviations in the controlled cells, in the layout of Höhne (2011), Tables 3, 4a and 4b.

A controlled cell is counted once however many tables hold it: two cells are the same when they
cross the same codes of the same variables (a margin of one cube is a cell of another). Its
dimension is the number of variables it crosses (the paper's "table dimension"; the one-dimensional
bound applies to dimension 1). The grand total (dimension 0) and cells whose original count is 0
are left out: moves conserve the records and only go to combinations that occur, so both keep
their count exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
#: Table dimensions reported apart; larger ones are pooled (the paper pools 4 and 5).
DIMENSIONS = (1, 2, 3, 4)
_HASH_SEED = 20111026  # fixed: the identity of a cell must not depend on the release's seed


def cell_identity(tables: Sequence[Sequence[tuple[int, IntArray]]], n_codes: Sequence[int]) -> npt.NDArray[np.uint64]:
    """A 64-bit identity per controlled cell: the XOR of a random word per (variable, code) it crosses.

    ``tables`` gives per table and dimension (variable, code index of each selected code, -1 for
    the total); ``n_codes`` the number of codes per variable.
    """
    rng = np.random.default_rng(_HASH_SEED)
    words = [rng.integers(1, 2**63, size=n, dtype=np.int64).astype(np.uint64) for n in n_codes]
    out = []
    for table in tables:
        key = np.zeros((), dtype=np.uint64)
        for var, codes in table:
            w = np.where(codes >= 0, words[var][np.maximum(codes, 0)], np.uint64(0))
            key = np.bitwise_xor.outer(key, w) if key.ndim else np.bitwise_xor(key, w)
        out.append(np.asarray(key).ravel())
    return np.concatenate(out) if out else np.zeros(0, np.uint64)


def deviation_tables(
    identity: npt.NDArray[np.uint64], original: IntArray, deviation: IntArray, dims: npt.NDArray[np.int8]
) -> dict[str, Any]:
    """Tables 3, 4a and 4b of Höhne (2011) for the distinct controlled cells."""
    _, first = np.unique(identity, return_index=True)
    keep = first[(dims[first] > 0) & (original[first] > 0)]
    dev = np.abs(deviation[keep])
    dim = np.minimum(dims[keep].astype(np.int64), DIMENSIONS[-1])
    size = np.searchsorted(10 ** np.arange(1, 19, dtype=np.int64), original[keep], side="right")
    top = int(dev.max(initial=0))
    by_dim = {str(d): np.bincount(dev[dim == d], minlength=top + 1).tolist() for d in DIMENSIONS}
    sizes = []
    for s in range(int(size.max(initial=-1)) + 1):
        part = dev[size == s]
        if part.size:
            counts = np.bincount(part, minlength=top + 1)
            sizes.append(
                {
                    "from": 10**s,
                    "to": 10 ** (s + 1) - 1,
                    "cells": int(part.size),
                    "max_deviation": int(part.max()),
                    "cumulative_percent": [round(100 * float(c), 1) for c in np.cumsum(counts) / part.size],
                }
            )
    return {
        "cells": int(keep.size),
        "max_deviation": top,
        "by_dimension": by_dim,
        "max_by_dimension": {str(d): int(dev[dim == d].max(initial=0)) for d in DIMENSIONS},
        "by_size": sizes,
    }


def markdown(tables: dict[str, Any]) -> str:
    """The three tables as Markdown, in the paper's layout (dimension 4 means 4 or more)."""
    top = tables["max_deviation"]
    dims = [str(d) for d in DIMENSIONS]
    head = " | ".join(dims)
    lines = [f"| deviation | cells: {head} | cumulative %: {head} |", "|---|" + "---:|" * (2 * len(dims))]
    totals = {d: max(1, sum(tables["by_dimension"][d])) for d in dims}
    running = dict.fromkeys(dims, 0)
    for k in range(top + 1):
        counts = [tables["by_dimension"][d][k] for d in dims]
        for d, c in zip(dims, counts, strict=True):
            running[d] += c
        share = [f"{100 * running[d] / totals[d]:.1f}" for d in dims]
        lines.append(f"| {k} | " + " | ".join(f"{c:,}" for c in counts) + " | " + " | ".join(share) + " |")
    lines += ["", "| cell size | cells | max deviation |", "|---|---:|---:|"]
    lines += [f"| {s['from']:,} - {s['to']:,} | {s['cells']:,} | {s['max_deviation']} |" for s in tables["by_size"]]
    lines += [
        "",
        "| cell size | " + " | ".join(f"<= {k}" for k in range(top + 1)) + " |",
        "|---|" + "---:|" * (top + 1),
    ]
    lines += [
        f"| {s['from']:,} - {s['to']:,} | " + " | ".join(f"{p:.1f}" for p in s["cumulative_percent"]) + " |"
        for s in tables["by_size"]
    ]
    return "\n".join(lines)


def describe(report: dict[str, Any]) -> str:
    """The step's internal report as Markdown: sizes, the bound schedule reached, Tables 3, 4a and 4b."""
    final = report["final_bounds"]
    lines = [
        f"# {report['name']}: SAFE (Höhne 2011)",
        "",
        f"{report['records']:,} records over {len(report['variables'])} variables ({', '.join(report['variables'])}); "
        f"{report['elementary_cells']:,} elementary cells, {report['unsafe_cells_before']:,} of them 1 or 2 before; "
        f"{report['records_moved']:,} records moved in {report['moves']:,} moves, {report['cells_emptied']:,} cells "
        f"emptied; {report['controlled_tables']} controlled tables, {report['controlled_cells']:,} cells. Final bounds "
        f"{final['one']} (one variable) and {final['other']} (more), weights lowered by {final['correction_step']} "
        f"(Table 2); {report['seconds']:.1f} s.",
        "",
        schedule_markdown(report["schedule"]),
        "",
        markdown(report["deviations"]),
    ]
    return "\n".join(lines) + "\n"


def schedule_markdown(schedule: list[dict[str, Any]]) -> str:
    """The bound schedule reached: model 2's first feasible solution, then each tightening of model 3."""
    lines = [
        "| model | correction step | b (1-dim) | b (other) | moves | cells out of bound | kept | seconds |",
        "|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    lines += [
        f"| {s['model']} | {s['correction_step']} | {s['bound_one']} | {s['bound_other']} | {s['moves']:,} | "
        f"{s['violations']:,} | {'yes' if s['accepted'] else 'undone'} | {s['seconds']:.2f} |"
        for s in schedule
    ]
    return "\n".join(lines)

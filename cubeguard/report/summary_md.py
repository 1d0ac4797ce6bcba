"""A short markdown summary of a release run (gates, cubes), for the Prefect UI's artifacts tab.

Built only from the flow's public summary: cube sizes, gate outcomes and what protection changed,
never a parameter value of a step (the rounding tables show the measures, not the base and steps).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from cubeguard.report import rounding
from cubeguard.report.gate_names import NOTHING

MAX_ROWS = 40


def _table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _gates(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "No gate is configured."
    worst = sorted(rows, key=lambda r: {"fail": 0, "error": 1, "warn": 2}.get(str(r["status"]), 3))
    shown = [(r["status"], r["cube"], r["expectation"], NOTHING if r["observed"] is None else r["observed"],
              r.get("required", "")) for r in worst[:MAX_ROWS]]  # fmt: skip
    more = f"\n\n{len(rows) - MAX_ROWS} more checks in the internal Data Docs." if len(rows) > MAX_ROWS else ""
    counts = {s: sum(r["status"] == s for r in rows) for s in ("pass", "warn", "fail", "error")}
    head = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    return f"{head}\n\n" + _table(["status", "cube", "check", "observed", "required"], shown) + more


def _cubes(result: dict[str, Any]) -> str:
    protection = {p["cube_id"]: p for p in result.get("protection", [])}
    rows = []
    for c in result.get("cubes", [])[:MAX_ROWS]:
        p = protection.get(c["cube_id"], {})
        changed = p.get("changed_share")
        rows.append(
            (c["cube_id"], c["dims"], f"{c['cells']:,}", f"{c['zero_share']:.1%}",
             ", ".join(p.get("steps", [])) or "-", "" if changed is None else f"{changed:.1%}")
        )  # fmt: skip
    return _table(["cube", "dims", "cells", "zeros", "steps", "cells changed"], rows)


# Measures shown in the UI; not max_abs_deviation, which would tell the cell key method's D.
MEASURES = (
    "average_absolute_distance@interior",
    "rad@interior",
    "hellinger@interior",
    "small_cells_unchanged@interior",
)


def _measures(measures: pd.DataFrame | None) -> str:
    if measures is None or measures.empty:
        return "No measures."
    cols = [c for c in MEASURES if c in measures.columns]
    rows = [(cube, *(f"{measures.at[cube, c]:.4g}" for c in cols)) for cube in measures.index[:MAX_ROWS]]
    return _table(["cube", *(c.split("@")[0] for c in cols)], rows)


def _rounding(measures: pd.DataFrame | None) -> list[str]:
    """A heading and one small table per cube published by rounding to a base; nothing if no cube is."""
    cubes = rounding.rounded_cubes(measures) if measures is not None else []
    if not cubes:
        return []
    parts = ["## Rounding (every cell)", rounding.EXPLANATION]
    for c in cubes[:MAX_ROWS]:
        rows = [(name, f"{value:.4g}") for name, value in c.values["value"].items()]
        parts.append(f"**{c.cube}**\n\n" + _table(["measure", "value"], rows))
    if len(cubes) > MAX_ROWS:
        parts.append(f"{len(cubes) - MAX_ROWS} more rounded cubes in the internal report.")
    return parts


def release_markdown(result: dict[str, Any], measures: pd.DataFrame | None = None) -> str:
    """The markdown of one release run's artifact (``measures``: one row per cube, as the measure step writes)."""
    cubes = result.get("cubes", [])
    cells = sum(c["cells"] for c in cubes)
    return "\n\n".join(
        [
            f"# Release {result.get('release_id', '')}",
            f"Published to `{result.get('published', '')}`: {len(cubes)} cubes, {cells:,} cells.",
            "## Gates",
            _gates(result.get("gate_rows", [])),
            "## Cubes",
            _cubes(result),
            "## Measures (interior cells)",
            _measures(measures),
            *_rounding(measures),
            *_steps(result.get("steps", [])),
        ]
    )


def _steps(rows: list[dict[str, Any]]) -> list[str]:
    """The run's steps with their wall and CPU seconds (none for a summary without them)."""
    if not rows:
        return []
    table = _table(["step", "seconds", "CPU seconds"], [(r["step"], r["seconds"], r["cpu_seconds"]) for r in rows])
    return ["## Steps", table]

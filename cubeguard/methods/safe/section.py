"""SAFE's section of the release report: what each SAFE step moved, why it stopped, and its deviation tables.

Read from the step's internal report (``internal/<step name>_report.json``, written by
:func:`cubeguard.methods.safe.method.apply`): records moved, elementary cells, the bound schedule
and the bounds reached, the stop rule that ended model 3 (``target``, ``max_tightenings`` or the
machine-dependent ``time_limit``), and the deviations of the controlled cells in the layout of
Höhne (2011), Tables 3 and 4. The seed is secret and is not in the step's report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from cubeguard.methods.section import Heading, Part, Section, Table, Text

ANCHOR = "safe-section"
TITLE = "SAFE"
STOPS = {
    "target": "reached the target bounds (nothing left to tighten); the same on every machine",
    "max_tightenings": "stopped after max_tightenings tightenings; the same on every machine",
    "time_limit": (
        "stopped by time_limit, which depends on the machine's speed: 'cubeguard audit reproduce' may not rebuild "
        "this release; use max_tightenings or time_limit: null for a stop that is the same everywhere"
    ),
}


def _facts(report: Mapping[str, Any]) -> pd.DataFrame:
    final = report.get("final_bounds") or {}
    facts = {
        "records": report.get("records"),
        "records moved": report.get("records_moved"),
        "elementary cells": report.get("elementary_cells"),
        "elementary cells of 1 or 2 before": report.get("unsafe_cells_before"),
        "elementary cells emptied": report.get("cells_emptied"),
        "controlled tables / cells": f"{report.get('controlled_tables')} / {report.get('controlled_cells')}",
        "final bound, one-dimensional cells": final.get("one"),
        "final bound, other cells": final.get("other"),
        "seconds": report.get("seconds"),
    }
    return pd.DataFrame(
        {"value": pd.Series(list(facts.values()), dtype=object).to_numpy()}, index=pd.Index(list(facts), name="fact")
    )


def _schedule(report: Mapping[str, Any]) -> pd.DataFrame:
    rows = report.get("schedule") or []
    keep = ("model", "correction_step", "bound_one", "bound_other", "moves", "violations", "accepted")
    return pd.DataFrame([{k: r.get(k) for k in keep} for r in rows]) if rows else pd.DataFrame()


def _by_dimension(report: Mapping[str, Any]) -> pd.DataFrame:
    by_dim = (report.get("deviations") or {}).get("by_dimension") or {}
    if not by_dim:
        return pd.DataFrame()
    frame = pd.DataFrame.from_dict(by_dim, orient="index")
    frame.columns = [f"|d| = {c}" for c in frame.columns]
    return frame.rename_axis("table dimension")


def _step(report: Mapping[str, Any]) -> list[Part]:
    name = str(report.get("name", ""))
    stop = str(report.get("stopped_by", ""))
    said = STOPS.get(stop, "not recorded (a report written before the stop rule was recorded)")
    parts: list[Part] = [Heading(f"{name} (safe)"), Text(f"Model 3 {said}."), Table(_facts(report))]
    schedule = _schedule(report)
    if not schedule.empty:
        parts.append(Table(schedule, caption="the bound schedule, stage by stage", index=False))
    dims = _by_dimension(report)
    if not dims.empty:
        parts.append(Table(dims, caption="controlled cells by table dimension and absolute deviation (Table 3)"))
    return parts


def section(reports: Sequence[Mapping[str, Any]]) -> Section | None:
    """The section for the SAFE steps' internal reports, in step order; None when there is none."""
    if not reports:
        return None
    intro = Text(
        "What each pre-tabular SAFE step did (Höhne 2011): records moved until every elementary cell holds 0 or at "
        "least 3, every controlled cell within its bound. The seed is secret and is not shown."
    )
    return Section(ANCHOR, TITLE, [intro, *(p for r in reports for p in _step(r))])

"""The swapping methods' section of the release report: what each swap step moved, where, and to what effect.

Read from the step's internal report (``internal/<step name>_report.json``, written by every swap
method through :func:`cubeguard.methods.swap_report.swapped`): households and persons swapped, per
hierarchy level and per area (the ten areas with most), the must-swap households per level
(targeted swapping), the units left without a partner by reason, and the effect on the step's
``report_cubes`` (information loss, r#, and the success measures of Frend et al. 2011, section 4).
The swap rate and seed are secret and are not in the step's report. Every swapping method names
:func:`section` as its hook, so their steps share one section.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from cubeguard.methods.section import Heading, Part, Section, Table, Text

ANCHOR = "swap-section"
TITLE = "Record swapping"
TOP_AREAS = 10
_EFFECTS = ("rad@interior", "hellinger@interior", "entropy_risk_original@interior",
            "entropy_risk_protected@interior", "swap_removed_share@cube", "swap_false_share@cube")  # fmt: skip


def _levels(report: Mapping[str, Any]) -> pd.DataFrame:
    must = report.get("must_swap_households_per_level", {})
    rows = {
        level: {
            "households swapped": data.get("households"),
            "persons swapped": data.get("persons"),
            "areas": len(data.get("areas", {})),
            **({"must-swap households": must.get(level)} if must else {}),
        }
        for level, data in report.get("per_level", {}).items()
    }
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("level")


def _areas(report: Mapping[str, Any]) -> pd.DataFrame:
    rows = [
        {"level": level, "area": area, "households": counts.get("households"), "persons": counts.get("persons")}
        for level, data in report.get("per_level", {}).items()
        for area, counts in data.get("areas", {}).items()
    ]
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame(rows)
    key = "households" if frame["households"].notna().any() else "persons"
    return frame.sort_values([key, "level", "area"], ascending=[False, True, True]).head(TOP_AREAS).set_index("level")


def _effects(report: Mapping[str, Any]) -> pd.DataFrame:
    effects = report.get("cube_effects") or {}
    rows = {cube: {k: values.get(k) for k in _EFFECTS if k in values} for cube, values in effects.items()}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("cube") if rows else pd.DataFrame()


def _step(report: Mapping[str, Any]) -> list[Part]:
    name, method = str(report.get("name", "")), str(report.get("method", ""))
    households, persons = report.get("households_swapped"), report.get("persons_swapped")
    moved = f"{households:,} households, " if isinstance(households, int) else ""
    parts: list[Part] = [Heading(f"{name} ({method})"), Text(f"Swapped: {moved}{int(persons or 0):,} persons.")]
    levels = _levels(report)
    if not levels.empty:
        parts.append(Table(levels, caption="per level of the swap hierarchy"))
    areas = _areas(report)
    if not areas.empty:
        parts.append(Table(areas, caption=f"the {len(areas)} areas with most swapped units"))
    reasons = report.get("not_swapped_by_reason") or {}
    if reasons:
        frame = pd.DataFrame({"units": reasons}).rename_axis("reason")
        parts.append(Table(frame, caption="units that needed a swap and found no partner"))
    effects = _effects(report)
    if not effects.empty:
        parts.append(Table(effects, caption="effect on the step's report cubes (Frend et al. 2011, section 4)"))
    return parts


def section(reports: Sequence[Mapping[str, Any]]) -> Section | None:
    """The section for the swap steps' internal reports, in step order; None when there is none."""
    if not reports:
        return None
    intro = Text(
        "What each pre-tabular swap step moved (Shlomo 2009, 3.1; Frend et al. 2011). The swap rates and seeds are "
        "secret and are not shown."
    )
    return Section(ANCHOR, TITLE, [intro, *(p for r in reports for p in _step(r))])

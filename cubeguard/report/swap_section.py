"""The report's section on record swapping: what each swap step moved, where, and to what effect.

Read from the step's internal report (``internal/<step name>_report.json``, written by every swap
method through :func:`cubeguard.methods.swapping.swapped`): households and persons swapped, per
hierarchy level and per area (the ten areas with most), the must-swap households per level
(targeted swapping), the units left without a partner by reason, and the effect on the step's
``report_cubes`` (information loss, r#, and the success measures of Frend et al. 2011, section 4).
The swap rate and seed are secret and are not in the step's report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from cubeguard.report._markup import esc, table

ANCHOR = "swap-section"
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


def _step(report: Mapping[str, Any]) -> str:
    name, method = str(report.get("name", "")), str(report.get("method", ""))
    households, persons = report.get("households_swapped"), report.get("persons_swapped")
    moved = f"{households:,} households, " if isinstance(households, int) else ""
    parts = [f"<h3>{esc(name)} ({esc(method)})</h3>", f"<p>Swapped: {moved}{int(persons or 0):,} persons.</p>"]
    levels = _levels(report)
    if not levels.empty:
        parts.append(table(levels, caption="per level of the swap hierarchy"))
    areas = _areas(report)
    if not areas.empty:
        parts.append(table(areas, caption=f"the {len(areas)} areas with most swapped units"))
    reasons = report.get("not_swapped_by_reason") or {}
    if reasons:
        frame = pd.DataFrame({"units": reasons}).rename_axis("reason")
        parts.append(table(frame, caption="units that needed a swap and found no partner"))
    effects = _effects(report)
    if not effects.empty:
        parts.append(table(effects, caption="effect on the step's report cubes (Frend et al. 2011, section 4)"))
    return "".join(parts)


def swap_section(reports: Sequence[Mapping[str, Any]]) -> str:
    """HTML of the section for the swap steps' reports, in step order; empty when there is none."""
    if not reports:
        return ""
    intro = (
        f'<h2 id="{ANCHOR}">Record swapping</h2><p>What each pre-tabular swap step moved (Shlomo 2009, 3.1; '
        "Frend et al. 2011). The swap rates and seeds are secret and are not shown.</p>"
    )
    return intro + "".join(_step(r) for r in reports)

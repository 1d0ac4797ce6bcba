"""What the record-swapping methods share: their internal report (units swapped per level and area), id checks.

Each swapping method's ``apply`` (``cubeguard.methods.<method>``) describes its result with
:func:`swapped`: per level, the units and persons swapped and, per area (the unit's code at the
level where it was swapped, before the swap), their counts; the cases left without a partner with
their reason; and method details.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from cubeguard.errors import InternalError
from cubeguard.methods.base import Swapped
from cubeguard.methods.context import CheckContext, Problem


def household_units(
    frame: pd.DataFrame, hid: str, swap_level: pd.Series, area_columns: tuple[str, ...] | None = None
) -> pd.DataFrame:
    """Per household (indexed as ``swap_level``): swap level, area code there before the swap, persons.

    ``area_columns`` fixes the columns whose values are the area (joined by ``/``); by default the
    column named by the household's swap level.
    """
    first = frame.drop_duplicates(hid).set_index(hid)
    persons = frame[hid].value_counts().reindex(swap_level.index).to_numpy()
    area = pd.Series(None, index=swap_level.index, dtype=object)
    swapped = swap_level.notna().to_numpy()
    if area_columns is not None:
        area[swapped] = joined(first.loc[swap_level.index[swapped]], area_columns)
    else:
        for name in swap_level.dropna().unique():
            rows = (swap_level == name).to_numpy()
            area[rows] = first.loc[swap_level.index[rows], name].astype(str).to_numpy()
    return pd.DataFrame({"level": swap_level.to_numpy(), "area": area.to_numpy(), "persons": persons})


def joined(frame: pd.DataFrame, columns: tuple[str, ...]) -> list[str]:
    """Per row, the values of ``columns`` joined by ``/`` (an area named by several columns)."""
    parts = [frame[c].astype(str).to_numpy() for c in columns]
    return ["/".join(v) for v in zip(*parts, strict=True)]


def swapped(
    data: pd.DataFrame,
    moved: list[str],
    units: pd.DataFrame,
    failed: pd.DataFrame,
    details: dict[str, Any],
    households: bool,
) -> Swapped:
    """Per-level and per-area counts of the swapped units, and the cases without a partner."""
    done = units[units["level"].notna()]
    per_level: dict[str, Any] = {}
    for level, rows in done.groupby("level", sort=False):
        areas = rows.groupby("area", sort=True)["persons"].agg(["size", "sum"])
        per_level[str(level)] = {
            **({"households": len(rows)} if households else {}),
            "persons": int(rows["persons"].sum()),
            "areas": {
                str(a): {**({"households": int(n)} if households else {}), "persons": int(p)}
                for a, (n, p) in areas.iterrows()
            },
        }
    n_persons = int(done["persons"].sum())
    n_households = len(done) if households else None
    if sum(v["persons"] for v in per_level.values()) != n_persons:
        raise InternalError("swap report counts do not add up; this is a bug in cubeguard")
    not_swapped = [
        {"id": str(i), "level": None if pd.isna(lv) else str(lv), "reason": str(r)}
        for i, lv, r in zip(failed.index, failed["level"], failed["reason"], strict=True)
    ]
    report = {
        "households_swapped": n_households,
        "persons_swapped": n_persons,
        "per_level": per_level,
        "not_swapped_by_reason": counts(failed["reason"].astype(str)),
        "not_swapped": not_swapped,
        **details,
    }
    return Swapped(data, moved, n_households, n_persons, report)


def counts(values: pd.Series) -> dict[str, int]:
    """How often each value occurs, by its text, in sorted order (JSON-ready)."""
    return {str(k): int(v) for k, v in values.value_counts(sort=False).sort_index().items()}


def needs_household_id(step: Any, ctx: CheckContext, key: str = "household_id") -> list[Problem]:
    """A problem unless the step (its ``key``) or the input names a household id column."""
    if getattr(step, key) or ctx.household_id:
        return []
    return [((key,), f"this swap needs a household id; set input.household_id or the step's {key}")]

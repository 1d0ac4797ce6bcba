"""One function per record-swapping variant of a ``pre_tabular`` step: swap a frame, describe it.

Each takes the frame of the columns the method needs (:func:`needed_columns`), the method's
parameters and the seed, and returns a :class:`Swapped`: the swapped frame, the columns to put back
into the microdata, and the step's internal report, with units and persons swapped per level and
per area (the unit's area code at the level where it was swapped, before the swap) and the cases
left without a partner with their reason.

* targeted_swap: targeted record swapping (Handbook on SDC v2, 5.6.1; sdcMicro recordSwap);
* random_swap: random record swapping within strata (seed 000, Shlomo 2009, section 3.1);
* ons_household_swap: ONS household swapping (seed 003, Frend et al. 2011, section 2);
* ons_communal_swap: ONS communal-establishment swapping (seed 003, Frend et al. 2011, section 3).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from cubeguard.config.swap_params import SwapParams, cap_column
from cubeguard.errors import InternalError
from cubeguard.swap import (
    OnsCommunalSwapParams,
    OnsHouseholdSwapParams,
    RandomSwapParams,
    TargetedSwapParams,
    ons_communal_swap,
    ons_household_swap,
    random_swap,
    targeted_swap,
)
from cubeguard.swap.ons_communal import CANDIDATES_USED, NO_CANDIDATE

NO_PARTNER_RANDOM = "no unsampled unit of the stratum with other swap values was left"
NO_PARTNER_ONS = "no unsampled household of the same size and matching variables in the delivery group"


@dataclass(frozen=True)
class Swapped:
    """A swapped frame and what the step's internal report says about it.

    Attributes:
        data: the swapped frame (same rows and order).
        moved: the columns the swap may have changed.
        households: households swapped (``None`` when persons, not households, are the units).
        persons: persons (records) swapped.
        report: per-level and per-area counts, cases without a partner, method details.
    """

    data: pd.DataFrame
    moved: list[str]
    households: int | None
    persons: int
    report: dict[str, Any]


def needed_columns(params: SwapParams, caps: dict[str, int] | None = None) -> list[str]:
    """Columns of the microdata the method reads (capped similarity columns by their source)."""
    p = params
    if isinstance(p, TargetedSwapParams):
        uncapped = {cap_column(c): c for c in caps or {}}
        similar = [uncapped.get(c, c) for c in p.similarity_columns]
        cols = [p.household_id, *p.hierarchy, *similar, *p.risk_variables, *p.carry_along]
    elif isinstance(p, RandomSwapParams):
        cols = [*([p.unit_id] if p.unit_id else []), *p.swap_columns, *p.strata, *p.carry_along]
    elif isinstance(p, OnsHouseholdSwapParams):
        optional = [c for c in (p.delivery_group, p.imputed) if c is not None]
        matching = [c for profile in p.matching for c in profile]
        cols = [p.household_id, *p.hierarchy, p.household_size, *matching, *p.risk_variables, *p.carry_along, *optional]
    else:
        optional = [c for c in (p.imputed, p.family_staff_column, p.person_id) if c is not None]
        person = [p.age, *p.risk_variables, *p.matching.columns, *optional]
        cols = [p.resident_group, p.establishment_id, *p.establishment_columns, *person]
    return list(dict.fromkeys(cols))


def swap(frame: pd.DataFrame, params: SwapParams, seed: int) -> Swapped:
    """Run the method of ``params`` on ``frame``."""
    runner: Callable[[pd.DataFrame, Any, int], Swapped] = _RUNNERS[type(params)]
    return runner(frame, params, seed)


def _targeted(frame: pd.DataFrame, params: TargetedSwapParams, seed: int) -> Swapped:
    result = targeted_swap(frame, params, seed)
    units = _household_units(frame, params.household_id, result.swap_level.astype(object))
    failed = result.no_donor.assign(level=result.no_donor["level"].astype(object))
    details = {
        "must_swap_households_per_level": {str(k): int(v) for k, v in result.must_swap_counts.items()},
        "matched_profile": _counts(result.matched_profile.dropna()),
    }
    return _swapped(result.data, [*params.hierarchy, *params.carry_along], units, failed, details, households=True)


def _random(frame: pd.DataFrame, params: RandomSwapParams, seed: int) -> Swapped:
    result = random_swap(frame, params, seed)
    level = "+".join(params.swap_columns)
    moved = result.partner.to_numpy() != result.partner.index.to_numpy()
    swap_level = pd.Series(pd.NA, index=result.partner.index, dtype=object).mask(moved, level)
    if params.unit_id is None:
        units = pd.DataFrame(
            {"level": swap_level.to_numpy(), "area": _joined(frame, params.swap_columns), "persons": 1}
        )
    else:
        units = _household_units(frame, params.unit_id, swap_level, params.swap_columns)
    failed = pd.DataFrame({"level": level, "reason": NO_PARTNER_RANDOM}, index=result.no_partner)
    return _swapped(
        result.data, [*params.swap_columns, *params.carry_along], units, failed, {}, params.unit_id is not None
    )


def _ons_household(frame: pd.DataFrame, params: OnsHouseholdSwapParams, seed: int) -> Swapped:
    result = ons_household_swap(frame, params, seed)
    units = _household_units(frame, params.household_id, result.swap_level.astype(object))
    failed = pd.DataFrame({"level": None, "reason": NO_PARTNER_ONS}, index=result.no_partner)
    details = {
        "sampled_households": int(result.sampled.sum()),
        "high_risk_households": int(result.high_risk.sum()),
        "households_unique_at_level": _counts(result.unique_level.dropna().astype(str)),
        "matched_profile": _counts(result.matched_profile.dropna()),
    }
    return _swapped(result.data, [*params.hierarchy, *params.carry_along], units, failed, details, households=True)


def _ons_communal(frame: pd.DataFrame, params: OnsCommunalSwapParams, seed: int) -> Swapped:
    result = ons_communal_swap(frame, params, seed)
    records = result.records
    by_id = frame.set_index(params.person_id) if params.person_id is not None else frame
    level = records["swap_level"].astype(object).where(records["swapped"].to_numpy(), None)
    area = pd.Series(None, index=records.index, dtype=object)
    for name in params.hierarchy:
        rows = (level == name).to_numpy()
        area[rows] = by_id.loc[records.index[rows], name].astype(str).to_numpy()
    units = pd.DataFrame({"level": level.to_numpy(), "area": area.to_numpy(), "persons": 1})
    failed = result.unmatched.assign(level=None)
    bands = {b: _counts(result.cells[b].astype(str)) for b in ("client_band", "staff_band")}
    groups = records.groupby("resident_group", observed=False)[["sampled", "swapped"]].sum()
    details = {
        "score_cells_per_band": bands,
        "per_resident_group": {str(g): {k: int(v) for k, v in row.items()} for g, row in groups.iterrows()},
        "reasons": {"no_candidate": NO_CANDIDATE, "candidates_used": CANDIDATES_USED},
    }
    return _swapped(result.data, params.moved_columns, units, failed, details, households=False)


def _household_units(
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
        area[swapped] = _joined(first.loc[swap_level.index[swapped]], area_columns)
    else:
        for name in swap_level.dropna().unique():
            rows = (swap_level == name).to_numpy()
            area[rows] = first.loc[swap_level.index[rows], name].astype(str).to_numpy()
    return pd.DataFrame({"level": swap_level.to_numpy(), "area": area.to_numpy(), "persons": persons})


def _joined(frame: pd.DataFrame, columns: tuple[str, ...]) -> list[str]:
    parts = [frame[c].astype(str).to_numpy() for c in columns]
    return ["/".join(v) for v in zip(*parts, strict=True)]


def _swapped(
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
        "not_swapped_by_reason": _counts(failed["reason"].astype(str)),
        "not_swapped": not_swapped,
        **details,
    }
    return Swapped(data, moved, n_households, n_persons, report)


def _counts(values: pd.Series) -> dict[str, int]:
    return {str(k): int(v) for k, v in values.value_counts(sort=False).sort_index().items()}


_RUNNERS: dict[type, Callable[[pd.DataFrame, Any, int], Swapped]] = {
    TargetedSwapParams: _targeted,
    RandomSwapParams: _random,
    OnsHouseholdSwapParams: _ons_household,
    OnsCommunalSwapParams: _ons_communal,
}

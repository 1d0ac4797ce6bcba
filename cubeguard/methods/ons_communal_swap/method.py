"""ONS communal-establishment swapping as a release step: columns read, checks, public parameters, apply."""

from __future__ import annotations

import pandas as pd

from cubeguard.methods.base import Swapped
from cubeguard.methods.context import CheckContext, Problem
from cubeguard.methods.ons_communal_swap.kernel import CANDIDATES_USED, NO_CANDIDATE, ons_communal_swap
from cubeguard.methods.ons_communal_swap.model import OnsCommunalSwapStep
from cubeguard.methods.swap_report import counts, needs_household_id, swapped


def columns(step: OnsCommunalSwapStep) -> list[str]:
    """Microdata columns the step reads."""
    assert step.establishment_id is not None  # filled in by with_ids; checked when the config loads
    optional = [c for c in (step.imputed, step.family_staff_column, step.person_id) if c is not None]
    person = [step.age, *step.risk_variables, *step.matching.columns, *optional]
    return list(dict.fromkeys([step.resident_group, step.establishment_id, *step.establishment_columns, *person]))


def apply(frame: pd.DataFrame, step: OnsCommunalSwapStep, seed: int) -> Swapped:
    """Swap ``frame``'s communal residents and describe the swap (bands, resident groups)."""
    result = ons_communal_swap(frame, step, seed)
    records = result.records
    by_id = frame.set_index(step.person_id) if step.person_id is not None else frame
    level = records["swap_level"].astype(object).where(records["swapped"].to_numpy(), None)
    area = pd.Series(None, index=records.index, dtype=object)
    for name in step.hierarchy:
        rows = (level == name).to_numpy()
        area[rows] = by_id.loc[records.index[rows], name].astype(str).to_numpy()
    units = pd.DataFrame({"level": level.to_numpy(), "area": area.to_numpy(), "persons": 1})
    failed = result.unmatched.assign(level=None)
    bands = {b: counts(result.cells[b].astype(str)) for b in ("client_band", "staff_band")}
    groups = records.groupby("resident_group", observed=False)[["sampled", "swapped"]].sum()
    details = {
        "score_cells_per_band": bands,
        "per_resident_group": {str(g): {k: int(v) for k, v in row.items()} for g, row in groups.iterrows()},
        "reasons": {"no_candidate": NO_CANDIDATE, "candidates_used": CANDIDATES_USED},
    }
    return swapped(result.data, step.moved_columns, units, failed, details, households=False)


def public(step: OnsCommunalSwapStep) -> dict[str, object]:
    """The geography levels swapped; never rates, seeds, matching or risk variables."""
    return {"hierarchy": list(step.hierarchy)}


def check(step: OnsCommunalSwapStep, ctx: CheckContext) -> list[Problem]:
    """An establishment (household) id is known."""
    return needs_household_id(step, ctx, "establishment_id")

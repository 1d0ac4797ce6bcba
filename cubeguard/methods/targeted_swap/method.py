"""Targeted record swapping as a release step: columns read, config checks, public parameters, apply."""

from __future__ import annotations

import pandas as pd

from cubeguard.methods.base import Swapped
from cubeguard.methods.context import CheckContext, Problem
from cubeguard.methods.swap_report import counts, household_units, needs_household_id, swapped
from cubeguard.methods.targeted_swap.kernel import targeted_swap
from cubeguard.methods.targeted_swap.model import TargetedSwapStep, cap_column


def columns(step: TargetedSwapStep) -> list[str]:
    """Microdata columns the step reads (capped similarity columns by their source)."""
    assert step.household_id is not None  # filled in by with_ids; checked when the config loads
    cols = [step.household_id, *step.hierarchy, *step.similarity_columns, *step.risk_variables, *step.carry_along]
    return list(dict.fromkeys([*cols, *(step.risk_columns or ())]))


def apply(frame: pd.DataFrame, step: TargetedSwapStep, seed: int) -> Swapped:
    """Swap ``frame`` and describe the swap (must-swap households per level, profiles matched)."""
    for col, cap in step.caps.items():
        frame[cap_column(col)] = pd.to_numeric(frame[col]).clip(upper=cap)
    params = step.capped()
    result = targeted_swap(frame, params, seed)
    assert params.household_id is not None
    units = household_units(frame, params.household_id, result.swap_level.astype(object))
    failed = result.no_donor.assign(level=result.no_donor["level"].astype(object))
    details = {
        "must_swap_households_per_level": {str(k): int(v) for k, v in result.must_swap_counts.items()},
        "matched_profile": counts(result.matched_profile.dropna()),
    }
    data = result.data.drop(columns=[cap_column(c) for c in step.caps])
    return swapped(data, [*params.hierarchy, *params.carry_along], units, failed, details, households=True)


def public(step: TargetedSwapStep) -> dict[str, object]:
    """The geography levels swapped; never rates, k-anonymity, seeds, similarity or risk variables."""
    return {"hierarchy": list(step.hierarchy)}


def check(step: TargetedSwapStep, ctx: CheckContext) -> list[Problem]:
    """A household id is known."""
    return needs_household_id(step, ctx)

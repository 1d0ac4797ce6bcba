"""ONS household swapping as a release step: columns read, config checks, public parameters, apply."""

from __future__ import annotations

import pandas as pd

from cubeguard.methods.base import Swapped
from cubeguard.methods.context import CheckContext, Problem
from cubeguard.methods.ons_household_swap.kernel import ons_household_swap
from cubeguard.methods.ons_household_swap.model import OnsHouseholdSwapStep
from cubeguard.methods.swap_report import counts, household_units, needs_household_id, swapped

NO_PARTNER = "no unsampled household of the same size and matching variables in the delivery group"


def columns(step: OnsHouseholdSwapStep) -> list[str]:
    """Microdata columns the step reads."""
    assert step.household_id is not None  # filled in by with_ids; checked when the config loads
    optional = [c for c in (step.delivery_group, step.imputed) if c is not None]
    matching = [c for profile in step.matching for c in profile]
    cols = [step.household_id, *step.hierarchy, step.household_size, *matching, *step.risk_variables]
    return list(dict.fromkeys([*cols, *step.carry_along, *optional]))


def apply(frame: pd.DataFrame, step: OnsHouseholdSwapStep, seed: int) -> Swapped:
    """Swap ``frame`` and describe the swap (sampled and high-risk households, uniques, profiles)."""
    assert step.household_id is not None
    result = ons_household_swap(frame, step, seed)
    units = household_units(frame, step.household_id, result.swap_level.astype(object))
    failed = pd.DataFrame({"level": None, "reason": NO_PARTNER}, index=result.no_partner)
    details = {
        "sampled_households": int(result.sampled.sum()),
        "high_risk_households": int(result.high_risk.sum()),
        "households_unique_at_level": counts(result.unique_level.dropna().astype(str)),
        "matched_profile": counts(result.matched_profile.dropna()),
    }
    return swapped(result.data, [*step.hierarchy, *step.carry_along], units, failed, details, households=True)


def public(step: OnsHouseholdSwapStep) -> dict[str, object]:
    """The geography levels swapped; never rates, thresholds, seeds, matching or risk variables."""
    return {"hierarchy": list(step.hierarchy)}


def check(step: OnsHouseholdSwapStep, ctx: CheckContext) -> list[Problem]:
    """A household id is known."""
    return needs_household_id(step, ctx)

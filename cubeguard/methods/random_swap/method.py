"""Random record swapping as a release step: columns read, config checks, public parameters, apply."""

from __future__ import annotations

import pandas as pd

from cubeguard.methods.base import Swapped
from cubeguard.methods.context import CheckContext, Problem
from cubeguard.methods.random_swap.kernel import random_swap
from cubeguard.methods.random_swap.model import RandomSwapStep
from cubeguard.methods.swap_report import household_units, joined, needs_household_id, swapped

NO_PARTNER = "no unsampled unit of the stratum with other swap values was left"


def columns(step: RandomSwapStep) -> list[str]:
    """Microdata columns the step reads."""
    unit = [step.unit_id] if step.unit_id else []
    return list(dict.fromkeys([*unit, *step.swap_columns, *step.strata, *step.carry_along]))


def apply(frame: pd.DataFrame, step: RandomSwapStep, seed: int) -> Swapped:
    """Swap ``frame`` and describe the swap."""
    result = random_swap(frame, step, seed)
    level = "+".join(step.swap_columns)
    moved = result.partner.to_numpy() != result.partner.index.to_numpy()
    swap_level = pd.Series(pd.NA, index=result.partner.index, dtype=object).mask(moved, level)
    if step.unit_id is None:
        units = pd.DataFrame({"level": swap_level.to_numpy(), "area": joined(frame, step.swap_columns), "persons": 1})
    else:
        units = household_units(frame, step.unit_id, swap_level, step.swap_columns)
    failed = pd.DataFrame({"level": level, "reason": NO_PARTNER}, index=result.no_partner)
    return swapped(result.data, [*step.swap_columns, *step.carry_along], units, failed, {}, step.unit_id is not None)


def public(step: RandomSwapStep) -> dict[str, object]:
    """What is exchanged between partners; never swap_rate, seed nor the strata."""
    return {"unit": step.unit, "swap_columns": list(step.swap_columns)}


def check(step: RandomSwapStep, ctx: CheckContext) -> list[Problem]:
    """A household id is known when whole households are swapped."""
    return [] if step.unit == "records" else needs_household_id(step, ctx)

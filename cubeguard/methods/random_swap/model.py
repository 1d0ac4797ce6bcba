"""The config model of random record swapping: the only model of its parameters."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from cubeguard.methods.fields import HouseholdId, Where
from cubeguard.methods.models import MicrodataStep
from cubeguard.secrets import EnvSecret, PrefectSecret
from cubeguard.swap.common import Columns, duplicates

Rate = Annotated[float, Field(ge=0.0, le=0.5, allow_inf_nan=False)] | EnvSecret | PrefectSecret


class RandomSwapStep(MicrodataStep):
    """Random record swapping within strata (Shlomo 2009, section 3.1).

    A pre-tabular step. In each stratum ``swap_rate`` of the units (households, or single records
    with ``unit: records``) are sampled and each is paired with an unsampled unit of the stratum
    whose ``swap_columns`` differ; the pair exchange ``swap_columns`` and ``carry_along``, so about
    twice ``swap_rate`` of the units change. ``swap_rate`` and ``seed`` are secret and may be given
    by reference.
    """

    method: Literal["random_swap"] = "random_swap"
    name: str = "random_swap"
    unit: Literal["households", "records"] = Field(
        default="households",
        description="Swap whole households (strata and swapped columns household-level) or single records.",
    )
    household_id: HouseholdId
    swap_columns: Annotated[
        Columns, Field(min_length=1, description="Columns exchanged between partners (e.g. [lau]).")
    ]
    strata: Columns = Field(
        default=(), description="Control variables: partners come from the same stratum (e.g. [nuts2, sph])."
    )
    carry_along: Columns = Field(
        default=(), description="Further unit-level columns exchanged with swap_columns (e.g. [nuts3, loc])."
    )
    swap_rate: Rate = Field(default=0.05, description="Share of units sampled per stratum, 0 to 0.5 (secret).")
    where: Where

    @property
    def unit_id(self) -> str | None:
        """The household column when whole households are swapped; None for single records."""
        return self.household_id if self.unit == "households" else None

    @model_validator(mode="after")
    def _check_columns(self) -> RandomSwapStep:
        moved = [*self.swap_columns, *self.carry_along]
        if self.unit_id is not None:
            moved.append(self.unit_id)
        problems: list[str] = []
        if dup := duplicates(moved):
            problems.append(f"columns {dup} appear more than once in household_id, swap_columns, carry_along")
        if clash := sorted(set(self.strata) & set(moved)):
            problems.append(f"strata use swapped columns {clash}")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def with_ids(self, household_id: str | None, person_id: str | None) -> RandomSwapStep:
        """This step with the input's household id when it swaps households and names none."""
        if self.unit == "records" or self.household_id:
            return self
        return type(self).model_validate({**self.model_dump(), "household_id": household_id})

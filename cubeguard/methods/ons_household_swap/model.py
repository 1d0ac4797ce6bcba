"""The config model of ONS targeted household swapping: the only model of its parameters."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from cubeguard.methods.fields import HouseholdId, Where
from cubeguard.methods.models import MicrodataStep
from cubeguard.secrets import EnvSecret, PrefectSecret
from cubeguard.swap.common import ColumnName, Columns, duplicates

Rate = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)] | EnvSecret | PrefectSecret
Threshold = Annotated[float, Field(ge=0.0, allow_inf_nan=False)] | EnvSecret | PrefectSecret


class OnsHouseholdSwapStep(MicrodataStep):
    """ONS targeted household swapping of the UK 2011 Census (Frend et al. 2011, section 2).

    A pre-tabular step. Households are sampled per delivery group, high-risk households (a member's
    univariate-count risk score above the level's threshold) with a higher weight, and each is
    swapped with a household of the same size and matching variables in a nearby area (outside the
    area where a member is unique). ``swap_rate``, ``risk_thresholds`` and ``seed`` are secret and
    may be given by reference. ONS does not publish its sampling weights: ``high_risk_weight`` is a
    tuning parameter. With ``rate_by_imputation`` the delivery groups' rates follow the paper's
    inverse relation to their imputation rates (:mod:`~cubeguard.methods.ons_household_swap.rates`);
    by default every group gets ``swap_rate``.
    """

    method: Literal["ons_household_swap"] = "ons_household_swap"
    name: str = "ons_household_swap"
    household_id: HouseholdId
    hierarchy: Annotated[Columns, Field(min_length=1)] = Field(
        description="Geography columns, top level first (e.g. [nuts2, nuts3, lau])."
    )
    household_size: ColumnName = Field(description="Household-size column; partners always have the same size.")
    matching: Annotated[tuple[Columns, ...], Field(min_length=1)] = Field(
        default=((),),
        description="Matching profiles tried (finest first, with the size) before moving one level up; [[]]: size only.",
    )
    risk_variables: Annotated[Columns, Field(min_length=1)] = Field(
        description="Person columns whose univariate counts give the risk score."
    )
    risk_thresholds: Annotated[tuple[Threshold, ...], Field(min_length=1)] = Field(
        description="One per hierarchy level: persons scoring above it are high risk (secret)."
    )
    carry_along: Columns = Field(
        default=(), description="Further household-level columns exchanged with the geography (e.g. [loc])."
    )
    swap_rate: Rate = Field(default=0.05, description="Share of eligible households sampled, 0 to 1 (secret).")
    high_risk_weight: float = Field(
        default=10.0, ge=1.0, allow_inf_nan=False, description="Sampling weight of high-risk households (others 1)."
    )
    max_area_share: float = Field(
        default=0.25, gt=0.0, le=1.0, description="At most this share of a lowest-level area's households is sampled."
    )
    delivery_group: ColumnName | None = Field(
        default=None, description="Household column; swapping stays inside each group."
    )
    imputed: ColumnName | None = Field(
        default=None, description="Household column (true/false): imputed households are never swapped."
    )
    rate_by_imputation: bool = Field(
        default=False,
        description=(
            "Set each delivery group's swap rate inversely to its imputation rate, swap_rate staying the "
            "overall rate (Frend et al. 2011, section 2); needs delivery_group and imputed."
        ),
    )
    where: Where

    @model_validator(mode="after")
    def _check_columns(self) -> OnsHouseholdSwapStep:
        problems: list[str] = []
        if len(self.risk_thresholds) != len(self.hierarchy):
            problems.append(
                f"risk_thresholds has {len(self.risk_thresholds)} values but hierarchy has "
                f"{len(self.hierarchy)} levels; give one threshold per level"
            )
        moved = [*([self.household_id] if self.household_id else []), *self.hierarchy, *self.carry_along]
        if dup := duplicates(moved):
            problems.append(f"columns {dup} appear more than once in household_id, hierarchy and carry_along")
        matched = [self.household_size, *(c for profile in self.matching for c in profile)]
        if clash := sorted(set(matched) & set(moved)):
            problems.append(f"household_size and matching use swapped columns {clash}")
        if self.rate_by_imputation and (self.delivery_group is None or self.imputed is None):
            problems.append("rate_by_imputation needs the delivery_group and imputed columns; name both or drop it")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def with_ids(self, household_id: str | None, person_id: str | None) -> OnsHouseholdSwapStep:
        """This step with the input's household id when it names none."""
        return (
            self
            if self.household_id
            else type(self).model_validate({**self.model_dump(), "household_id": household_id})
        )

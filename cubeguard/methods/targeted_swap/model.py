"""The config model of targeted record swapping: the only model of its parameters."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from cubeguard.methods.fields import HouseholdId, Where
from cubeguard.methods.models import MicrodataStep
from cubeguard.secrets import EnvSecret, PrefectSecret
from cubeguard.swap.common import Columns, duplicates

Rate = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)] | EnvSecret | PrefectSecret
KAnonymity = Annotated[int, Field(ge=0)] | EnvSecret | PrefectSecret


def cap_column(column: str) -> str:
    """Name of the capped copy of a similarity column (``caps``), used for matching only."""
    return f"{column}__cap"


class TargetedSwapStep(MicrodataStep):
    """Targeted record swapping of households' geography (Handbook on SDC v2, 5.6.1; sdcMicro recordSwap).

    A pre-tabular step: the microdata are swapped once and every cube is tabulated from the swapped
    data, so all cubes stay additive and consistent. ``swap_rate``, ``k_anonymity`` and ``seed`` are
    secret and may be given by reference.

    Attributes:
        household_id: column with the household identifier; whole households are swapped.
        hierarchy: geography columns, top level first (e.g. ``("nuts1", "nuts2", "nuts3")``);
            a household must have one value per column.
        similar: similarity profiles tried in order; a donor must equal the household on every
            column of the profile (household-level columns, e.g. ``(("hsize", "htype"), ("hsize",))``).
        risk_variables: person columns whose counts per area give the k-anonymity risk.
        carry_along: further household-level columns exchanged with the geography (e.g. ``lau2``).
        caps: similarity columns truncated for matching only (e.g. household size capped at 5).
        swap_rate: share of households to swap overall, counting both sides of every swap.
        k_anonymity: a household must be swapped at the first level where one of its members is in a
            group of fewer than ``k_anonymity`` persons; 0 switches the rule off.
        risk_columns: optional user risk, one column per hierarchy level (replaces the k-anonymity
            risk); households take the maximum over their members.
        risk_threshold: with ``risk_columns``, households with risk above it must be swapped.
    """

    method: Literal["targeted_swap"] = "targeted_swap"
    name: str = "targeted_swap"
    household_id: HouseholdId
    hierarchy: Annotated[Columns, Field(min_length=1)]
    similar: Annotated[tuple[Annotated[Columns, Field(min_length=1)], ...], Field(min_length=1)]
    risk_variables: Columns = ()
    carry_along: Columns = ()
    caps: dict[str, int] = Field(default_factory=dict)
    swap_rate: Rate = 0.05
    k_anonymity: KAnonymity = 3
    risk_columns: Columns | None = None
    risk_threshold: Annotated[float, Field(ge=0.0, allow_inf_nan=False)] | None = None
    where: Where

    @model_validator(mode="after")
    def _check_columns(self) -> TargetedSwapStep:
        problems: list[str] = []
        if self.risk_columns is not None:
            if len(self.risk_columns) != len(self.hierarchy):
                problems.append(
                    f"risk_columns has {len(self.risk_columns)} columns but hierarchy has "
                    f"{len(self.hierarchy)} levels; give one risk column per level"
                )
            if self.risk_threshold is None:
                problems.append("risk_columns needs a risk_threshold")
            if self.risk_variables:
                problems.append("give either risk_columns or risk_variables, not both")
        elif self.risk_threshold is not None:
            problems.append("risk_threshold is only used with risk_columns; remove it or add them")
        moved = [*([self.household_id] if self.household_id else []), *self.hierarchy, *self.carry_along]
        if dup := duplicates(moved):
            problems.append(f"columns {dup} appear more than once in household_id, hierarchy and carry_along")
        for profile in self.similar:
            if self.household_id is not None and self.household_id in profile:
                problems.append(f"similarity profile {list(profile)} uses the household id")
        if unknown := sorted(set(self.caps) - set(self.similarity_columns)):
            problems.append(f"caps name columns {unknown} that no similarity profile uses")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def similarity_columns(self) -> tuple[str, ...]:
        """All columns used by any similarity profile, each once, in first-use order."""
        return tuple(dict.fromkeys(c for profile in self.similar for c in profile))

    def with_ids(self, household_id: str | None, person_id: str | None) -> TargetedSwapStep:
        """This step with the input's household id when it names none."""
        return (
            self
            if self.household_id
            else type(self).model_validate({**self.model_dump(), "household_id": household_id})
        )

    def capped(self) -> TargetedSwapStep:
        """This step matching on the capped copies (:func:`cap_column`) of the ``caps`` columns."""
        if not self.caps:
            return self
        similar = tuple(tuple(cap_column(c) if c in self.caps else c for c in p) for p in self.similar)
        return self.model_copy(update={"similar": similar})

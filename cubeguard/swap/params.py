"""Frozen, validated parameters for record swapping, and the errors a user can meet.

Parameter objects check only what can be checked without data (pydantic raises one
``ValidationError`` that lists every broken field, with its location, so a config loader can prefix
the YAML key path). Problems that need the data (missing columns, missing values, values that vary
inside a household) raise :class:`SwapDataError`, a :class:`~cubeguard.errors.CubeguardError`.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from cubeguard.errors import CubeguardError

ColumnName = Annotated[str, Field(min_length=1)]
Columns = tuple[ColumnName, ...]


class SwapDataError(CubeguardError):
    """The data do not fit the swap parameters (the message says which column and what to change)."""


class SwapSeedError(CubeguardError):
    """The seed is not a non-negative integer."""


def generator(seed: int) -> np.random.Generator:
    """The PCG64 generator every swapping method draws from, seeded explicitly."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise SwapSeedError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.Generator(np.random.PCG64(int(seed)))


def _duplicates(names: list[str]) -> list[str]:
    return sorted({n for n in names if names.count(n) > 1})


class TargetedSwapParams(BaseModel):
    """Parameters of targeted record swapping (Handbook on SDC v2, 5.6.1; sdcMicro ``recordSwap``).

    Attributes:
        household_id: column with the household identifier; whole households are swapped.
        hierarchy: geography columns, top level first (e.g. ``("nuts1", "nuts2", "nuts3")``);
            a household must have one value per column.
        similar: similarity profiles tried in order; a donor must equal the household on every
            column of the profile (household-level columns, e.g. ``(("hsize", "htype"), ("hsize",))``).
        risk_variables: person columns whose counts per area give the k-anonymity risk.
        carry_along: further household-level columns exchanged with the geography (e.g. ``lau2``).
        swap_rate: share of households to swap overall, counting both sides of every swap.
        k_anonymity: a household must be swapped at the first level where one of its members is in a
            group of fewer than ``k_anonymity`` persons; 0 switches the rule off.
        risk_columns: optional user risk, one column per hierarchy level (replaces the k-anonymity
            risk); households take the maximum over their members.
        risk_threshold: with ``risk_columns``, households with risk above it must be swapped.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    household_id: ColumnName
    hierarchy: Annotated[Columns, Field(min_length=1)]
    similar: Annotated[tuple[Annotated[Columns, Field(min_length=1)], ...], Field(min_length=1)]
    risk_variables: Columns = ()
    carry_along: Columns = ()
    swap_rate: Annotated[float, Field(ge=0.0, le=1.0)] = 0.05
    k_anonymity: Annotated[int, Field(ge=0)] = 3
    risk_columns: Columns | None = None
    risk_threshold: Annotated[float, Field(ge=0.0, allow_inf_nan=False)] | None = None

    @model_validator(mode="after")
    def _check_columns(self) -> TargetedSwapParams:
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
        moved = [self.household_id, *self.hierarchy, *self.carry_along]
        if dup := _duplicates(moved):
            problems.append(f"columns {dup} appear more than once in household_id, hierarchy and carry_along")
        for profile in self.similar:
            if self.household_id in profile:
                problems.append(f"similarity profile {list(profile)} uses the household id")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def similarity_columns(self) -> tuple[str, ...]:
        """All columns used by any similarity profile, each once, in first-use order."""
        return tuple(dict.fromkeys(c for profile in self.similar for c in profile))


class RandomSwapParams(BaseModel):
    """Parameters of random record swapping (Shlomo 2009, seed 000, section 3.1).

    Attributes:
        swap_columns: columns exchanged between partners (e.g. ``("lau2",)``); partners must differ
            in them.
        strata: control variables; partners come from the same stratum (e.g. ``("nuts2",)``, and
            ``"hsize"`` when whole households are swapped).
        unit_id: household column to swap whole households; ``None`` swaps single records.
        carry_along: further unit-level columns exchanged with ``swap_columns``.
        swap_rate: share of units sampled per stratum; each is paired with an unsampled unit, so
            about twice this share changes.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    swap_columns: Annotated[Columns, Field(min_length=1)]
    strata: Columns = ()
    unit_id: ColumnName | None = None
    carry_along: Columns = ()
    swap_rate: Annotated[float, Field(ge=0.0, le=0.5)] = 0.05

    @model_validator(mode="after")
    def _check_columns(self) -> RandomSwapParams:
        moved = [*self.swap_columns, *self.carry_along]
        if self.unit_id is not None:
            moved.append(self.unit_id)
        problems: list[str] = []
        if dup := _duplicates(moved):
            problems.append(f"columns {dup} appear more than once in unit_id, swap_columns, carry_along")
        if clash := sorted(set(self.strata) & set(moved)):
            problems.append(f"strata use swapped columns {clash}")
        if problems:
            raise ValueError("; ".join(problems))
        return self


class OnsHouseholdSwapParams(BaseModel):
    """Parameters of ONS targeted household swapping (Frend et al. 2011, seed 003, section 2).

    Attributes:
        household_id: column with the household identifier; whole households are swapped.
        hierarchy: geography columns, top level first (e.g. ``("lad", "msoa", "oa")``).
        household_size: household-size column; partners always have the same size.
        matching: further matching profiles, finest first; each is tried (with the household size)
            before the search moves one geography level up. ``((),)``: size only.
        risk_variables: person columns whose univariate counts give the risk score.
        risk_thresholds: per hierarchy level, persons with a higher score are high risk.
        swap_rate: share of eligible (non-imputed) households sampled per delivery group; each
            sampled household gets a partner, so about twice this share changes.
        high_risk_weight: sampling weight of high-risk households (others 1). ONS does not publish
            its weights; this is a tuning parameter.
        max_area_share: at most this share of an area's (lowest level) households is sampled,
            rounded up.
        delivery_group: optional household column; swapping stays inside each group.
        imputed: optional household column (true/false); imputed households get no risk score and
            are neither sampled nor partners.
        carry_along: further household-level columns exchanged with the geography (e.g. a locality
            size class that is a function of the lowest level).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    household_id: ColumnName
    hierarchy: Annotated[Columns, Field(min_length=1)]
    household_size: ColumnName
    matching: Annotated[tuple[Columns, ...], Field(min_length=1)] = ((),)
    risk_variables: Annotated[Columns, Field(min_length=1)]
    risk_thresholds: tuple[Annotated[float, Field(ge=0.0, allow_inf_nan=False)], ...]
    swap_rate: Annotated[float, Field(ge=0.0, le=1.0)] = 0.05
    high_risk_weight: Annotated[float, Field(ge=1.0, allow_inf_nan=False)] = 10.0
    max_area_share: Annotated[float, Field(gt=0.0, le=1.0)] = 0.25
    delivery_group: ColumnName | None = None
    imputed: ColumnName | None = None
    carry_along: Columns = ()

    @model_validator(mode="after")
    def _check_columns(self) -> OnsHouseholdSwapParams:
        problems: list[str] = []
        if len(self.risk_thresholds) != len(self.hierarchy):
            problems.append(
                f"risk_thresholds has {len(self.risk_thresholds)} values but hierarchy has "
                f"{len(self.hierarchy)} levels; give one threshold per level"
            )
        moved = [self.household_id, *self.hierarchy, *self.carry_along]
        if dup := _duplicates(moved):
            problems.append(f"columns {dup} appear more than once in household_id, hierarchy and carry_along")
        matched = [self.household_size, *(c for profile in self.matching for c in profile)]
        if clash := sorted(set(matched) & set(moved)):
            problems.append(f"household_size and matching use swapped columns {clash}")
        if problems:
            raise ValueError("; ".join(problems))
        return self

"""The config model of ONS communal-establishment swapping (Frend et al. 2011, section 3): its only model.

The swap rates ``A%``, ``B%`` and ``C%`` of Tables 3 and 4 and the family rate are secret ("ONS will
not release specifics of the SDC methodology such as swap rates", footnote 3): they may be given by
reference, and validation errors never echo an input value (``hide_input_in_errors``).
Column defaults are the columns of :mod:`cubeguard.synth` (``hid``, ``ce_type``, ``ce_role``, NUTS
and LAU geography); the paper's MSOA, LAD and delivery group map to ``lau``, ``nuts3`` and
``nuts2`` by default.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from cubeguard.methods.models import MicrodataStep
from cubeguard.secrets import EnvSecret, PrefectSecret
from cubeguard.swap.common import ColumnName, Columns

Rate = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)] | EnvSecret | PrefectSecret
Profiles = Annotated[tuple[Columns, ...], Field(min_length=1)]
Relaxation = Literal["resident_group", "profile", "level", "ce_type"]

#: Matching groups of section 3.5, in the order used for codes and reports.
MATCHING_GROUPS = ("client_adult", "client_child", "staff")


class MatchingProfiles(BaseModel):
    """Matching variables of the three matching groups (section 3.5), finest profile first.

    Each profile is a tuple of person columns partners must share; later profiles are the "coarser
    set of variable classifications" (e.g. ``(("sex", "age5"), ("sex", "age10"), ())``). The groups
    may have different numbers of profiles; a group with fewer keeps using its last one.

    Attributes:
        client_adult: clients aged ``child_age`` or over (and adult family allocated to clients).
        client_child: clients under ``child_age`` (and family under ``child_age``).
        staff: staff (and adult family allocated to staff).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    client_adult: Profiles = ((),)
    client_child: Profiles = ((),)
    staff: Profiles = ((),)

    def of(self, group: int) -> tuple[Columns, ...]:
        """Profiles of matching group ``group`` (index into :data:`MATCHING_GROUPS`)."""
        return (self.client_adult, self.client_child, self.staff)[group]

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column used by some profile, each once, in first-use order."""
        return tuple(dict.fromkeys(c for g in range(3) for p in self.of(g) for c in p))

    @property
    def n_profiles(self) -> int:
        """Number of profile steps: the longest group's number of profiles."""
        return max(len(self.of(g)) for g in range(3))


class OnsCommunalSwapStep(MicrodataStep):
    """ONS swapping of communal-establishment residents, UK 2011 Census (Frend et al. 2011, section 3).

    A pre-tabular step. Protection scores per CE type and area (Tables 1 and 2) set the swap-rate
    band (Tables 3 and 4: 0, A%, B%, C%); residents are sampled by risk score and each takes a
    matched partner's place (establishment, CE type, geography). Private-household records are never
    touched. The rates ``rate_a`` <= ``rate_b`` <= ``rate_c``, ``family_rate`` and ``seed`` are secret
    and may be given by reference. Defaults are the columns of the synthetic census.

    Attributes:
        rate_a: swap rate of band A (lowest; Tables 3 and 4): the share of a CE type's clients
            (or staff) in an area that is sampled; every sampled record gets a partner, so about
            twice as many records change. Secret.
        rate_b: swap rate of band B. Secret.
        rate_c: swap rate of band C (highest). Secret.
        family_rate: the single swap rate of family residents (section 3.4). Secret.
        risk_variables: person columns whose univariate counts give the risk score (section 3.3).
        person_id: column identifying persons in the results; default the input's person id
            (``None`` there: the row labels).
        establishment_id: column with the CE id, default the input's household id; it moves with
            the geography (the swapped person takes the partner's place in the partner's establishment).
        ce_type: column with the CE type code (compared as text with ``high_impact_types`` and
            ``high_turnover_types``); it moves with the establishment.
        resident_group: column with the resident group; ``client_code``, ``staff_code`` and
            ``family_code`` mark CE residents, any other value a private-household person.
        age: column with the age in years (matching groups of section 3.5).
        imputed: optional column (true/1 = imputed); imputed records are neither sampled nor
            partners ("Imputed records will not be swapped", section 3.5) but are counted.
        hierarchy: geography columns, top level first; exchanged between partners.
        score_area: hierarchy column of the paper's MSOA: protection and risk scores per CE type in
            each of its areas (section 3.1, 3.3).
        unique_area: hierarchy column of the paper's LAD (factor B, "unique within the LAD").
        family_area: hierarchy column of the area across which family residents are sampled at
            one rate (section 3.4: the LAD).
        delivery_group: column (need not be in ``hierarchy``); partners are always in the same one.
        carry_along: further establishment-level columns exchanged with the geography.
        matching: matching profiles of the three matching groups (section 3.5).
        high_impact_types: CE type codes whose identity disclosure is high impact (factor C).
        high_turnover_types: CE type codes whose clients usually stay less than a year (factor E).
        child_age: clients and family under this age form the ``client_child`` matching group.
        family_staff_column: adult family whose value of this column is in ``family_staff_values``
            are matched with staff, the other adults with adult clients; ``None``: all with clients.
        family_staff_values: see ``family_staff_column`` (compared as text).
        staff_round_up_score: the extra record from rounding a staff sample up is taken with
            probability ``min(1, SPS / staff_round_up_score)`` (section 3.2; 12 = band C).
        family_rounding: ``"up"`` rounds family sample sizes up (as CE type samples, section 3.2);
            ``"random"`` rounds ``n * rate`` up with probability equal to its fractional part.
        leave_unique_area: a record unique on a risk variable at a level is swapped outside its
            area of that level (as for households, section 2).
        exchange_resident_group: the resident group moves with the place, so a family record
            matched with a staff record takes the staff place (counts of clients, staff and family
            per CE stay exact); ``False`` keeps it with the person.
        relaxation: what is relaxed when no partner is found, innermost first; a dimension left
            out is never relaxed (``"profile"`` and ``"level"`` must be present).
    """

    method: Literal["ons_communal_swap"] = "ons_communal_swap"
    name: str = "ons_communal_swap"
    rate_a: Rate = Field(description="Swap rate of band A, the lowest (secret).")
    rate_b: Rate = Field(description="Swap rate of band B (secret).")
    rate_c: Rate = Field(description="Swap rate of band C, the highest (secret).")
    family_rate: Rate = Field(description="Swap rate of family residents (secret).")
    risk_variables: Annotated[Columns, Field(min_length=1)] = Field(
        description="Person columns whose univariate counts give the risk score."
    )
    person_id: ColumnName | None = Field(default=None, description="Person id column; default input.person_id.")
    establishment_id: ColumnName | None = Field(
        default=None, description="Establishment id column; default input.household_id."
    )
    ce_type: ColumnName = "ce_type"
    resident_group: ColumnName = "ce_role"
    client_code: str = "C"
    staff_code: str = "S"
    family_code: str = "F"
    age: ColumnName = "age"
    imputed: ColumnName | None = "imputed"
    hierarchy: Annotated[Columns, Field(min_length=1)] = Field(
        default=("nuts1", "nuts2", "nuts3", "lau"),
        description="Geography columns, top level first; exchanged between partners.",
    )
    score_area: ColumnName = Field(default="lau", description="The paper's MSOA: protection and risk scores per area.")
    unique_area: ColumnName = Field(default="nuts3", description="The paper's LAD (factor B: unique in the LAD).")
    family_area: ColumnName = Field(
        default="nuts3", description="Area across which family residents are sampled at one rate."
    )
    delivery_group: ColumnName = "nuts2"
    carry_along: Columns = ()
    matching: MatchingProfiles = MatchingProfiles()
    high_impact_types: tuple[str, ...] = ("2", "4", "7", "8")
    high_turnover_types: tuple[str, ...] = ("2", "3", "7", "9")
    child_age: Annotated[int, Field(ge=0, le=150)] = 16
    family_staff_column: ColumnName | None = "cas"
    family_staff_values: tuple[str, ...] = ("1.1",)
    staff_round_up_score: Annotated[int, Field(ge=1)] = 12
    family_rounding: Literal["up", "random"] = "up"
    leave_unique_area: bool = True
    exchange_resident_group: bool = True
    relaxation: tuple[Relaxation, ...] = ("resident_group", "profile", "level", "ce_type")

    @model_validator(mode="after")
    def _check(self) -> OnsCommunalSwapStep:
        problems: list[str] = []
        rates = (self.rate_a, self.rate_b, self.rate_c)
        known = [r for r in rates if isinstance(r, int | float)]
        if known != sorted(known):
            problems.append("swap rates must satisfy rate_a <= rate_b <= rate_c (A% lowest, C% highest)")
        for name in ("score_area", "unique_area", "family_area"):
            if getattr(self, name) not in self.hierarchy:
                problems.append(f"{name} {getattr(self, name)!r} must be one of the hierarchy columns")
        levels = {c: i for i, c in enumerate(self.hierarchy)}
        if levels.get(self.unique_area, -1) > levels.get(self.score_area, len(levels)):
            problems.append("unique_area (the LAD) must be score_area (the MSOA) or a coarser level")
        moved = self.moved_columns
        if dup := sorted({c for c in moved if moved.count(c) > 1}):
            problems.append(f"columns {dup} appear more than once among the exchanged columns")
        person = {self.age, *self.matching.columns, *self.risk_variables}
        if self.family_staff_column is not None:
            person.add(self.family_staff_column)
        if clash := sorted(person & set(moved)):
            problems.append(f"matching, risk and age columns {clash} are exchanged columns; use person columns")
        codes = [self.client_code, self.staff_code, self.family_code]
        if len(set(codes)) < 3:
            problems.append("client_code, staff_code and family_code must differ")
        if len(set(self.relaxation)) < len(self.relaxation):
            problems.append("relaxation lists a dimension more than once")
        if not {"profile", "level"} <= set(self.relaxation):
            problems.append("relaxation must contain 'profile' and 'level'")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def moved_columns(self) -> list[str]:
        """Columns a swapped person takes from the partner: CE id, CE type, geography, carry-along."""
        moved = [*([self.establishment_id] if self.establishment_id else []), self.ce_type, *self.hierarchy]
        moved += self.carry_along
        if self.exchange_resident_group:
            moved.append(self.resident_group)
        return moved

    @property
    def establishment_columns(self) -> list[str]:
        """Columns that must be constant within an establishment."""
        columns = [self.ce_type, *self.hierarchy, self.delivery_group, *self.carry_along]
        return list(dict.fromkeys(columns))

    def with_ids(self, household_id: str | None, person_id: str | None) -> OnsCommunalSwapStep:
        """This step with the input's person and household (establishment) ids where it names none."""
        ids = {"person_id": self.person_id or person_id, "establishment_id": self.establishment_id or household_id}
        return type(self).model_validate({**self.model_dump(), **ids})

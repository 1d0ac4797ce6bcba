"""The release config: frozen, validated models of the YAML a methodologist writes.

A release config names the microdata, the variables with their hierarchical classifications, the
populations, the hypercubes (EU programme: Regulation (EU) 2017/712 Annex I), the protection steps,
the gate thresholds and the output store. ``cubeguard.config.load`` reads one from YAML and turns
every validation error into ``<key path> (line N): <what to change>``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from cubeguard.config.secrets import SecretInt, SecretNumber

SCHEMA_VERSION = 1


class Frozen(BaseModel):
    """Base of every config model: immutable, unknown keys rejected."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class CodeSpec(Frozen):
    """One code of a hierarchical classification (see docs/classification-format.md)."""

    code: str = Field(min_length=1)
    label: str = ""
    parent: str | None = None
    values: list[str] | list[int] | None = None
    range: tuple[int, int] | None = None

    @model_validator(mode="after")
    def _one_value_form(self) -> CodeSpec:
        if self.values is not None and self.range is not None:
            raise ValueError("give either 'values' or 'range', not both")
        if self.range is not None and self.range[0] > self.range[1]:
            raise ValueError("'range' must be [low, high] with low <= high")
        return self


class BreakdownSpec(Frozen):
    """A named selection of a variable's hierarchy: codes up to a depth, or an explicit list."""

    depth: int | None = Field(default=None, ge=0)
    codes: list[str] | None = None
    label: str = ""

    @model_validator(mode="after")
    def _depth_or_codes(self) -> BreakdownSpec:
        if self.depth is not None and self.codes is not None:
            raise ValueError("give either 'depth' or 'codes', not both")
        return self


class HrcCodes(Frozen):
    """A code list read from a tau-ARGUS hierarchy file (``.hrc``), path relative to the config.

    Codes keep the file's spelling; a leaf matches the raw value with its padding stripped, as
    tau-ARGUS right-justifies data codes to the column width before matching.
    """

    hrc: Path
    total: str = "Total"
    lead: str = "@"


class VariableSpec(Frozen):
    """A microdata column with its classification and the breakdowns derived from it."""

    column: str
    dtype: Literal["code", "integer"] = "code"
    label: str = ""
    note: str = ""
    codes: list[CodeSpec] = Field(min_length=1, description="Hierarchical code list, or {hrc: file}.")
    breakdowns: dict[str, BreakdownSpec] = Field(min_length=1)


class VariableFile(Frozen):
    """A variable kept in its own classification file (path relative to the config)."""

    file: Path


class PopulationSpec(Frozen):
    """Which records a hypercube counts: a filter on raw values, and persons or households."""

    label: str = ""
    unit: Literal["persons", "households"] = "persons"
    where: dict[str, list[str] | list[int]] = Field(default_factory=dict)


class HypercubeSpec(Frozen):
    """One hypercube: its breakdowns (one dimension each) over a population."""

    id: str = Field(min_length=1)
    label: str = ""
    group: int | None = None
    population: str = "total"
    breakdowns: list[str] = Field(min_length=1)
    stand_in: bool = False
    note: str = ""

    @model_validator(mode="after")
    def _distinct(self) -> HypercubeSpec:
        seen = [b for i, b in enumerate(self.breakdowns) if b in self.breakdowns[:i]]
        if seen:
            raise ValueError(f"breakdown {seen[0]!r} is listed twice; list each breakdown once")
        return self


class SyntheticSpec(Frozen):
    """Generate a synthetic census here when the microdata file does not exist yet."""

    persons: int = Field(gt=0)
    seed: int = 2021
    geography: Literal["national", "two_regions"] = "national"


class CsvSpec(Frozen):
    """How to read CSV microdata: delimiter, header, column names (or a tau-ARGUS .rda), numeric columns."""

    delimiter: str = Field(default=",", min_length=1, max_length=1)
    header: bool = True
    columns: list[str] | None = None
    metadata: Path | None = None
    numeric: list[str] = Field(default_factory=list)


class RecordKeySpec(Frozen):
    """Record keys: read from a column (``decimals`` for fixed-digit keys) or generated from a seed."""

    column: str = "rkey"
    decimals: int | None = Field(default=None, ge=1, le=18)
    generate_seed: SecretInt | None = None


class InputSpec(Frozen):
    """The microdata and how to read it."""

    microdata: Path
    format: Literal["parquet", "csv", "tau"] = "parquet"
    csv: CsvSpec | None = None
    synthetic: SyntheticSpec | None = None
    person_id: str | None = "pid"
    household_id: str | None = "hid"
    household_ref: str | None = "is_ref"
    household_columns: list[str] = Field(default_factory=list)
    record_key: RecordKeySpec = RecordKeySpec()


class OutputSpec(Frozen):
    """Where the release is written: a folder holding the original and protected Zarr stores."""

    folder: Path
    chunk_cells: int = Field(default=1_000_000, gt=0)
    exports: list[Literal["csv", "parquet", "sdmx-csv"]] = Field(
        default_factory=lambda: ["csv"], description="Flat files published beside the Zarr store, one per cube."
    )
    audit_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL of the audit store (e.g. postgresql+psycopg://host/db); "
        "default: the SQLite file internal/audit.sqlite.",
    )

    @property
    def original_store(self) -> Path:
        """Tabulated (unprotected, internal) cubes."""
        return self.folder / "original.zarr"

    @property
    def protected_store(self) -> Path:
        """Cubes after every protection step (published counts plus internal noise)."""
        return self.folder / "protected.zarr"

    @property
    def swapped_microdata(self) -> Path:
        """Microdata after the pre-tabular steps (internal; cubes are tabulated from it)."""
        return self.folder / "internal" / "swapped.parquet"

    @property
    def internal(self) -> Path:
        """Internal reports that may reveal protection details (never published)."""
        return self.folder / "internal"

    @property
    def validation_report(self) -> Path:
        """Full report of the last microdata validation."""
        return self.folder / "validation.json"


class IdentityStep(Frozen):
    """A step that publishes counts unchanged: the noise-free path that must be exact."""

    method: Literal["identity"]
    name: str = "identity"
    cubes: list[str] | None = None


class CellKeyStep(Frozen):
    """Cell key method (seed 001; Handbook on SDC v2 5.4) with a maximum-entropy p-table.

    The p-table comes from its parameters (D, V, js, pstay, optim, mono as R ptable), which may be
    secret references, or from a p-table file (ptable CSV or tau-ARGUS ``i;j;p;v;p_int_ub``).
    """

    method: Literal["cell_key"]
    name: str = "cell_key"
    cubes: list[str] | None = None
    D: SecretInt | None = None
    V: SecretNumber | None = None
    js: int = Field(default=0, ge=0)
    pstay: SecretNumber | None = None
    optim: Literal[1, 4] = 1
    mono: bool = True
    ptable_file: Path | None = None

    @model_validator(mode="after")
    def _params_or_file(self) -> CellKeyStep:
        if self.ptable_file is None and (self.D is None or self.V is None):
            raise ValueError("give the p-table parameters D and V, or a ptable_file")
        if self.ptable_file is not None and (self.D is not None or self.V is not None):
            raise ValueError("give either D and V or a ptable_file, not both")
        return self


StepSpec = Annotated[IdentityStep | CellKeyStep, Field(discriminator="method")]


ReportCubes = Annotated[
    list[str],
    Field(
        default_factory=list,
        description="Hypercube ids tabulated before and after this step; their information loss and "
        "disclosure measures go into the step's internal report.",
    ),
]
Where = Annotated[
    dict[str, list[str] | list[int]],
    Field(
        default_factory=dict,
        description="Only households whose records have these raw values take part (e.g. "
        "{hh_kind: [P]}: private households); use household-level columns.",
    ),
]
HouseholdId = Annotated[str | None, Field(default=None, description="Household id column; default input.household_id.")]
Seed = Annotated[SecretInt, Field(description="Seed of the swap's random generator (secret).")]


class TargetedSwapStep(Frozen):
    """Targeted record swapping of households' geography (Handbook on SDC v2 5.6.1; sdcMicro recordSwap).

    A pre-tabular step: the microdata are swapped once and every cube is tabulated from the swapped
    data, so all cubes stay additive and consistent. ``swap_rate``, ``k_anonymity`` and ``seed`` are
    secret and may be given by reference. ``caps`` truncates similarity columns for matching only
    (e.g. household size capped at 5).
    """

    method: Literal["targeted_swap"]
    name: str = "targeted_swap"
    household_id: str | None = None
    hierarchy: list[str] = Field(min_length=1)
    similar: list[list[str]] = Field(min_length=1)
    risk_variables: list[str] = Field(default_factory=list)
    carry_along: list[str] = Field(default_factory=list)
    caps: dict[str, int] = Field(default_factory=dict)
    swap_rate: SecretNumber = 0.05
    k_anonymity: SecretInt = 3
    seed: SecretInt
    where: Where
    report_cubes: ReportCubes


class RandomSwapStep(Frozen):
    """Random record swapping within strata (seed 000: Shlomo 2009, section 3.1).

    A pre-tabular step. In each stratum ``swap_rate`` of the units (households, or single records
    with ``unit: records``) are sampled and each is paired with an unsampled unit of the stratum
    whose ``swap_columns`` differ; the pair exchange ``swap_columns`` and ``carry_along``, so about
    twice ``swap_rate`` of the units change. ``swap_rate`` and ``seed`` are secret and may be given
    by reference.
    """

    method: Literal["random_swap"]
    name: str = "random_swap"
    unit: Literal["households", "records"] = Field(
        default="households",
        description="Swap whole households (strata and swapped columns household-level) or single records.",
    )
    household_id: HouseholdId
    swap_columns: list[str] = Field(min_length=1, description="Columns exchanged between partners (e.g. [lau]).")
    strata: list[str] = Field(
        default_factory=list, description="Control variables: partners come from the same stratum (e.g. [nuts2, sph])."
    )
    carry_along: list[str] = Field(
        default_factory=list, description="Further unit-level columns exchanged with swap_columns (e.g. [nuts3, loc])."
    )
    swap_rate: SecretNumber = Field(default=0.05, description="Share of units sampled per stratum, 0 to 0.5 (secret).")
    seed: Seed
    where: Where
    report_cubes: ReportCubes


class OnsHouseholdSwapStep(Frozen):
    """ONS targeted household swapping of the UK 2011 Census (seed 003: Frend et al. 2011, section 2).

    A pre-tabular step. Households are sampled per delivery group, high-risk households (a member's
    univariate-count risk score above the level's threshold) with a higher weight, and each is
    swapped with a household of the same size and matching variables in a nearby area (outside the
    area where a member is unique). ``swap_rate``, ``risk_thresholds`` and ``seed`` are secret and
    may be given by reference.
    """

    method: Literal["ons_household_swap"]
    name: str = "ons_household_swap"
    household_id: HouseholdId
    hierarchy: list[str] = Field(
        min_length=1, description="Geography columns, top level first (e.g. [nuts2, nuts3, lau])."
    )
    household_size: str = Field(description="Household-size column; partners always have the same size.")
    matching: list[list[str]] = Field(
        default_factory=lambda: [[]],
        min_length=1,
        description="Matching profiles tried (finest first, with the size) before moving one level up; [[]]: size only.",
    )
    risk_variables: list[str] = Field(
        min_length=1, description="Person columns whose univariate counts give the risk score."
    )
    risk_thresholds: list[SecretNumber] = Field(
        min_length=1, description="One per hierarchy level: persons scoring above it are high risk (secret)."
    )
    carry_along: list[str] = Field(
        default_factory=list, description="Further household-level columns exchanged with the geography (e.g. [loc])."
    )
    swap_rate: SecretNumber = Field(default=0.05, description="Share of eligible households sampled, 0 to 1 (secret).")
    high_risk_weight: float = Field(
        default=10.0, ge=1.0, description="Sampling weight of high-risk households (others 1)."
    )
    max_area_share: float = Field(
        default=0.25, gt=0.0, le=1.0, description="At most this share of a lowest-level area's households is sampled."
    )
    delivery_group: str | None = Field(default=None, description="Household column; swapping stays inside each group.")
    imputed: str | None = Field(
        default=None, description="Household column (true/false): imputed households are never swapped."
    )
    seed: Seed
    where: Where
    report_cubes: ReportCubes


class CommunalMatching(Frozen):
    """Matching profiles of the three matching groups of communal residents (seed 003, section 3.5).

    Each profile lists person columns partners must share, finest first (e.g. ``[[sex, age5], [sex], []]``).
    """

    client_adult: list[list[str]] = Field(default_factory=lambda: [[]], min_length=1)
    client_child: list[list[str]] = Field(default_factory=lambda: [[]], min_length=1)
    staff: list[list[str]] = Field(default_factory=lambda: [[]], min_length=1)


class OnsCommunalSwapStep(Frozen):
    """ONS swapping of communal-establishment residents, UK 2011 Census (seed 003: Frend et al. 2011, section 3).

    A pre-tabular step. Protection scores per CE type and area (Tables 1 and 2) set the swap-rate
    band (Tables 3 and 4: 0, A%, B%, C%); residents are sampled by risk score and each takes a
    matched partner's place (establishment, CE type, geography). Private-household records are never
    touched. The rates ``rate_a`` <= ``rate_b`` <= ``rate_c``, ``family_rate`` and ``seed`` are secret
    and may be given by reference. Defaults are the columns of the synthetic census; see
    ``cubeguard.swap.params_communal.OnsCommunalSwapParams`` for every key.
    """

    method: Literal["ons_communal_swap"]
    name: str = "ons_communal_swap"
    rate_a: SecretNumber = Field(description="Swap rate of band A, the lowest (secret).")
    rate_b: SecretNumber = Field(description="Swap rate of band B (secret).")
    rate_c: SecretNumber = Field(description="Swap rate of band C, the highest (secret).")
    family_rate: SecretNumber = Field(description="Swap rate of family residents (secret).")
    risk_variables: list[str] = Field(
        min_length=1, description="Person columns whose univariate counts give the risk score."
    )
    person_id: str | None = Field(default=None, description="Person id column; default input.person_id.")
    establishment_id: str | None = Field(
        default=None, description="Establishment id column; default input.household_id."
    )
    ce_type: str = "ce_type"
    resident_group: str = "ce_role"
    client_code: str = "C"
    staff_code: str = "S"
    family_code: str = "F"
    age: str = "age"
    imputed: str | None = "imputed"
    hierarchy: list[str] = Field(
        default_factory=lambda: ["nuts1", "nuts2", "nuts3", "lau"],
        min_length=1,
        description="Geography columns, top level first; exchanged between partners.",
    )
    score_area: str = Field(default="lau", description="The paper's MSOA: protection and risk scores per area.")
    unique_area: str = Field(default="nuts3", description="The paper's LAD (factor B: unique in the LAD).")
    family_area: str = Field(default="nuts3", description="Area across which family residents are sampled at one rate.")
    delivery_group: str = "nuts2"
    carry_along: list[str] = Field(default_factory=list)
    matching: CommunalMatching = CommunalMatching()
    high_impact_types: list[str] = Field(default_factory=lambda: ["2", "4", "7", "8"])
    high_turnover_types: list[str] = Field(default_factory=lambda: ["2", "3", "7", "9"])
    child_age: int = Field(default=16, ge=0, le=150)
    family_staff_column: str | None = "cas"
    family_staff_values: list[str] = Field(default_factory=lambda: ["1.1"])
    staff_round_up_score: int = Field(default=12, ge=1)
    family_rounding: Literal["up", "random"] = "up"
    leave_unique_area: bool = True
    exchange_resident_group: bool = True
    relaxation: list[Literal["resident_group", "profile", "level", "ce_type"]] = Field(
        default_factory=lambda: ["resident_group", "profile", "level", "ce_type"]
    )
    seed: Seed
    report_cubes: ReportCubes


PreTabularSpec = Annotated[
    TargetedSwapStep | RandomSwapStep | OnsHouseholdSwapStep | OnsCommunalSwapStep, Field(discriminator="method")
]


class GateSpec(Frozen):
    """Thresholds the release is gated on."""

    forbidden_values: list[int] = Field(default_factory=list)
    max_small_cells_unchanged: float | None = Field(default=None, ge=0, le=1)
    require_additivity: bool = False
    max_hellinger: float | None = Field(default=None, ge=0, le=1)
    max_mean_absolute_deviation: float | None = Field(default=None, ge=0)


class ReleaseConfig(Frozen):
    """A whole release: input, classifications, hypercubes, steps, gates, output."""

    schema_version: Literal[1]
    name: str = Field(min_length=1)
    description: str = ""
    input: InputSpec
    variables: dict[str, VariableSpec] = Field(min_length=1)
    populations: dict[str, PopulationSpec] = Field(default_factory=lambda: {"total": PopulationSpec()})
    hypercubes: list[HypercubeSpec] = Field(min_length=1)
    pre_tabular: list[PreTabularSpec] = Field(default_factory=list)
    steps: list[StepSpec] = Field(default_factory=list)
    gates: GateSpec = GateSpec()
    output: OutputSpec

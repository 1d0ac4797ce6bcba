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


PreTabularSpec = Annotated[TargetedSwapStep, Field(discriminator="method")]


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

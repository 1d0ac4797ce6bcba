"""The release config: frozen, validated models of the YAML a methodologist writes.

A release config names the microdata, the variables with their hierarchical classifications, the
populations, the hypercubes (EU programme: Regulation (EU) 2017/712 Annex I), the protection steps,
the gate thresholds and the output store. ``cubeguard.config.load`` reads one from YAML and turns
every validation error into ``<key path> (line N): <what to change>``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from cubeguard.config.tables import TablesSpec
from cubeguard.cubes.spec import (
    Frozen,
    PopulationSpec,
    VariableSpec,
)
from cubeguard.methods.registry import CubeStepSpec, MicrodataStepSpec
from cubeguard.sdmx.spec import SdmxSpec
from cubeguard.secrets import SecretInt

SCHEMA_VERSION = 1


class VariableFile(Frozen):
    """A variable kept in its own classification file (path relative to the config)."""

    file: Path


_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class HypercubeSpec(Frozen):
    """One hypercube: its breakdowns (one dimension each) over a population."""

    id: str = Field(min_length=1)
    label: str = ""
    group: int | None = None
    population: str = "total"
    breakdowns: list[str] = Field(min_length=1)
    stand_in: bool = False
    note: str = ""
    sums: list[str] = Field(
        default_factory=list,
        description="Numeric columns whose sums the cube publishes beside the count (as 'sum.<column>'), "
        "perturbed with the cell key method for magnitudes of the cell key step that protects the cube (its "
        "'magnitudes' entry for the column; Handbook on SDC v2, 5.7), so a mean is published sum / published count.",
    )

    @field_validator("id")
    @classmethod
    def _safe_id(cls, value: str) -> str:
        if not _SAFE_NAME.fullmatch(value):
            raise ValueError(
                "a cube id names its folder and files: use 1 to 128 letters, digits, '.', '_' or '-', "
                "starting with a letter or digit"
            )
        return value

    @model_validator(mode="after")
    def _distinct(self) -> HypercubeSpec:
        seen = [b for i, b in enumerate(self.breakdowns) if b in self.breakdowns[:i]]
        if seen:
            raise ValueError(f"breakdown {seen[0]!r} is listed twice; list each breakdown once")
        twice = [c for i, c in enumerate(self.sums) if c in self.sums[:i]]
        if twice:
            raise ValueError(f"column {twice[0]!r} is listed twice in sums; list each column once")
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
        default_factory=lambda: ["csv"],  # type: ignore[arg-type]  # a list of the literal
        description="Flat files published beside the Zarr store, one per cube.",
    )
    audit_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL of the audit store (e.g. postgresql+psycopg://host/db); "
        "default: the SQLite file internal/audit.sqlite.",
    )
    total_code: str | None = Field(
        default=None,
        min_length=1,
        description="One code for the total of every variable (e.g. _T): each classification's root is "
        "renamed to it when the config loads, so stores, exports, the table service and the report agree. "
        "Default: each classification's own root code.",
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
    def key_store(self) -> Path:
        """What the table service reads: the release's codes and record keys (internal)."""
        return self.folder / "internal" / "keystore"

    def served_store(self, release_id: str) -> Path:
        """The key store of published release ``release_id`` (internal)."""
        return self.folder / "internal" / "tables" / release_id

    @property
    def validation_report(self) -> Path:
        """Full report of the last microdata validation."""
        return self.folder / "validation.json"


class GateSpec(Frozen):
    """Thresholds the release is gated on."""

    forbidden_values: list[int] = Field(default_factory=list)
    max_small_cells_unchanged: float | None = Field(default=None, ge=0, le=1)
    require_additivity: bool = False
    max_hellinger: float | None = Field(default=None, ge=0, le=1)
    max_mean_absolute_deviation: float | None = Field(default=None, ge=0)
    max_recovered_by_attack: int | None = Field(
        default=None,
        ge=0,
        description="Attack every published cube as an intruder who knows the methods and their parameters would "
        "(feasibility intervals, differencing, linking, averaging, means of published sums: `cubeguard attack`), and block the release if "
        "any cube has more small original cells (1s and 2s) recovered with certainty than this (0: none), or if "
        "an attack fails its self-test on the unprotected counts.",
    )


class ReleaseConfig(Frozen):
    """A whole release: input, classifications, hypercubes, steps, gates, output."""

    schema_version: Literal[1]
    name: str = Field(min_length=1)
    description: str = ""
    input: InputSpec
    variables: dict[str, VariableSpec] = Field(min_length=1)
    populations: dict[str, PopulationSpec] = Field(default_factory=lambda: {"total": PopulationSpec()})
    hypercubes: list[HypercubeSpec] = Field(min_length=1)
    pre_tabular: list[MicrodataStepSpec] = Field(default_factory=list)
    steps: list[CubeStepSpec] = Field(default_factory=list)
    gates: GateSpec = GateSpec()
    output: OutputSpec
    sdmx: SdmxSpec = Field(
        default_factory=SdmxSpec,
        description="SDMX names of the cubes, dimensions and codes (agency, dataflows, code mapping) for "
        "SDMX-CSV exports and the structure file.",
    )
    tables: TablesSpec | None = Field(
        default=None,
        description="Flexible tables on demand from this release (the release then writes an internal key store).",
    )
    allow_unprotected: str | None = Field(
        default=None,
        min_length=1,
        description="Why this release may publish cubes without a protection step or without a disclosure "
        "gate (recorded in the manifest and the audit). Without it such a release is refused.",
    )

    def steps_for(self, cube_id: str) -> list[tuple[int, CubeStepSpec]]:
        """The post-tabular steps that apply to cube ``cube_id``, in order, each with its index in ``steps``."""
        return [(k, s) for k, s in enumerate(self.steps) if s.cubes is None or cube_id in s.cubes]

"""What a cube is built from: classifications (codes, breakdowns) and populations, as frozen models.

The release config (:mod:`cubeguard.config.models`) holds these under ``variables`` and
``populations``; the cube machinery (:mod:`cubeguard.cubes.hierarchy`, :mod:`cubeguard.cubes.tabulate`)
reads them, so they live here, below the config.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


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

    Codes are the file's codes with their padding stripped (tau-ARGUS right-justifies codes to the
    column width; a leaf matches the raw value as it is), so every store and export holds one clean
    code per category. A group and a leaf that differ only by padding (the course AGE group ``11``
    and age ``" 11"``) would then be one code: ``group_prefix`` is put before every group code
    (neither a leaf nor the total) to keep them apart. ``cubeguard tau`` writes the file's own
    spelling back (tau-ARGUS 4.2 user's manual, section 5.1, hierarchical codelists).
    """

    hrc: Path
    total: str = Field(
        default="Total", description="The code of the root, which the file leaves out (output.total_code renames it)."
    )
    lead: str = Field(
        default="@", description="The lead string that marks one level of depth (tau-ARGUS HIERLEADSTRING)."
    )
    group_prefix: str = Field(
        default="",
        description="Put before every group code (not leaves, not the total), e.g. G: group 11 becomes G11, "
        "so it differs from leaf 11. Needed when a group and a leaf differ only by padding.",
    )

    @field_validator("group_prefix")
    @classmethod
    def _no_blanks(cls, value: str) -> str:
        if value != "".join(value.split()):
            raise ValueError("a group prefix must hold no blanks, as codes are stripped of them (e.g. G)")
        return value


class VariableSpec(Frozen):
    """A microdata column with its classification and the breakdowns derived from it."""

    column: str
    dtype: Literal["code", "integer"] = "code"
    label: str = ""
    note: str = ""
    codes: list[CodeSpec] = Field(min_length=1, description="Hierarchical code list, or {hrc: file}.")
    breakdowns: dict[str, BreakdownSpec] = Field(min_length=1)


class PopulationSpec(Frozen):
    """Which records a hypercube counts: a filter on raw values, and persons or households."""

    label: str = ""
    unit: Literal["persons", "households"] = "persons"
    where: dict[str, list[str] | list[int]] = Field(default_factory=dict)

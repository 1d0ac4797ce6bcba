"""The ``sdmx`` section of a release config: how its cubes are named and coded in SDMX.

SDMX (Statistical Data and Metadata eXchange, ISO 17369) describes a table by a data structure
definition (DSD): its dimensions, each with a code list, the measure ``OBS_VALUE`` and the
attributes. A dataflow points at a DSD; an SDMX-CSV file names the dataflow on every row. Census
Hub uploads need the dataflow, dimension and code ids of the structure they are checked against,
which are not cubeguard's codes ("2.1", "0", "AGE.M"), so this section maps one onto the other:

- ``dataflows``: cube id -> dataflow id (default ``CENSUS_<cube id>``, dots as ``_``);
- ``dimensions``: breakdown -> dimension id (default: the breakdown's variable part, ``AGE.M`` -> ``AGE``);
- ``codes``: dimension id -> {cubeguard code: SDMX code} (default: the code with every character
  an SDMX id may not hold replaced by ``_``; the total of each dimension becomes ``total_code``).

Every SDMX id is checked against the SDMX 3.0 patterns (``IDType`` for codes and artefacts,
``NCNameIDType`` for components; SDMXCommonReferences.xsd) when the config is read.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from cubeguard.cubes.spec import Frozen

#: SDMX 3.0 ``IDType``: codes, agencies, dataflows, DSDs, code lists.
ID_PATTERN = re.compile(r"[A-Za-z0-9_@$\-]+")
#: SDMX 3.0 ``NCNameIDType``: component (dimension, attribute) ids.
COMPONENT_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_\-]*")
#: SDMX 3.0 ``VersionType`` in its semantic form (``1.0``, ``2.1.0``).
VERSION_PATTERN = re.compile(r"[0-9]+(\.[0-9]+){1,2}")
#: SDMX cross-domain code list CL_OBS_STATUS (observation status): the codes a census may use.
OBS_STATUS = {
    "A": "Normal value",
    "B": "Time series break",
    "D": "Definition differs",
    "E": "Estimated value",
    "F": "Forecast value",
    "G": "Experimental value",
    "I": "Imputed value",
    "M": "Missing value; data cannot exist",
    "O": "Missing value",
    "P": "Provisional value",
    "Q": "Missing value; suppressed",
    "U": "Low reliability",
}
#: SDMX cross-domain code list CL_CONF_STATUS (confidentiality status). A published observation is
#: ``F`` (free), one exported from a store that is not a published release ``N`` (not for
#: publication), on every cell alike: flagging the cells a protection changed would tell a reader
#: which cells to attack.
CONF_STATUS = {
    "F": "Free",
    "N": "Not for publication, restricted for internal use only",
    "C": "Confidential statistical information",
    "D": "Secondary confidentiality set by the sender, not for publication",
    "A": "Primary confidentiality due to small counts",
}


def _check_id(value: str, pattern: re.Pattern[str], what: str) -> str:
    if not pattern.fullmatch(value):
        raise ValueError(f"{value!r} is not an SDMX {what} (pattern {pattern.pattern})")
    return value


class SdmxSpec(Frozen):
    """SDMX names of the release's cubes, dimensions and codes, and what each observation carries."""

    agency: str = Field(
        default="CUBEGUARD",
        description="Agency maintaining the data structure and dataflows (e.g. ESTAT for Census Hub).",
    )
    version: str = Field(default="1.0", description="Version of the dataflows, DSDs and code lists.")
    time_period: str = Field(default="2021", description="TIME_PERIOD of every observation (the census year).")
    csv_version: Literal["2.0", "1.0"] = Field(default="2.0", description="SDMX-CSV version of the exports.")
    structure: Path | None = Field(
        default=None,
        description="SDMX-ML structure file (DSDs, dataflows, code lists) every SDMX-CSV export is "
        "validated against before it is published; relative to the config.",
    )
    dataflows: dict[str, str] = Field(
        default_factory=dict, description="Cube id -> dataflow id (default CENSUS_<cube id>, dots as _)."
    )
    dimensions: dict[str, str] = Field(
        default_factory=dict, description="Breakdown -> dimension id (default: the variable part, AGE.M -> AGE)."
    )
    codes: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="Dimension id -> {cubeguard code: SDMX code}; codes not listed keep their own id "
        "(characters SDMX ids may not hold become _), the total becomes total_code.",
    )
    total_code: str = Field(default="_T", description="SDMX code of each dimension's total (SDMX convention _T).")
    obs_status: str = Field(default="A", description="OBS_STATUS of every observation (A: normal value).")

    @field_validator("agency", "total_code")
    @classmethod
    def _ids(cls, value: str) -> str:
        return _check_id(value, ID_PATTERN, "id")

    @field_validator("obs_status")
    @classmethod
    def _obs_status(cls, value: str) -> str:
        if value not in OBS_STATUS:
            raise ValueError(f"{value!r} is not in CL_OBS_STATUS; use one of {', '.join(OBS_STATUS)}")
        return value

    @field_validator("version")
    @classmethod
    def _version(cls, value: str) -> str:
        if not VERSION_PATTERN.fullmatch(value):
            raise ValueError(f"{value!r} is not an SDMX version; write it as 1.0 or 1.0.0")
        return value

    @field_validator("dataflows", "dimensions")
    @classmethod
    def _mapped_ids(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        pattern, what = (
            (ID_PATTERN, "dataflow id") if info.field_name == "dataflows" else (COMPONENT_PATTERN, "dimension id")
        )
        for ident in value.values():
            _check_id(ident, pattern, what)
        return value

    @field_validator("codes")
    @classmethod
    def _code_ids(cls, value: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        for dim, mapping in value.items():
            _check_id(dim, COMPONENT_PATTERN, "dimension id")
            for code in mapping.values():
                _check_id(code, ID_PATTERN, "code")
        return value

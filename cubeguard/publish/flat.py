"""Flat exports of a cube in any format: CSV and Parquet (:mod:`cubeguard.cubes.export`), SDMX-CSV (:mod:`cubeguard.sdmx.csv`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import cast

from pysdmx.model import DataStructureDefinition

from cubeguard.cubes.export import export_cube
from cubeguard.errors import CubeguardError
from cubeguard.sdmx.csv import FORMATS as CSV_FORMATS
from cubeguard.sdmx.csv import CsvVersion, export_sdmx_csv
from cubeguard.sdmx.spec import SdmxSpec
from cubeguard.sdmx.validate import validate_csv

FORMATS = ("csv", "parquet", "sdmx-csv")
CSV_VERSIONS = tuple(CSV_FORMATS)
SUFFIX = {"csv": "csv", "parquet": "parquet", "sdmx-csv": "sdmx.csv"}


def export_flat(
    store: Path,
    cube_id: str,
    fmt: str,
    target: Path | None = None,
    *,
    internal: bool = False,
    metadata: Mapping[str, str] | None = None,
    sdmx: SdmxSpec | None = None,
    sdmx_version: str | None = None,
    structures: dict[str, DataStructureDefinition] | None = None,
) -> Path:
    """Write cube ``cube_id`` of ``store`` as ``fmt``; return the file (default ``<cube>.<suffix>`` here).

    SDMX-CSV uses the names of ``sdmx`` (the release config's section; defaults without one) and,
    given ``structures`` (read from the section's structure file), is checked against them.
    """
    if fmt not in SUFFIX:
        raise CubeguardError(f"unknown export format {fmt!r}; use {', '.join(FORMATS)}")
    out = target or Path(f"{cube_id}.{SUFFIX[fmt]}")
    if fmt != "sdmx-csv":
        return export_cube(store, cube_id, fmt, out, internal=internal, metadata=metadata)
    if sdmx_version not in (None, *CSV_VERSIONS):
        raise CubeguardError(f"unknown SDMX-CSV version {sdmx_version!r}; use {' or '.join(CSV_VERSIONS)}")
    version = cast("CsvVersion | None", sdmx_version)
    export_sdmx_csv(store, cube_id, sdmx or SdmxSpec(), out, internal=internal, version=version)
    if structures is not None:
        validate_csv(out, structures)
    return out

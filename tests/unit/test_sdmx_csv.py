"""SDMX-CSV exports (``cubeguard.sdmx``): pysdmx's layout, block by block, and checked against a DSD."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pysdmx.io import get_datasets

from cubeguard.cubes.store import open_cube
from cubeguard.sdmx import csv as sdmx_csv
from cubeguard.sdmx.layout import layout_of_cube, layout_problems
from cubeguard.sdmx.spec import SdmxSpec
from cubeguard.sdmx.structure import write_structure
from cubeguard.sdmx.validate import SdmxValidationError, read_structures, validate_csv
from tests.unit.test_cubes_export import _cube, _expected

SPEC = SdmxSpec(agency="ESTAT", dataflows={"c1": "DF_C1"}, codes={"SEX": {"1": "M", "2": "F"}})


def sdmx2_columns(*dims: str) -> list[str]:
    """The columns of an SDMX-CSV 2.0 file of a cube with these dimensions, as cubeguard writes it."""
    return ["STRUCTURE", "STRUCTURE_ID", "ACTION", *dims, "TIME_PERIOD", "OBS_VALUE", "OBS_STATUS", "CONF_STATUS"]


HEADER_2 = ",".join(sdmx2_columns("GEO", "SEX", "AGE"))
PREPARED = datetime(2026, 11, 27, tzinfo=UTC)


def _files(tmp_path: Path, version: str = "2.0", internal: bool = False) -> tuple[Path, Path]:
    store, _ = _cube(tmp_path)
    data = sdmx_csv.export_sdmx_csv(store, "c1", SPEC, tmp_path / "c1.sdmx.csv", internal=internal, version=version)  # type: ignore[arg-type]
    structure = write_structure([layout_of_cube(SPEC, open_cube(store, "c1"))], tmp_path / "s.xml", PREPARED)
    return data, structure


@pytest.mark.parametrize("block_cells", [1, 7, 2_000_000])
@pytest.mark.parametrize(("version", "internal"), [("2.0", False), ("1.0", False), ("2.0", True)])
def test_the_block_writer_writes_the_bytes_pysdmx_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block_cells: int, version: str, internal: bool
) -> None:
    monkeypatch.setattr(sdmx_csv, "BLOCK_CELLS", block_cells)
    store, _ = _cube(tmp_path)
    written = sdmx_csv.export_sdmx_csv(store, "c1", SPEC, tmp_path / "c.csv", internal=internal, version=version)  # type: ignore[arg-type]
    assert written.read_text() == sdmx_csv.pysdmx_csv(open_cube(store, "c1"), SPEC, version, internal)  # type: ignore[arg-type]


def test_rows_hold_every_cell_once_in_cube_order_under_the_sdmx_names(tmp_path: Path) -> None:
    data, _ = _files(tmp_path)
    _, cube = _cube(tmp_path / "again")
    expected = _expected(cube)
    rows = pd.read_csv(data, dtype=str)
    assert ",".join(rows.columns) == HEADER_2
    assert set(rows["STRUCTURE_ID"]) == {"ESTAT:DF_C1(1.0)"} and set(rows["ACTION"]) == {"I"}
    assert rows["OBS_VALUE"].astype(int).tolist() == expected["count"].tolist()
    # GEO's total "GEO" and SEX's total "SEX" become _T; SEX 1/2 become M/F as configured.
    geo, sex, _ = expected.columns[:3]
    assert rows["GEO"].tolist() == expected[geo].replace({"GEO": "_T"}).tolist()
    assert rows["SEX"].tolist() == expected[sex].replace({"SEX": "_T", "1": "M", "2": "F"}).tolist()
    assert set(rows["TIME_PERIOD"]) == {"2021"} and set(rows["OBS_STATUS"]) == {"A"}
    assert set(rows["CONF_STATUS"]) == {"F"}  # published: free, on every cell alike


def test_an_internal_export_is_not_for_publication_on_every_row(tmp_path: Path) -> None:
    data, _ = _files(tmp_path, internal=True)
    assert set(pd.read_csv(data, dtype=str)["CONF_STATUS"]) == {"N"}


def test_an_sdmx_csv_2_file_round_trips_through_pysdmx_and_its_structure(tmp_path: Path) -> None:
    data, structure = _files(tmp_path)
    (dataset,) = get_datasets(data, structure)
    assert dataset.structure.id == "DF_C1" and [c.id for c in dataset.structure.components.dimensions] == [
        "GEO",
        "SEX",
        "AGE",
        "TIME_PERIOD",
    ]
    frame = dataset.data
    _, cube = _cube(tmp_path / "again")
    assert frame["OBS_VALUE"].astype(int).tolist() == cube["count"].values.ravel().tolist()
    assert str(frame["SEX"].dtype).startswith("string")  # codes come back as strings, not numbers
    assert [c.id for c in dataset.structure.components["SEX"].enumeration] == ["_T", "M", "F"]
    conformance = validate_csv(data, read_structures(structure))
    assert (conformance.dataflow, conformance.rows) == ("ESTAT:DF_C1(1.0)", cube["count"].size)


def test_an_sdmx_csv_1_file_conforms_too(tmp_path: Path) -> None:
    data, structure = _files(tmp_path, version="1.0")
    assert data.read_text().startswith("DATAFLOW,GEO,SEX,AGE,TIME_PERIOD,OBS_VALUE,OBS_STATUS,CONF_STATUS\n")
    assert validate_csv(data, read_structures(structure)).rows == 5 * 3 * 5 + 15  # 6 GEO x 3 SEX x 5 AGE


def _broken(tmp_path: Path, edit) -> str:  # type: ignore[no-untyped-def]
    data, structure = _files(tmp_path)
    lines = data.read_text().splitlines()
    data.write_text("\n".join(edit(lines)) + "\n")
    with pytest.raises(SdmxValidationError) as err:
        validate_csv(data, read_structures(structure))
    return str(err.value)


def test_a_code_outside_the_code_list_is_named(tmp_path: Path) -> None:
    def edit(lines: list[str]) -> list[str]:
        at = next(i for i, line in enumerate(lines) if ",M," in line)
        return [*lines[:at], lines[at].replace(",M,", ",X,"), *lines[at + 1 :]]

    message = _broken(tmp_path, edit)
    assert "SEX holds ['X'], not codes of its code list" in message


def test_a_negative_value_and_a_repeated_key_are_named(tmp_path: Path) -> None:
    def edit(lines: list[str]) -> list[str]:
        first = re.sub(r",2021,[0-9]+,", ",2021,-4,", lines[2])
        return [lines[0], lines[1], first, *lines[3:], lines[5]]

    message = _broken(tmp_path, edit)
    assert "OBS_VALUE holds ['-4'], not non-negative integers" in message
    assert "1 row(s) repeat the key of another row" in message


def test_a_missing_component_and_another_dataflow_are_named(tmp_path: Path) -> None:
    message = _broken(tmp_path, lambda lines: [ln.rsplit(",", 1)[0] for ln in lines])
    assert "the header lacks component(s) CONF_STATUS of DSD_DF_C1" in message
    other = _broken(tmp_path / "b", lambda lines: [ln.replace("DF_C1", "DF_C9") for ln in lines])
    assert "dataflow ESTAT:DF_C9(1.0) is not in the structure message; known: ESTAT:DF_C1(1.0)" in other


def test_the_structure_file_is_deterministic_and_names_its_agency(tmp_path: Path) -> None:
    _, first = _files(tmp_path / "a")
    _, second = _files(tmp_path / "b")
    assert first.read_bytes() == second.read_bytes()
    text = first.read_text()
    assert '<mes:Sender id="ESTAT"/>' in text and "2026-11-27T00:00:00" in text
    assert 'Codelist id="CL_SEX"' in text and 'Codelist id="CL_CONF_STATUS"' in text


def test_layout_problems_name_the_key_to_change(tmp_path: Path) -> None:
    store, _ = _cube(tmp_path)
    cube = open_cube(store, "c1")
    clash = SdmxSpec(codes={"SEX": {"1": "M", "2": "M"}, "AGE": {"A9": "X"}}, dataflows={"c7": "F"})
    found = dict(layout_problems(clash, [layout_of_cube(clash, cube)]))
    assert (
        found[("sdmx", "codes", "SEX")]
        == "codes '1' and '2' of SEX.None both become SDMX code 'M' in cube c1; map one of them to another code"
    )
    assert found[("sdmx", "codes", "AGE", "A9")] == "'A9' is not a code of dimension AGE"
    assert found[("sdmx", "dataflows", "c7")] == "no hypercube has id 'c7'; known: c1"
    same = SdmxSpec(dimensions={"SEX.None": "GEO"})
    assert dict(layout_problems(same, [layout_of_cube(same, cube)]))[("sdmx", "dimensions", "SEX.None")].startswith(
        "cube c1 has two dimensions with id 'GEO'"
    )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("agency", "ES TAT", "'ES TAT' is not an SDMX id"),
        ("version", "v1", "'v1' is not an SDMX version; write it as 1.0 or 1.0.0"),
        ("dimensions", {"AGE.M": "1AGE"}, "'1AGE' is not an SDMX dimension id"),
        ("codes", {"SEX": {"1": "M.1"}}, "'M.1' is not an SDMX code"),
        ("obs_status", "Z", "'Z' is not in CL_OBS_STATUS"),
    ],
)
def test_sdmx_ids_are_checked_against_the_sdmx_patterns(field: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        SdmxSpec.model_validate({field: value})


def test_values_stay_integers_of_any_size(tmp_path: Path) -> None:
    store, cube = _cube(tmp_path)
    layout = layout_of_cube(SPEC, open_cube(store, "c1"))
    big = cube["count"].copy(data=np.full(cube["count"].shape, 2**40, dtype=np.int64))
    table = sdmx_csv.sdmx_rows(big, layout, "2.0")
    assert set(table.column("OBS_VALUE").to_pylist()) == {2**40}

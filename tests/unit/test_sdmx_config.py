"""The ``sdmx`` config section: every naming problem found when the config is read, and the CLI around it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from cubeguard.config import load_release
from cubeguard.config.sdmx_check import release_layouts
from cubeguard.errors import CubeguardError
from cubeguard.publish.flat import export_flat
from cubeguard.sdmx.structure import write_structure
from tests.conftest import TINY_CONFIG, load_problems


def _config(extra: str, exports: str = "[csv]") -> str:
    return TINY_CONFIG.replace("output: {folder: out}", f"output: {{folder: out, exports: {exports}}}") + extra


def test_the_tiny_config_gets_default_sdmx_names(tiny_release: Path) -> None:
    release = load_release(tiny_release)
    first = release_layouts(release.config, release.breakdowns)[0]
    assert (first.dataflow_ref, [d.id for d in first.dimensions]) == ("CUBEGUARD:CENSUS_c1(1.0)", ["GEO", "SEX", "AGE"])
    assert first.dimensions[1].sdmx_codes == ("_T", "1", "2")


def test_a_mapped_code_no_cube_has_names_its_key_and_line(tmp_path: Path) -> None:
    problems = load_problems(tmp_path, _config("sdmx:\n  codes:\n    SEX: {'1': M, '3': X}\n"))
    assert problems == ["sdmx.codes.SEX.3 (c.yaml line 48): '3' is not a code of dimension SEX"]


def test_two_codes_mapped_to_one_sdmx_code_are_refused(tmp_path: Path) -> None:
    problems = load_problems(tmp_path, _config("sdmx:\n  codes:\n    GEO: {A1: X, A2: X}\n"))
    assert problems == [
        f"sdmx.codes.GEO (c.yaml line 48): codes 'A1' and 'A2' of GEO.2 both become SDMX code 'X' in cube {c}; "
        "map one of them to another code"
        for c in ("c1", "hh")
    ]


def test_an_id_sdmx_does_not_allow_names_its_key(tmp_path: Path) -> None:
    problems = load_problems(tmp_path, _config("sdmx:\n  dataflows: {c1: CENSUS.C1}\n"))
    assert len(problems) == 1 and problems[0].startswith("sdmx.dataflows (c.yaml line 47): ")
    assert "'CENSUS.C1' is not an SDMX dataflow id" in problems[0]


def _structure(folder: Path, config_text: str) -> Path:
    """The structure file of ``config_text``'s cubes, written as `cubeguard sdmx` does."""
    (folder / "s").mkdir()
    path = folder / "s" / "c.yaml"
    path.write_text(config_text)
    release = load_release(path)
    return write_structure(release_layouts(release.config, release.breakdowns), folder / "st.xml", datetime.now(UTC))


def test_a_structure_without_a_cubes_dataflow_is_refused_before_data_is_read(tmp_path: Path) -> None:
    structure = _structure(tmp_path, _config(""))
    problems = load_problems(
        tmp_path, _config(f"sdmx:\n  structure: {structure}\n  dataflows: {{c2: OTHER}}\n", "[sdmx-csv]")
    )
    assert problems == ["sdmx.structure (c.yaml line 47): st.xml has no dataflow CUBEGUARD:OTHER(1.0) for cube c2"]


def test_a_structure_whose_code_lists_lack_a_code_is_refused(tmp_path: Path) -> None:
    structure = _structure(tmp_path, _config(""))
    mapped = f"sdmx:\n  structure: {structure}\n  codes:\n    SEX: {{'1': M}}\n"
    problems = load_problems(tmp_path, _config(mapped, "[sdmx-csv]"))
    assert problems == [
        "sdmx.structure (c.yaml line 47): codes ['M'] of SEX (cube c1) are not in DSD_CENSUS_c1's code list"
    ]


def test_a_missing_structure_file_is_named(tmp_path: Path) -> None:
    problems = load_problems(tmp_path, _config("sdmx:\n  structure: nowhere.xml\n", "[sdmx-csv]"))
    assert problems == [f"sdmx.structure (c.yaml line 47): structure file {tmp_path / 'nowhere.xml'} does not exist"]


def test_the_cli_writes_a_structure_and_checks_files_against_it(tiny_release: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "st.xml"
    wrote = runner.invoke(app, ["sdmx", str(tiny_release), "--out", str(out), "--prepared", "2026-11-27T00:00:00Z"])
    assert wrote.exit_code == 0 and "(3 dataflows)" in _flat(wrote.output)
    assert "<mes:Prepared>2026-11-27T00:00:00" in out.read_text()
    bad = runner.invoke(app, ["sdmx", str(tiny_release), "--out", str(out), "--prepared", "yesterday"])
    assert bad.exit_code == 2 and "--prepared 'yesterday' is not an ISO 8601 time" in _flat(bad.output)
    data = tmp_path / "d.csv"
    data.write_text(
        "STRUCTURE,STRUCTURE_ID,ACTION,GEO,TIME_PERIOD,OBS_VALUE,OBS_STATUS,CONF_STATUS\n"
        "dataflow,CUBEGUARD:CENSUS_hh(1.0),I,_T,2021,12,A,F\n"
        "dataflow,CUBEGUARD:CENSUS_hh(1.0),I,Q,2021,3,A,F\n"
    )
    checked = runner.invoke(app, ["sdmx-check", str(data), "--structure", str(out)])
    assert checked.exit_code == 2 and "GEO holds ['Q'], not codes of its code list" in _flat(checked.output)
    data.write_text(data.read_text().replace(",Q,", ",A1,"))
    assert runner.invoke(app, ["sdmx-check", str(data), "--structure", str(out)]).exit_code == 0


def _flat(output: str) -> str:
    """CLI output with the terminal's line wrapping undone."""
    return " ".join(output.split())


def test_an_unknown_sdmx_csv_version_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CubeguardError, match=r"unknown SDMX-CSV version '3.0'; use 2.0 or 1.0"):
        export_flat(tmp_path / "s.zarr", "c1", "sdmx-csv", tmp_path / "x.csv", sdmx_version="3.0")


def test_a_rewritten_structure_file_is_read_again(tiny_release: Path, tmp_path: Path) -> None:
    from cubeguard.sdmx.validate import read_structures

    release = load_release(tiny_release)
    layouts = release_layouts(release.config, release.breakdowns)
    path = write_structure(layouts, tmp_path / "s.xml", datetime.now(UTC))
    assert len(read_structures(path)) == 3
    write_structure(layouts[:1], path, datetime.now(UTC))
    assert list(read_structures(path)) == ["CUBEGUARD:CENSUS_c1(1.0)"]

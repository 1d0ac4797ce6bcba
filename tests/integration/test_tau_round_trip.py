"""The course data through tau-ARGUS's fixed format: ``cubeguard tau --fixed``, then read back, tabulate the same cubes."""

from __future__ import annotations

from pathlib import Path

import pytest
import xarray as xr
from typer.testing import CliRunner

from cli.main import app
from cubeguard.config import load_release
from cubeguard.io.hrc import read_hrc
from cubeguard.pipeline.tabulation import tabulate_release
from tests.course import SHARED, course_config

DATA = SHARED / "external" / "censusprotection"
pytestmark = pytest.mark.skipif(not DATA.exists(), reason="shared course data not present")
TAU_INPUT = "microdata: ../../shared/external/censusprotection/test_data_10k_tau.csv.gz"
TAU_RDA = "metadata: ../../shared/external/censusprotection/test_data_10k_tau.rda"
HIERARCHIES = {
    "NUTS3": "nuts3_hierarchy.hrc",
    "AGE.H": "age_h_hierarchy.hrc",
    "COC.M": "coc_m_hierarchy.hrc",
    "POB.M": "pob_m_hierarchy.hrc",
}


def _cubes(config: Path) -> dict[str, xr.DataArray]:
    tab = tabulate_release(load_release(config))
    return {p.cube_id: tab.cube(c, {"cube_id": p.cube_id})["count"] for c, p in enumerate(tab.plans)}


def test_course_cubes_are_identical_from_the_written_fixed_format_files(tmp_path: Path) -> None:
    original = course_config(tmp_path / "original", "censusprotection")
    out = tmp_path / "tau"
    result = CliRunner().invoke(app, ["tau", str(original), "--out", str(out), "--fixed"])
    assert result.exit_code == 0, result.output
    assert {p.name for p in out.iterdir()} >= {"microdata.asc", "microdata.rda", *(f"{v}.hrc" for v in HIERARCHIES)}
    for variable, name in HIERARCHIES.items():  # the config's hierarchies, as tau-ARGUS will match them
        assert read_hrc(out / f"{variable}.hrc", strip=False) == read_hrc(DATA / "hierarchies" / name, strip=False)

    copy = course_config(
        tmp_path / "copy",
        "censusprotection",
        {TAU_INPUT: f"microdata: {out / 'microdata.asc'}", TAU_RDA: f"metadata: {out / 'microdata.rda'}"},
    )
    assert "microdata.asc" in copy.read_text() and "microdata.rda" in copy.read_text()
    before, after = _cubes(original), _cubes(copy)
    assert before.keys() == after.keys() and len(before) == 7
    for cube_id, counts in before.items():
        xr.testing.assert_identical(after[cube_id], counts)
        assert int(counts.sum()) > 0, cube_id

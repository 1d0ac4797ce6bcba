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
        shipped = (DATA / "hierarchies" / name).read_text().replace("\r\n", "\n").rstrip("\n") + "\n"
        assert (out / f"{variable}.hrc").read_text() == shipped  # line for line, but for line ends
    # The config's codes are stripped, AGE groups prefixed ("G11", age "11"); the file gets neither.
    age = [c.code for c in load_release(original).config.variables["AGE"].codes]
    assert {"G11", "11"} <= set(age) and all(c == c.strip() for c in age)
    back = course_config(tmp_path / "back", "censusprotection")
    age_yaml = tmp_path / "back" / "classifications" / "course" / "age.yaml"
    shipped_age = str(DATA / "hierarchies" / "age_h_hierarchy.hrc")
    assert shipped_age in age_yaml.read_text()
    age_yaml.write_text(age_yaml.read_text().replace(shipped_age, str(out / "AGE.H.hrc")))
    reread = load_release(back)
    assert (out / "AGE.H.hrc").resolve() in reread.sources
    assert [c.code for c in reread.config.variables["AGE"].codes] == age  # read back the same

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

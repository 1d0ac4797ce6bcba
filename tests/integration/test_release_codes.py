"""Clean codes in what a release publishes (issue 17 item 2): .hrc padding stripped, one total code."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from cubeguard.config import load_release
from cubeguard.cubes.store import open_cube
from cubeguard.release.run import PlainRunner, Results, prepare, walk
from cubeguard.release.spec import RunSpec
from cubeguard.release.steps import Services
from expectations.release import gate_release
from schemas.validate import validate_release
from tests.conftest import TINY_CONFIG, tiny_microdata
from tests.course import SHARED, course_config


def _publish(config: Path, release_id: str) -> Path:
    """Run the release of ``config`` in process; its published folder."""
    services = Services(validate=validate_release, gate=gate_release)
    spec, prepared = prepare(RunSpec(str(config), release_id=release_id), services)
    results: Results = {"prepare": prepared}
    walk(spec, PlainRunner(services), results)
    return load_release(config).config.output.folder / "published" / release_id


def _csv(published: Path, cube_id: str) -> pd.DataFrame:
    return pd.read_csv(published / "exports" / f"{cube_id}.csv", dtype=str, keep_default_na=False)


@pytest.mark.skipif(not (SHARED / "external" / "censusprotection").exists(), reason="shared course data not present")
def test_the_course_release_exports_stripped_distinct_codes(tmp_path: Path) -> None:
    config = course_config(tmp_path, "censusprotection")
    release = load_release(config)
    published = _publish(config, "codes")
    wide1 = _csv(published, "wide-1")  # NUTS3 x SEX x AGE.H
    ages = list(dict.fromkeys(wide1["AGE.H"]))
    assert ages == release.breakdowns["AGE.H"].codes  # every code, in the config's order
    assert ages[:4] == ["Total", "G1", "G11", "0"] and "11" in ages  # group 11 and age 11 are two codes
    assert len(wide1) == 48 * 3 * 129
    course1 = _csv(published, "course-1")  # SEX x COC.M x NUTS3
    assert list(dict.fromkeys(course1["COC.M"])) == ["Total", "1", "2", "21", "22", *map(str, range(221, 227))]
    for frame in (wide1, course1):
        codes = frame.drop(columns="count").to_numpy().ravel()
        assert all(c == c.strip() and c for c in codes)  # no padding anywhere
    store = open_cube(published / "store.zarr", "wide-1")
    assert list(store["AGE.H"].values) == ages


def test_the_total_code_reaches_the_stores_and_exports(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    tiny_microdata().to_parquet(tmp_path / "data" / "persons.parquet")
    assert "output: {folder: out}" in TINY_CONFIG
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY_CONFIG.replace("output: {folder: out}", "output: {folder: out, total_code: _T}"))
    published = _publish(config, "totals")
    c1 = _csv(published, "c1")  # GEO.2 x SEX x AGE.M: totals "0", "0" and "T" in the classifications
    for dim in ("GEO.2", "SEX", "AGE.M"):
        codes = list(dict.fromkeys(c1[dim]))
        assert codes[0] == "_T" and "0" not in codes and "T" not in codes, (dim, codes)
    grand = c1[(c1["GEO.2"] == "_T") & (c1["SEX"] == "_T") & (c1["AGE.M"] == "_T")]
    assert len(grand) == 1
    store = open_cube(published / "store.zarr", "c1")
    assert int(store["count"].sel({"GEO.2": "_T", "SEX": "_T", "AGE.M": "_T"})) == int(grand["count"].iloc[0])
    assert list(dict.fromkeys(_csv(published, "hh")["GEO.2"])) == ["_T", "A", "A1", "A2", "B", "B1"]

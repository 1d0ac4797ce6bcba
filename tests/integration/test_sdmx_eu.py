"""A published EU-programme release conforms to the SDMX structure the project ships for it.

``configs/sdmx/eu2021-structure.xml`` is written by ``cubeguard sdmx configs/eu2021.yaml`` (one DSD
and dataflow per hypercube, code lists of every breakdown). The release here publishes every cube
of the programme of at most 50,000 cells (21 cubes, four populations) as SDMX-CSV 2.0; its publish
step checks each file against the shipped structure, and the test checks them again with pysdmx.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
import yaml
from pysdmx.io import get_datasets, read_sdmx

from cli.main import app
from cubeguard.config import load_release
from cubeguard.cubes.store import open_cube
from cubeguard.release.run import PlainRunner, Results, prepare, walk
from cubeguard.release.spec import RunSpec
from cubeguard.release.steps import Services
from cubeguard.sdmx.validate import read_structures, validate_csv
from cubeguard.synth import generate
from expectations.release import gate_release
from schemas.validate import validate_release

ROOT = Path(__file__).resolve().parents[2]
EU = ROOT / "configs" / "eu2021.yaml"
SHIPPED = ROOT / "configs" / "sdmx" / "eu2021-structure.xml"
MAX_CELLS = 50_000

pytestmark = pytest.mark.slow


def _small_eu_config(folder: Path) -> Path:
    """configs/eu2021.yaml with its cubes of at most MAX_CELLS cells, on a small census, exporting SDMX-CSV."""
    release = load_release(EU)
    sizes = {c.id: math.prod(len(release.breakdowns[b].codes) for b in c.breakdowns) for c in release.config.hypercubes}
    data = yaml.safe_load(EU.read_text())
    data["hypercubes"] = [c for c in data["hypercubes"] if sizes[c["id"]] <= MAX_CELLS]
    data["input"] = {**data["input"], "microdata": str(folder / "persons.parquet")}
    data["input"].pop("synthetic")
    data["variables"] = {k: {"file": str(EU.parent / v["file"])} for k, v in data["variables"].items()}
    data["output"] = {"folder": str(folder / "out"), "exports": ["sdmx-csv"]}
    data["sdmx"]["structure"] = str(SHIPPED)
    config = folder / "eu-small.yaml"
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    return config


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("eu")
    generate(20_000, 11, folder, geography="national")
    config = _small_eu_config(folder)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CUBEGUARD_CKM_D", "5")
        env.setenv("CUBEGUARD_CKM_V", "3")
        services = Services(validate=validate_release, gate=gate_release)
        spec, prepared = prepare(RunSpec(str(config), release_id="eu-sdmx"), services)
        results: Results = {"prepare": prepared}
        walk(spec, PlainRunner(services), results)
    return folder / "out" / "published" / "eu-sdmx"


def test_every_sdmx_csv_file_of_the_release_conforms_to_the_shipped_structure(published: Path) -> None:
    dsds = read_structures(SHIPPED)
    files = sorted((published / "exports").glob("*.sdmx.csv"))
    assert len(files) == 21
    for path in files:
        cube = open_cube(published / "store.zarr", path.name.removesuffix(".sdmx.csv"))
        found = validate_csv(path, dsds)
        assert found.rows == cube["count"].size
        assert found.dataflow == f"CUBEGUARD:CENSUS_{cube.attrs['cube_id'].replace('.', '_')}(1.0)"


def test_an_sdmx_csv_2_file_round_trips_through_pysdmx_with_the_shipped_structure(published: Path) -> None:
    (dataset,) = get_datasets(published / "exports" / "1.1.sdmx.csv", SHIPPED)
    assert dataset.structure.id == "CENSUS_1_1"
    frame = dataset.data
    cube = open_cube(published / "store.zarr", "1.1")
    np.testing.assert_array_equal(frame["OBS_VALUE"].astype(np.int64).to_numpy(), cube["count"].values.ravel())
    assert set(frame["SEX"]) == {"_T", "M", "F"} and set(frame["GEO"]) == {"ZZ"}
    assert frame["AGE"].iloc[0] == "_T" and "Y_LT15" in set(frame["AGE"])
    assert set(frame["CONF_STATUS"]) == {"F"} and set(frame["TIME_PERIOD"]) == {"2021"}


def test_the_release_publishes_its_structure_beside_the_exports(published: Path) -> None:
    message = read_sdmx(published / "exports" / "structure.sdmx.xml")
    flows = [s for s in message.structures if type(s).__name__ == "Dataflow"]
    assert len(flows) == 21


def test_the_shipped_structure_is_what_cubeguard_sdmx_writes_for_the_config(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    prepared = re.search(r"<mes:Prepared>([^<]+)</mes:Prepared>", SHIPPED.read_text())
    assert prepared is not None
    when = datetime.fromisoformat(prepared.group(1).replace("Z", "+00:00")).isoformat()
    out = tmp_path / "s.xml"
    result = CliRunner().invoke(app, ["sdmx", str(EU), "--out", str(out), "--prepared", when])
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == SHIPPED.read_bytes(), (
        "configs/sdmx/eu2021-structure.xml is stale: rerun "
        "`cubeguard sdmx configs/eu2021.yaml --out configs/sdmx/eu2021-structure.xml --prepared <its time>`"
    )

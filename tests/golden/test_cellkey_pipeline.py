"""cellKey's per-cell outputs (golden T1-T6) reproduced through cubeguard's own pipeline.

CSV microdata -> config -> validation -> fused tabulation -> Zarr -> cell_key steps (with the
p-table files cellKey used) -> protected store; every cell of every table is compared with R.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cubeguard.ckm.perturb import cell_keys
from cubeguard.config import load_release
from cubeguard.cubes.store import open_cube
from cubeguard.pipeline.protection import protect_release
from cubeguard.pipeline.tabulation import tabulate_release, write_tabulation
from schemas.validate import validate_microdata

GOLDEN = Path(__file__).resolve().parents[3] / "shared" / "golden" / "cellkey"
# A missing GOLDEN skips, or fails in CI: tests/golden/conftest.py.

CONFIG = """\
schema_version: 1
name: cellkey-golden
input:
  microdata: {micro}
  format: csv
  csv: {{delimiter: ",", numeric: [rkey8]}}
  person_id: person_id
  household_id: null
  household_ref: null
  record_key: {record_key}
variables:
  GEO:
    column: district
    codes:
      - {{code: Total}}
      - {{code: R1, parent: Total}}
      - {{code: R1D1, parent: R1}}
      - {{code: R1D2, parent: R1}}
      - {{code: R1D3, parent: R1}}
      - {{code: R2, parent: Total}}
      - {{code: R2D1, parent: R2}}
      - {{code: R2D2, parent: R2}}
      - {{code: R3, parent: Total}}
      - {{code: R3D1, parent: R3}}
      - {{code: R3D2, parent: R3}}
      - {{code: R3D3, parent: R3}}
      - {{code: R3D4, parent: R3}}
    breakdowns: {{district: {{}}}}
  SEX:
    column: sex
    codes: [{{code: Total}}, {{code: "1", parent: Total}}, {{code: "2", parent: Total}}]
    breakdowns: {{sex: {{}}}}
  AGE:
    column: age
    codes: [{{code: Total}}, {{code: A1, parent: Total}}, {{code: A2, parent: Total}}, {{code: A3, parent: Total}},
            {{code: A4, parent: Total}}, {{code: A5, parent: Total}}, {{code: A6, parent: Total}}]
    breakdowns: {{age: {{}}}}
hypercubes:
{cubes}
steps:
{steps}
output: {{folder: {out}}}
"""
BINARY = {
    "T1_geo_x_sex_D5V3js2": (["district", "sex"], "D5_V3_js2"),
    "T2_geo_x_age_D5V3js2": (["district", "age"], "D5_V3_js2"),
    "T3_sex_x_age_D5V3js2": (["sex", "age"], "D5_V3_js2"),
    "T4_geo_x_sex_x_age_D5V3js2": (["district", "sex", "age"], "D5_V3_js2"),
    "T5_geo_x_sex_x_age_D8V3js2": (["district", "sex", "age"], "D8_V3_js2"),
}
DECIMAL = {"T6_geo_x_sex_x_age_D5V3js2_rkey8": (["district", "sex", "age"], "D5_V3_js2")}


def _run(tmp: Path, tables: dict[str, tuple[list[str], str]], record_key: str) -> Path:
    cubes = "\n".join(f"  - {{id: {t}, breakdowns: [{', '.join(d)}]}}" for t, (d, _) in tables.items())
    steps = "\n".join(
        f"  - {{method: cell_key, name: ck-{pt}, ptable_file: {GOLDEN / f'ptable_used_{pt}.csv'}, "
        f"cubes: [{', '.join(t for t, (_, p) in tables.items() if p == pt)}]}}"
        for pt in sorted({p for _, p in tables.values()})
    )
    text = CONFIG.format(micro=GOLDEN / "microdata_20000.csv", record_key=record_key, cubes=cubes, steps=steps, out=tmp)
    (tmp / "c.yaml").write_text(text)
    release = load_release(tmp / "c.yaml")
    assert validate_microdata(release, None).records == 20000
    write_tabulation(release, tabulate_release(release), release.config.output.original_store)
    protect_release(release, release.config.output.original_store, release.config.output.protected_store)
    return tmp


def _compare(folder: Path, table: str, dims: list[str], key_tolerance: float) -> None:
    golden = pd.read_csv(GOLDEN / f"{table}.csv", dtype={d: str for d in ("district", "sex", "age")})
    original = open_cube(folder / "original.zarr", table).load()
    protected = open_cube(folder / "protected.zarr", table).load()
    assert original["count"].size == len(golden)  # every cell, margins included, no more
    sel = {d: golden[d].to_numpy() for d in dims}
    idx = {d: pd.Index(original[d].values).get_indexer(sel[d]) for d in dims}
    pick = tuple(idx[d] for d in original["count"].dims)
    np.testing.assert_array_equal(original["count"].values[pick], golden["count"].to_numpy())
    np.testing.assert_array_equal(protected["noise"].values[pick], golden["noise"].to_numpy())
    np.testing.assert_array_equal(protected["count"].values[pick], golden["perturbed"].to_numpy())
    ck = cell_keys(original).values[pick]
    if key_tolerance == 0:
        np.testing.assert_array_equal(ck, golden["cell_key"].to_numpy())
    else:
        np.testing.assert_allclose(ck, golden["cell_key"].to_numpy(), rtol=0, atol=key_tolerance)


@pytest.mark.slow
def test_t1_to_t5_binary_keys_bit_identical(tmp_path: Path) -> None:
    folder = _run(tmp_path, BINARY, "{column: rkey}")
    for table, (dims, _) in BINARY.items():
        _compare(folder, table, dims, key_tolerance=0.0)


@pytest.mark.slow
def test_t6_eight_digit_keys(tmp_path: Path) -> None:
    # R sums the 8-digit keys as doubles in sdcTable's order (golden README 3.2); cubeguard sums the
    # exact decimals, order-independently. The largest difference R's rounding leaves is 1.15e-12.
    folder = _run(tmp_path, DECIMAL, "{column: rkey8, decimals: 8}")
    _compare(folder, "T6_geo_x_sex_x_age_D5V3js2_rkey8", DECIMAL["T6_geo_x_sex_x_age_D5V3js2_rkey8"][0], 2e-12)

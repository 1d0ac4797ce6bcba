"""A small published release with a ``tables`` section, walked without Prefect, for the table-service tests."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from cubeguard.release.run import PlainRunner, prepare, walk
from cubeguard.release.spec import RunSpec
from cubeguard.release.steps import Services
from expectations.release import gate_release
from schemas.validate import validate_release
from tests.conftest import TINY_CONFIG, tiny_microdata

TABLES = """\
tables:
  breakdowns: [GEO.1, GEO.2, SEX, AGE.L, AGE.M]
  populations: [total, households]
  max_dimensions: 3
  means: {age: {column: age, label: Age in years}}
"""
RELEASE_ID = "tiny-r1"
AGE_PTABLE = Path(__file__).resolve().parents[1] / "configs" / "ptables" / "demo_age_num.csv"
CELL_KEY = "{method: cell_key, D: 5, V: 3, js: 2"
#: Magnitude perturbations of age, which tables with means need: by the two largest ages of a cell
#: (cellKey's top contributions), or as configs/demo.yaml by the cell's mean (sums only: summed from crossings).
MAGNITUDES = {
    "top_contr": "type: top_contr, top_k: 2, mult: {mult: flex, fp: 1000, p_small: 0.3, p_large: 0.05, "
    "epsilon: [1, 0.5], q: 3}",
    "mean": "type: mean, mult: {mult: flex, fp: 1000, p_small: 0.3, p_large: 0.05, epsilon: [1], q: 3}",
}


def with_magnitudes(config: str, kind: str = "top_contr") -> str:
    """``config`` whose cell key step also perturbs the sums of age (for means)."""
    assert CELL_KEY + "}" in config
    spec = f", magnitudes: {{age: {{{MAGNITUDES[kind]}, ptable_file: {AGE_PTABLE}}}}}"
    return config.replace(CELL_KEY + "}", CELL_KEY + spec + "}")


def publish(
    folder: Path,
    tables: str = TABLES,
    data: pd.DataFrame | None = None,
    config: str = TINY_CONFIG,
    magnitudes: str = "top_contr",
) -> Path:
    """Write microdata and config into ``folder``, release them as ``RELEASE_ID``; return the config path."""
    (folder / "data").mkdir(parents=True)
    (tiny_microdata() if data is None else data).to_parquet(folder / "data" / "persons.parquet", row_group_size=2000)
    path = folder / "tiny.yaml"
    path.write_text((with_magnitudes(config, magnitudes) if "means:" in tables else config) + tables)
    services = Services(validate=validate_release, gate=gate_release)
    spec, prepared = prepare(RunSpec(str(path), release_id=RELEASE_ID), services)
    walk(spec, PlainRunner(services), {"prepare": prepared})
    return path

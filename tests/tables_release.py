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


def publish(folder: Path, tables: str = TABLES, data: pd.DataFrame | None = None, config: str = TINY_CONFIG) -> Path:
    """Write microdata and config into ``folder``, release them as ``RELEASE_ID``; return the config path."""
    (folder / "data").mkdir(parents=True)
    (tiny_microdata() if data is None else data).to_parquet(folder / "data" / "persons.parquet", row_group_size=2000)
    path = folder / "tiny.yaml"
    path.write_text(config + tables)
    services = Services(validate=validate_release, gate=gate_release)
    spec, prepared = prepare(RunSpec(str(path), release_id=RELEASE_ID), services)
    walk(spec, PlainRunner(services), {"prepare": prepared})
    return path

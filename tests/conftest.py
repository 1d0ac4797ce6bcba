"""Shared fixtures: a tiny release config and microdata written into a temporary folder."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tests.shared_data import pytest_runtest_makereport  # noqa: F401  (the hook: no shared-data skip in CI)

TINY_GEO_CODES = """\
    codes:
      - {code: "0", label: Country}
      - {code: "A", parent: "0"}
      - {code: "A1", parent: "A"}
      - {code: "A2", parent: "A"}
      - {code: "B", parent: "0"}
      - {code: "B1", parent: "B"}
"""  # the GEO code list of TINY_CONFIG
TINY_CONFIG = (
    """\
schema_version: 1
name: tiny
input:
  microdata: data/persons.parquet
  household_columns: [region]
variables:
  SEX:
    column: sex
    codes:
      - {code: "0", label: Total}
      - {code: "1", label: Males, parent: "0"}
      - {code: "2", label: Females, parent: "0"}
    breakdowns: {SEX: {}}
  AGE:
    column: age
    dtype: integer
    codes:
      - {code: T, label: Total}
      - {code: Y_LT15, parent: T}
      - {code: Y0-4, parent: Y_LT15, range: [0, 4]}
      - {code: Y5-14, parent: Y_LT15, range: [5, 14]}
      - {code: Y15-64, parent: T, range: [15, 64]}
      - {code: Y_GE65, parent: T, range: [65, 120]}
    breakdowns: {AGE.L: {depth: 1}, AGE.M: {}}
  GEO:
    column: region
"""
    + TINY_GEO_CODES
    + """    breakdowns: {GEO.1: {depth: 1}, GEO.2: {}}
populations:
  total: {}
  households: {unit: households}
hypercubes:
  - {id: c1, breakdowns: [GEO.2, SEX, AGE.M]}
  - {id: c2, breakdowns: [GEO.1, AGE.L]}
  - {id: hh, population: households, breakdowns: [GEO.2]}
steps:
  - {method: cell_key, D: 5, V: 3, js: 2}
output: {folder: out}
gates: {forbidden_values: [1, 2]}
"""
)
TINY_GATES = "gates: {forbidden_values: [1, 2]}\n"  # its last line: a release must have a disclosure gate


def load_problems(folder: Path, text: str, missing_ok: bool = False) -> list[str]:
    """The problems ``load_release`` finds in config ``text`` (written to ``folder/c.yaml``).

    Without ``missing_ok`` a config that loads fails the test.
    """
    from cubeguard.config import ConfigError, load_release

    path = folder / "c.yaml"
    path.write_text(text)
    try:
        load_release(path)
    except ConfigError as exc:
        return exc.problems
    if not missing_ok:
        pytest.fail("the config loaded without a problem")
    return []


def tiny_breakdowns() -> dict[str, Any]:
    """TINY_CONFIG's breakdowns by id (GEO.1, GEO.2, SEX, AGE.L, AGE.M)."""
    import tempfile

    from cubeguard.config import load_release

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "c.yaml").write_text(TINY_CONFIG)
        return dict(load_release(Path(folder) / "c.yaml").breakdowns)


def tiny_microdata(n_households: int = 3000, seed: int = 7) -> pd.DataFrame:
    """Persons in households for TINY_CONFIG: members share the region."""
    rng = np.random.default_rng(seed)
    size = rng.integers(1, 5, n_households)
    hid = np.repeat(np.arange(n_households), size)
    region = np.repeat(rng.choice(["A1", "A2", "B1"], n_households, p=[0.5, 0.3, 0.2]), size)
    n = hid.size
    first = np.r_[True, hid[1:] != hid[:-1]]
    return pd.DataFrame(
        {
            "pid": np.arange(n, dtype=np.int64),
            "hid": hid.astype(np.int64),
            "is_ref": first,
            "region": pd.Categorical(region),
            "sex": pd.Categorical(rng.choice(["1", "2"], n)),
            "age": rng.integers(0, 100, n).astype(np.int16),
            "rkey": rng.random(n),
        }
    )


@pytest.fixture
def tiny_release(tmp_path: Path) -> Path:
    """A folder with tiny.yaml and its microdata; returns the config path."""
    (tmp_path / "data").mkdir()
    tiny_microdata().to_parquet(tmp_path / "data" / "persons.parquet", row_group_size=2000)
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(TINY_CONFIG)
    return cfg


def write_config(folder: Path, text: str, name: str = "c.yaml") -> Path:
    """Write a config (dedented) into ``folder``."""
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


CELL_KEY_STEP = "  - {method: cell_key, D: 5, V: 3, js: 2}\n"  # TINY_CONFIG's one step


def protect_tiny(folder: Path, steps: str) -> tuple[dict[str, Any], dict[str, Any], list[object]]:
    """Tabulate and protect TINY_CONFIG (800 households) with ``steps``: original and protected cubes, loaded."""
    from cubeguard.config import load_release
    from cubeguard.cubes.store import list_cubes, open_cube
    from cubeguard.pipeline.protection import protect_release
    from cubeguard.pipeline.tabulation import tabulate_release, write_tabulation

    (folder / "data").mkdir(parents=True, exist_ok=True)
    tiny_microdata(n_households=800).to_parquet(folder / "data" / "persons.parquet")
    (folder / "c.yaml").write_text(TINY_CONFIG.replace(CELL_KEY_STEP, steps))
    rel = load_release(folder / "c.yaml")
    out = rel.config.output
    write_tabulation(rel, tabulate_release(rel), out.original_store)
    protect_release(rel, out.original_store, out.protected_store)
    ids = list_cubes(out.protected_store)
    original = {c: open_cube(out.original_store, c).load() for c in ids}
    protected = {c: open_cube(out.protected_store, c).load() for c in ids}
    return original, protected, list(rel.config.steps)


def config_problems(folder: Path, steps: str) -> list[str]:
    """The problems the config loader finds in TINY_CONFIG with its one step replaced by ``steps``."""
    return load_problems(folder, TINY_CONFIG.replace(CELL_KEY_STEP, steps), missing_ok=True)

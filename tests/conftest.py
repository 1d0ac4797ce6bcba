"""Shared fixtures: a tiny release config and microdata written into a temporary folder."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from cubeguard.testing.tiny import CELL_KEY_STEP, TINY_CONFIG, TINY_GATES, TINY_GEO_CODES, tiny_microdata
from tests.postgres import pg_url, postgres  # noqa: F401 - fixtures: a PostgreSQL server for the tests
from tests.shared_data import pytest_runtest_makereport  # noqa: F401  (the hook: no shared-data skip in CI)

__all__ = ["CELL_KEY_STEP", "TINY_CONFIG", "TINY_GATES", "TINY_GEO_CODES", "tiny_microdata"]


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

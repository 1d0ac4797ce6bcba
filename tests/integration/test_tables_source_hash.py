"""A key store is served only with the config it was released from; rules, output and SDMX names may change."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cubeguard.config import load_release
from cubeguard.errors import CubeguardError
from cubeguard.tables.engine import TableEngine
from cubeguard.tables.keystore import source_hash
from tests.integration.test_tables_engine import served  # noqa: F401  (fixture)


def test_rules_output_and_sdmx_names_do_not_change_the_source_hash(served: tuple[Path, TableEngine]) -> None:  # noqa: F811
    _, engine = served
    cfg = engine.release.config
    same = cfg.model_copy(
        update={
            "tables": cfg.tables.model_copy(update={"max_cells": 7}),  # type: ignore[union-attr]
            "sdmx": cfg.sdmx.model_copy(update={"agency": "ESTAT"}),
            "description": "another text",
        }
    )
    assert source_hash(same) == source_hash(cfg)
    other = cfg.model_copy(update={"populations": {**cfg.populations, "extra": cfg.populations["total"]}})
    assert source_hash(other) != source_hash(cfg)


def test_a_key_store_from_another_config_is_refused_with_what_to_do(
    served: tuple[Path, TableEngine],  # noqa: F811
    tmp_path: Path,
) -> None:
    config, engine = served
    changed = tmp_path / config.name
    changed.write_text(config.read_text().replace("V: 3", "V: 4"))
    (tmp_path / "data").symlink_to(config.parent / "data")
    release = load_release(changed)
    message = (
        f"the key store of release {engine.release_id} was written from another version of {config.name} (only its "
        "'tables' rules may change after a release); serve it with the config it was released with, or release again"
    )
    with pytest.raises(CubeguardError, match=re.escape(message)):
        TableEngine(release, engine.store, engine.protect, engine.release_id)

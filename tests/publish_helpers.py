"""A tiny protected release to publish, built once and copied per test (for the publish tests)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from cubeguard.config import Release, load_release
from cubeguard.pipeline.protection import protect_release
from cubeguard.pipeline.tabulation import tabulate_release, write_tabulation
from cubeguard.publish.checksums import tree_checksums
from cubeguard.publish.manifest import MANIFEST_NAME
from tests.conftest import TINY_CONFIG, tiny_microdata

CONFIG_NAME = "tiny.yaml"


def build_protected(folder: Path, config: str = TINY_CONFIG) -> Path:
    """Tabulate and protect a small TINY_CONFIG release in ``folder``; return the config path."""
    (folder / "data").mkdir(parents=True)
    tiny_microdata(n_households=300).to_parquet(folder / "data" / "persons.parquet")
    path = folder / CONFIG_NAME
    path.write_text(config)
    rel = load_release(path)
    out = rel.config.output
    write_tabulation(rel, tabulate_release(rel), out.original_store)
    protect_release(rel, out.original_store, out.protected_store)
    return path


def copy_release(built: Path, folder: Path) -> Release:
    """A copy of the release folder of ``built`` (a config path) in ``folder``, loaded from there."""
    shutil.copytree(built.parent, folder)
    return load_release(folder / built.name)


def complete(release_folder: Path) -> bool:
    """True when every file but the manifest is listed in the manifest with its checksum, and no other."""
    manifest = json.loads((release_folder / MANIFEST_NAME).read_text())
    files = tree_checksums(release_folder)
    files.pop(MANIFEST_NAME)
    return bool(files) and files == manifest["files"]

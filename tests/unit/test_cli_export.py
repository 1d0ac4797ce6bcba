"""``cubeguard export``: a published release's store exports as it is; any other store only with --internal, marked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from cubeguard.publish.checksums import tree_checksums
from cubeguard.publish.manifest import is_published_store
from tests.unit.test_cubes_export import _cube


def publish(store: Path, folder: Path) -> Path:
    """A copy of ``store`` laid out as a published release: ``folder/store.zarr`` and its manifest."""
    folder.mkdir(parents=True)
    shutil.copytree(store, folder / "store.zarr")
    (folder / "manifest.json").write_text(json.dumps({"files": tree_checksums(folder)}))
    return folder / "store.zarr"


def test_only_a_store_listed_in_a_published_manifest_is_published(tmp_path: Path, monkeypatch) -> None:
    store, _ = _cube(tmp_path)
    published = publish(store, tmp_path / "out" / "published" / "r1")
    assert is_published_store(published)
    monkeypatch.chdir(tmp_path / "out")
    assert is_published_store(Path("published/r1/store.zarr"))
    assert not is_published_store(store)  # e.g. original.zarr, protected.zarr
    staging = tmp_path / "out" / "published" / ".staging-r2-1"
    shutil.copytree(published.parent, staging)
    assert not is_published_store(staging / "store.zarr")  # not visible yet
    unlisted = tmp_path / "out" / "published" / "r3"
    shutil.copytree(published.parent, unlisted)
    shutil.copytree(store, unlisted / "original.zarr")
    assert not is_published_store(unlisted / "original.zarr")  # copied in, not in the manifest
    elsewhere = tmp_path / "elsewhere" / "r1"
    shutil.copytree(published.parent, elsewhere)
    assert not is_published_store(elsewhere / "store.zarr")  # not under published/
    (unlisted / "manifest.json").unlink()
    assert not is_published_store(unlisted / "store.zarr")


@pytest.mark.parametrize("fmt", ["csv", "parquet", "sdmx-csv"])
def test_an_internal_store_exports_only_with_internal(tmp_path: Path, fmt: str) -> None:
    store, _ = _cube(tmp_path)
    target = tmp_path / f"c1.{fmt}"
    refused = CliRunner().invoke(app, ["export", str(store), "--cube", "c1", "--format", fmt, "--out", str(target)])
    assert refused.exit_code == 2
    said = " ".join(refused.stderr.split())
    assert said == (
        f"Error: {store} is not a published release (published/<id>/ with a manifest that lists it), so its "
        "counts are not for publication; export from published/<id>/store.zarr, or add --internal to write them "
        "in a file marked INTERNAL - NOT FOR PUBLICATION"
    )
    assert not target.exists()
    marked = CliRunner().invoke(
        app, ["export", str(store), "--cube", "c1", "--format", fmt, "--out", str(target), "--internal"]
    )
    assert marked.exit_code == 0, marked.output
    assert "INTERNAL - NOT FOR PUBLICATION" in marked.stdout
    assert target.is_file()


def test_a_published_store_exports_unmarked_without_internal(tmp_path: Path) -> None:
    store, _ = _cube(tmp_path)
    published = publish(store, tmp_path / "out" / "published" / "r1")
    target = tmp_path / "c1.csv"
    done = CliRunner().invoke(app, ["export", str(published), "--cube", "c1", "--out", str(target)])
    assert done.exit_code == 0, done.output
    assert "INTERNAL" not in done.stdout and "INTERNAL" not in target.read_text()

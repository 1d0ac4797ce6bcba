"""Publishing a release: what lands in published/<id>, what never does, and what is refused."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
import xarray as xr
import zarr

import cubeguard.publish.stage as stage
from cubeguard.config import Release
from cubeguard.cubes.store import list_cubes, open_cube
from cubeguard.errors import CubeguardError, InternalError
from cubeguard.publish import (
    ReleaseExists,
    ReleaseLocked,
    check_release_id,
    make_release_id,
    publish_release,
    published_root,
    release_lock,
    tree_checksums,
)
from cubeguard.publish.checksums import BLOCK
from cubeguard.publish.public_store import PUBLIC_ATTRS
from tests.conftest import TINY_CONFIG
from tests.publish_helpers import build_protected, complete, copy_release

FORMATS = ("csv", "parquet", "sdmx-csv")
V_SECRET, KEY_SEED = "3.14159", "918273645"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_protected(tmp_path_factory.mktemp("built"))


@pytest.fixture
def release(built: Path, tmp_path: Path) -> Release:
    return copy_release(built, tmp_path / "rel")


def _publish(release: Release, release_id: str = "tiny-1", exports: tuple[str, ...] = ("csv",)) -> stage.PublishResult:
    return publish_release(release, release_id, release.config.output.protected_store, exports)


def test_a_release_holds_the_store_the_exports_and_a_manifest_that_lists_them(release: Release) -> None:
    result = _publish(release, exports=FORMATS)
    root = published_root(release)
    assert result.path == root / "tiny-1" == release.config.output.folder / "published" / "tiny-1"
    assert sorted(p.name for p in root.iterdir()) == [".lock", "tiny-1"]  # no staging folder left
    assert sorted(p.name for p in result.path.iterdir()) == ["exports", "manifest.json", "store.zarr"]
    assert sorted(p.name for p in (result.path / "exports").iterdir()) == sorted(
        [
            *(f"{c}.{ext}" for c in ("c1", "c2", "hh") for ext in ("csv", "parquet", "sdmx.csv")),
            "datapackage.json",
            "structure.sdmx.xml",
        ]
    )
    manifest = json.loads((result.path / "manifest.json").read_text())
    assert manifest == result.manifest
    assert manifest["files"] == result.checksums
    assert complete(result.path)
    assert manifest["release_id"] == "tiny-1" and manifest["release"] == "tiny"


def test_checksums_are_the_sha256_of_each_file(release: Release) -> None:
    result = _publish(release)
    assert len(result.checksums) > 10
    for rel, digest in result.checksums.items():
        assert "\\" not in rel and not rel.startswith("/")
        assert hashlib.sha256((result.path / rel).read_bytes()).hexdigest() == digest
    assert list(result.checksums) == sorted(result.checksums)


def test_tree_checksums_stream_large_files_and_sort_posix_paths(tmp_path: Path) -> None:
    big = np.random.default_rng(1).bytes(2 * BLOCK + 12345)
    (tmp_path / "b" / "deep").mkdir(parents=True)
    (tmp_path / "b" / "deep" / "big.bin").write_bytes(big)
    (tmp_path / "a.txt").write_bytes(b"a")
    (tmp_path / "empty").mkdir()
    assert tree_checksums(tmp_path) == {
        "a.txt": hashlib.sha256(b"a").hexdigest(),
        "b/deep/big.bin": hashlib.sha256(big).hexdigest(),
    }


def test_the_public_store_holds_published_counts_only(release: Release) -> None:
    result = _publish(release)
    public, protected = result.path / "store.zarr", release.config.output.protected_store
    assert list_cubes(public) == list_cubes(protected) == ["c1", "c2", "hh"]
    for cube_id in list_cubes(public):
        got, source = open_cube(public, cube_id), open_cube(protected, cube_id)
        assert "noise" in source  # the protected store has it: the public one must not
        assert list(got.data_vars) == ["count"]
        np.testing.assert_array_equal(got["count"].values, source["count"].values)
        for coord in source.coords:
            np.testing.assert_array_equal(got[coord].values, source[coord].values)
        assert set(got.attrs) <= set(PUBLIC_ATTRS) and "steps" in got.attrs
        group = zarr.open_group(public, path=cube_id, mode="r", zarr_format=3)
        labels = [f"{d}.label" for d in got.dims]  # labels are arrays here, for plain xarray users
        assert sorted(name for name, _ in group.arrays()) == sorted([*got.dims, *labels, "count"])
    text = b"".join((result.path / p).read_bytes() for p in result.checksums if p.endswith("zarr.json"))
    assert b"config_hash" not in text and release.config_hash.encode() not in text
    assert b"key_sum" not in text and b"noise" not in text and b"key_scale" not in text


def test_cubes_in_the_manifest_carry_the_published_totals(release: Release) -> None:
    result = _publish(release, exports=("csv", "parquet"))
    protected = release.config.output.protected_store
    by_id = {c["id"]: c for c in result.manifest["cubes"]}  # type: ignore[attr-defined]
    for cube_id in ("c1", "c2", "hh"):
        cube = open_cube(protected, cube_id)
        counts = cube["count"].values
        assert by_id[cube_id] == {
            "id": cube_id,
            "breakdowns": list(cube["count"].dims),
            "cells": counts.size,
            "total": int(counts.flat[0]),
        }
        table = pacsv.read_csv(result.path / "exports" / f"{cube_id}.csv")
        assert table.num_rows == counts.size
        assert pq.read_table(result.path / "exports" / f"{cube_id}.parquet").column("count").to_pylist() == (
            counts.ravel().tolist()
        )
    assert by_id["hh"]["total"] == int(open_cube(protected, "hh")["count"].sel({"GEO.2": "0"}))


def test_an_existing_release_is_refused_and_left_untouched(release: Release) -> None:
    first = _publish(release)
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in first.path.rglob("*") if p.is_file()}
    message = f"release tiny-1 was already published at {first.path}; choose another release id"
    with pytest.raises(ReleaseExists, match=re.escape(message)):
        _publish(release)
    assert {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in first.path.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in published_root(release).iterdir()) == [".lock", "tiny-1"]
    assert complete(_publish(release, "tiny-2").path)


@pytest.mark.parametrize("bad", ["", "../escape", "a/b", ".hidden", "tiny census-1", "x" * 129, "ümlaut"])
def test_a_bad_release_id_is_refused_before_anything_is_written(release: Release, bad: str) -> None:
    message = f"release id {bad!r} is not a safe folder name; use 1 to 128 letters, digits"
    with pytest.raises(CubeguardError, match=re.escape(message)):
        _publish(release, bad)
    assert not published_root(release).exists()


def test_release_ids_are_the_name_and_the_utc_time() -> None:
    when = datetime(2026, 11, 23, 0, 5, 1, tzinfo=timezone(timedelta(hours=1)))
    assert make_release_id("tiny", when) == "tiny-20261122T230501Z"
    assert check_release_id("eu2021-v1.2_final") == "eu2021-v1.2_final"
    with pytest.raises(CubeguardError, match=re.escape("release id 'EU census-20261122T230501Z' is not a safe")):
        make_release_id("EU census", when)
    with pytest.raises(InternalError, match="timezone-aware"):
        make_release_id("tiny", datetime(2026, 11, 22))
    assert make_release_id("tiny", datetime.now(UTC)).startswith("tiny-20")


def test_an_unknown_export_format_is_refused(release: Release) -> None:
    with pytest.raises(CubeguardError, match=re.escape("unknown export format 'xlsx'; use csv, parquet, sdmx-csv")):
        _publish(release, exports=("csv", "xlsx"))
    with pytest.raises(CubeguardError, match=re.escape("list a format twice; list each once")):
        _publish(release, exports=("csv", "csv"))
    assert not published_root(release).exists()


def test_a_failed_build_leaves_no_staging_folder_and_no_release(release: Release, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.zarr"
    with pytest.raises(CubeguardError, match=re.escape(f"store {missing} does not exist; check the path")):
        publish_release(release, "tiny-1", missing)
    assert sorted(p.name for p in published_root(release).iterdir()) == [".lock"]
    empty = tmp_path / "empty.zarr"
    zarr.open_group(empty, mode="w", zarr_format=3)
    with pytest.raises(CubeguardError, match=re.escape(f"store {empty} holds no cube; run the release steps")):
        publish_release(release, "tiny-1", empty)
    assert sorted(p.name for p in published_root(release).iterdir()) == [".lock"]


def test_a_locked_store_is_refused_and_nothing_is_written(release: Release) -> None:
    root = published_root(release)
    with release_lock(root), pytest.raises(ReleaseLocked, match="wait for it to finish, then run again"):
        _publish(release)
    assert sorted(p.name for p in root.iterdir()) == [".lock"]


def test_leftover_staging_folders_are_removed(release: Release) -> None:
    root = published_root(release)
    stale = root / ".staging-tiny-0-12345"
    (stale / "store.zarr").mkdir(parents=True)
    (stale / "store.zarr" / "zarr.json").write_text("{}")
    _publish(release)
    assert sorted(p.name for p in root.iterdir()) == [".lock", "tiny-1"]


def test_progress_and_checkpoints_follow_the_sequence(release: Release, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    monkeypatch.setattr(stage, "_checkpoint", seen.append)
    updates: list[tuple[str, int]] = []
    publish_release(
        release,
        "tiny-1",
        release.config.output.protected_store,
        ("csv", "parquet"),
        lambda s, n: updates.append((s, n)),
    )
    assert seen == [stage.CHECKPOINTS[0], *["store-copying"] * 3, *stage.CHECKPOINTS[2:]]
    assert list(dict.fromkeys(seen)) == list(stage.CHECKPOINTS)
    assert updates == [("publish", 1)] * (3 * (1 + 2))


def test_no_secret_reaches_a_published_file(tmp_path: Path) -> None:
    config = TINY_CONFIG.replace("D: 5, V: 3", f"D: 5, V: {V_SECRET}").replace(
        "  household_columns: [region]\n",
        f"  household_columns: [region]\n  record_key: {{generate_seed: {KEY_SEED}}}\n",
    )
    built = build_protected(tmp_path / "secret", config)
    release = copy_release(built, tmp_path / "rel")
    result = _publish(release, exports=FORMATS)
    files = [p for p in result.path.rglob("*") if p.is_file()]
    assert len(files) == len(result.checksums) + 1
    for path in files:
        data = path.read_bytes()
        for needle in (V_SECRET, KEY_SEED, release.config_hash):
            assert needle.encode() not in data, f"{needle} found in {path}"


def test_plain_xarray_reads_the_public_store_with_labels_and_without_a_warning(release: Release) -> None:
    result = _publish(release)
    for cube_id in list_cubes(result.path / "store.zarr"):
        plain = xr.open_zarr(result.path / "store.zarr", group=cube_id)  # warnings are errors in the tests
        ours = open_cube(release.config.output.protected_store, cube_id)
        for dim in ours["count"].dims:
            assert f"{dim}.label" in plain.coords
            assert plain[f"{dim}.label"].values.tolist() == ours[f"{dim}.label"].values.tolist()


def test_parquet_exports_carry_the_labels_and_the_release_id(release: Release) -> None:
    result = _publish(release, exports=("parquet",))
    meta = pq.ParquetFile(result.path / "exports" / "c1.parquet").metadata.metadata
    assert meta[b"cubeguard.release_id"] == result.path.name.encode()
    assert meta[b"cubeguard.cube_id"] == b"c1"
    labels = json.loads(meta[b"cubeguard.labels"])
    assert labels["SEX"] == {"0": "Total", "1": "Males", "2": "Females"}

"""Publish a release atomically: build it in a staging folder, then rename it into place.

Everything happens under the store's lock (:mod:`cubeguard.publish.lock`). The release is built in
``published/.staging-<release-id>-<pid>/`` (the public Zarr store, the flat exports and
``manifest.json``), flushed to disk, and moved to ``published/<release-id>/`` with one
``os.rename``, which POSIX makes atomic within a filesystem. A crash at any point therefore leaves
either the complete release or no folder of that id, and an earlier release is never opened for
writing. A staging folder left by a crash is removed by the next publish.

A caller that must record the release before it becomes visible (the audit record) passes
``commit``: it runs once the staged release is complete and flushed, just before the rename, and if
it raises, the staging folder is removed and nothing becomes visible.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from cubeguard.config.load import Release
from cubeguard.config.sdmx_check import release_layouts
from cubeguard.cubes.store import consolidate_store
from cubeguard.errors import CubeguardError, InternalError
from cubeguard.publish.checksums import tree_checksums
from cubeguard.publish.datapackage import write_data_package
from cubeguard.publish.flat import SUFFIX, export_flat
from cubeguard.publish.lock import release_lock
from cubeguard.publish.manifest import MANIFEST_NAME, PUBLISHED_NAME, build_manifest
from cubeguard.publish.public_store import write_public_store
from cubeguard.sdmx.structure import write_structure
from cubeguard.sdmx.validate import read_structures

STAGING_PREFIX = ".staging-"
STORE_NAME = "store.zarr"
EXPORTS_NAME = "exports"
EXPORT_SUFFIX = SUFFIX
#: The SDMX-ML structure message (code lists, DSDs, dataflows) published beside SDMX-CSV exports.
STRUCTURE_NAME = "structure.sdmx.xml"
CHECKPOINTS = (
    "staging-created",
    "store-copying",
    "store-copied",
    "exports-written",
    "manifest-written",
    "before-rename",
    "after-rename",
)
"""The points of the sequence at which crash tests stop a publish (see :func:`_checkpoint`)."""
COMMITTED = "committed"
"""The checkpoint right after ``commit`` returned (only when a ``commit`` is given)."""

_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")

Progress = Callable[[str, int], None]
EXPORT_THREADS = 2


class ReleaseExists(CubeguardError):
    """A release with this id is already published; it is never replaced."""


@dataclass(frozen=True)
class PublishResult:
    """A published release.

    Attributes:
        path: Its folder, ``published/<release-id>``.
        manifest: The content of its ``manifest.json``.
        checksums: SHA-256 of every file but the manifest, by relative posix path.
    """

    path: Path
    manifest: dict[str, object]
    checksums: dict[str, str]


def _checkpoint(name: str) -> None:
    """Do nothing; crash tests replace this function to stop a publish at ``name``."""


def published_root(release: Release) -> Path:
    """The folder releases of this config are published into: ``<output.folder>/published``."""
    return release.config.output.folder / PUBLISHED_NAME


def make_release_id(name: str, when: datetime) -> str:
    """A release id from the release name and a time: ``<name>-20261122T230501Z`` (UTC).

    Args:
        name: The release name (``name`` of the config).
        when: A timezone-aware time, usually now.

    Raises:
        CubeguardError: The id would not be a safe folder name (see :func:`check_release_id`).
    """
    if when.tzinfo is None:
        raise InternalError("make_release_id needs a timezone-aware time")
    return check_release_id(f"{name}-{when.astimezone(UTC):%Y%m%dT%H%M%SZ}")


def check_release_id(release_id: str) -> str:
    """Return ``release_id`` if it is a safe folder name, else raise :class:`CubeguardError`."""
    if not _SAFE_ID.fullmatch(release_id):
        raise CubeguardError(
            f"release id {release_id!r} is not a safe folder name; use 1 to 128 letters, digits, '.', '_' "
            "or '-', starting with a letter or digit (rename the release or choose another id)"
        )
    return release_id


def check_unpublished(release: Release, release_id: str) -> None:
    """Stop now if a release of this id is already published (publishing would refuse it at the end).

    Raises:
        ReleaseExists: ``published/<release_id>`` exists.
    """
    target = published_root(release) / check_release_id(release_id)
    if os.path.lexists(target):
        raise ReleaseExists(f"release {release_id} was already published at {target}; choose another release id")


def publish_release(
    release: Release,
    release_id: str,
    protected_store: Path,
    exports: Sequence[str] = ("csv",),
    progress: Progress | None = None,
    commit: Callable[[PublishResult, Path], None] | None = None,
) -> PublishResult:
    """Publish the protected store of a release as ``published/<release_id>``, all or nothing.

    Call it only after every gate passed. ``progress("publish", 1)`` is reported per cube written
    to the public store and per export file (``cubes * (1 + len(exports))`` in all).

    Args:
        release: The loaded release config.
        release_id: The new release's folder name (see :func:`make_release_id`).
        protected_store: The protected Zarr store the release steps wrote.
        exports: Flat export formats, each written per cube as ``exports/<cube>.<suffix>``.
        progress: Optional ``(stage, amount)`` callback.
        commit: Called with the release as it will be published and its staging folder, after the
            staged release is flushed and before the rename; if it raises, nothing is published.

    Returns:
        The published folder, its manifest and its checksums.

    Raises:
        CubeguardError: A bad release id or export format, or a missing or empty protected store.
        ReleaseExists: A release of this id is already published.
        ReleaseLocked: Another release is publishing into the same store.
    """
    check_release_id(release_id)
    _check_formats(exports)
    root = published_root(release)
    with release_lock(root):
        _remove_stale_staging(root)
        target = root / release_id
        if os.path.lexists(target):
            raise ReleaseExists(f"release {release_id} was already published at {target}; choose another release id")
        staging = root / f"{STAGING_PREFIX}{release_id}-{os.getpid()}"
        staging.mkdir()
        try:
            manifest, checksums = _build(release, release_id, protected_store, staging, exports, progress)
            if commit is not None:
                commit(PublishResult(target, manifest, checksums), staging)
                _checkpoint(COMMITTED)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        _checkpoint("before-rename")
        os.rename(staging, target)
        _checkpoint("after-rename")
        _fsync_dir(root)
    return PublishResult(target, manifest, checksums)


def _check_formats(exports: Sequence[str]) -> None:
    unknown = [f for f in exports if f not in EXPORT_SUFFIX]
    if unknown:
        raise CubeguardError(f"unknown export format {unknown[0]!r}; use {', '.join(EXPORT_SUFFIX)}")
    if len(set(exports)) != len(exports):
        raise CubeguardError(f"export formats {list(exports)} list a format twice; list each once")


def _remove_stale_staging(root: Path) -> None:
    """Remove staging folders of crashed publishes (we hold the lock, so none is in use)."""
    for leftover in root.glob(f"{STAGING_PREFIX}*"):
        shutil.rmtree(leftover)


def _build(
    release: Release,
    release_id: str,
    protected: Path,
    staging: Path,
    exports: Sequence[str],
    progress: Progress | None,
) -> tuple[dict[str, object], dict[str, str]]:
    """Write the store, the exports and the manifest into ``staging`` and flush them to disk.

    With SDMX-CSV exports, the release's SDMX-ML structure message is published beside them, and
    each file is checked against the config's structure file (``sdmx.structure``) when it names one;
    with CSV exports, a Frictionless Data Package (``datapackage.json``) giving each column's type.
    """
    _checkpoint("staging-created")
    when = datetime.now(UTC)
    sdmx = release.config.sdmx
    structures = read_structures(sdmx.structure) if sdmx.structure and "sdmx-csv" in exports else None
    if "sdmx-csv" in exports:
        write_structure(
            release_layouts(release.config, release.breakdowns), staging / EXPORTS_NAME / STRUCTURE_NAME, when
        )
    with ThreadPoolExecutor(max_workers=EXPORT_THREADS) as pool:
        written: list[Future[Path]] = []

        def copied(cube_id: str) -> None:
            if progress:
                progress("publish", 1)
            _checkpoint("store-copying")
            for fmt in exports:  # beside the copying of the next cubes: compression releases the GIL
                out = staging / EXPORTS_NAME / f"{cube_id}.{EXPORT_SUFFIX[fmt]}"
                meta = {"cubeguard.release_id": release_id}
                job = partial(export_flat, metadata=meta, sdmx=sdmx, structures=structures)
                written.append(pool.submit(job, staging / STORE_NAME, cube_id, fmt, out))

        cubes = write_public_store(protected, staging / STORE_NAME, release.config.output.chunk_cells, copied)
        _checkpoint("store-copied")
        for done in written:  # in order; the first failure stops the publish
            done.result()
            if progress:
                progress("publish", 1)
    consolidate_store(staging / STORE_NAME)  # after the exports, which read the cubes one by one
    if "csv" in exports:  # CSV has no types: say which columns hold codes (strings) and which counts
        write_data_package(staging / EXPORTS_NAME, release, [c.id for c in cubes])
    _checkpoint("exports-written")
    checksums = tree_checksums(staging)
    manifest = build_manifest(release_id, release, cubes, checksums, created_at=when)
    (staging / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    _checkpoint("manifest-written")
    _fsync_tree(staging)
    return manifest, checksums


def _fsync_tree(folder: Path) -> None:
    """Flush every file and folder under ``folder`` (itself included) to disk."""
    for top, _, names in os.walk(folder, topdown=False):
        for name in names:
            fd = os.open(Path(top, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(Path(top))


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

"""The public ``manifest.json`` of a release: methods (public parameters only), cubes, checksums.

Secret parameters (cell key D, V and pstay, the p-table itself, swap rates, k-anonymity, seeds,
record keys) must never be published. The parameters of each method are therefore listed through a
allow-list each method declares in its package (``public`` of its registry entry,
:mod:`cubeguard.methods.registry`): a field it does not name is not published. The manifest carries no hash of the
config either: a config holding a few small secret integers can be recovered from its hash by trying
every value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from cubeguard.config.load import Release
from cubeguard.errors import InternalError
from cubeguard.methods.models import StepModel
from cubeguard.methods.registry import method_of
from cubeguard.publish.public_store import PublishedCube

SCHEMA = "cubeguard-manifest/1"
MANIFEST_NAME = "manifest.json"
PUBLISHED_NAME = "published"


def public_step(step: StepModel) -> dict[str, object]:
    """What the manifest shows of one configured step: method, name, scope and public parameters.

    Args:
        step: A pre-tabular or post-tabular step of the release config.

    Returns:
        ``{"method", "name", "cubes", "parameters"}``; ``cubes`` is ``"all"`` or the listed ids.

    """
    cubes = getattr(step, "cubes", None)
    return {
        "method": step.method,
        "name": step.name,
        "cubes": "all" if cubes is None else list(cubes),
        "parameters": method_of(step).public(step),
    }


def build_manifest(
    release_id: str,
    release: Release,
    cubes: Sequence[PublishedCube],
    checksums: Mapping[str, str],
    created_at: datetime | None = None,
) -> dict[str, object]:
    """The public manifest of a release, as a JSON-ready dict.

    Args:
        release_id: The id of the release (its folder under ``published/``).
        release: The loaded release config.
        cubes: The published cubes (protected totals, never the original ones).
        checksums: SHA-256 of every published file but the manifest, by relative posix path.
        created_at: When the release was published (timezone-aware); now by default.

    Returns:
        The manifest: schema, release id and name, UTC creation time, cubeguard version, the
        methods with their public parameters, the cubes, the file checksums and, when the config
        gives one, the reason it may publish unprotected (``allow_unprotected``).
    """
    when = created_at or datetime.now(UTC)
    if when.tzinfo is None:
        raise InternalError("build_manifest needs a timezone-aware created_at")
    cfg = release.config
    manifest: dict[str, object] = {
        "schema": SCHEMA,
        "release_id": release_id,
        "release": cfg.name,
        "created_at": when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "cubeguard_version": cubeguard_version(),
        "methods": {
            "pre_tabular": [public_step(s) for s in cfg.pre_tabular],
            "steps": [public_step(s) for s in cfg.steps],
        },
        "cubes": [c.as_dict() for c in cubes],
        "files": dict(sorted(checksums.items())),
    }
    if cfg.allow_unprotected:  # why this release may publish cubes unprotected or ungated
        manifest["allow_unprotected"] = cfg.allow_unprotected
    return manifest


def cubeguard_version() -> str:
    """The installed cubeguard version, or ``"unknown"`` when run from an uninstalled checkout."""
    try:
        return version("cubeguard")
    except PackageNotFoundError:
        return "unknown"


def is_published_store(store: Path) -> bool:
    """Whether ``store`` is a published release's store: ``published/<id>/<store>``, listed in that folder's manifest.

    Every other store (``original.zarr``, ``protected.zarr``, a store copied anywhere else) holds
    counts that are not, or not yet, public.
    """
    store = Path(store).resolve()
    folder = store.parent
    if folder.parent.name != PUBLISHED_NAME or folder.name.startswith("."):  # ".staging-*": not yet published
        return False
    try:
        files = json.loads((folder / MANIFEST_NAME).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return any(str(name).startswith(f"{store.name}/") for name in files)

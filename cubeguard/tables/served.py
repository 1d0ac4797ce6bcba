"""Open a published release for flexible tables: config, key store, p-table and a consistency check.

The served release is the newest published one with a key store (or the one named). Its config is
loaded with the overrides of its run, and its protection step's secrets are those the audit
record holds for that publication, so the service protects exactly as the release did even when
the environment has changed since. Before serving, the engine rebuilds one published cube and
compares every cell: a key store, config or p-table that no longer matches stops the service.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from cubeguard.audit.record import AuditRecord
from cubeguard.config.load import Release, load_release
from cubeguard.cubes.store import list_cubes, open_cube
from cubeguard.errors import CubeguardError, InternalError
from cubeguard.methods.registry import CUBE_METHODS
from cubeguard.pipeline.auditing import audit_store_of
from cubeguard.pipeline.reproduce import recorded_overrides
from cubeguard.pipeline.resolved_steps import recorded_step
from cubeguard.publish.stage import published_root
from cubeguard.tables.engine import TableEngine
from cubeguard.tables.keystore import META, KeyStore
from cubeguard.tables.query import TableQuery


def open_served(config: Path, release_id: str | None = None, overrides: dict[str, Any] | None = None) -> TableEngine:
    """The engine for ``release_id`` (default: the newest published release with a key store).

    ``overrides`` change config keys (as ``--set`` does) to find the release, for example its
    ``output.folder``; the overrides recorded with the release are applied on top.
    """
    first = load_release(config, overrides or None)
    if first.config.tables is None:
        raise CubeguardError(f"{first.path.name} has no 'tables' section; add one and run the release to serve tables")
    rid = release_id or _newest(first)
    record = _publication(first, rid)
    _, recorded = recorded_overrides(record.config_text)
    plain = {k: v for k, v in recorded.items() if not (isinstance(v, dict) and {"env", "prefect_secret"} & set(v))}
    release = load_release(config, {**(overrides or {}), **plain}) if plain else first
    step = release.config.steps[0]  # the config check allows one consistent step, and only one
    method = CUBE_METHODS[step.method]
    if method.cells is None or not method.cellwise(step):
        raise InternalError(
            f"the {step.method} step passed the tables check but does not protect cell by cell; this is a bug in cubeguard"
        )
    resolved = recorded_step(step, "steps[0]", record.secrets, rid)
    store = KeyStore.open(release.config.output.served_store(rid))
    engine = TableEngine(release, store, method.cells(resolved), rid, method.magnitudes(resolved))
    engine.bounds = method.bounds(resolved) if method.bounds is not None else None
    check_consistency(engine, published_root(release) / rid / "store.zarr")
    return engine


def _newest(release: Release) -> str:
    out = release.config.output
    root = out.folder / "internal" / "tables"
    served = sorted(p for p in root.glob("*") if (p / META).is_file() and (published_root(release) / p.name).is_dir())
    if not served:
        raise CubeguardError(
            f"no published release of {release.path.name} has a key store in {root}; add 'tables' to the config "
            "and run the release"
        )
    return max(served, key=lambda p: (p / META).stat().st_mtime).name


def _publication(release: Release, release_id: str) -> AuditRecord:
    with audit_store_of(release, create=False) as store:
        for stored in store.records():
            record = stored.record
            if record.outcome == "published" and record.release_id == release_id:
                return record
    raise CubeguardError(f"the audit store has no publication of release {release_id!r}; name a published release")


def check_consistency(engine: TableEngine, published: Path, cube_id: str | None = None) -> str:
    """Rebuild a published cube through the engine and compare every cell; return its id.

    The first cube whose population and breakdowns the service offers is checked (or ``cube_id``).
    """
    spec = engine.spec
    for cube in engine.release.config.hypercubes:
        offered = cube.population in spec.populations and set(cube.breakdowns) <= set(spec.breakdowns)
        if (cube_id is None and offered) or cube.id == cube_id:
            break
    else:
        return ""
    if cube.id not in list_cubes(published):
        raise CubeguardError(f"cube {cube.id} is missing from {published}; the published release is incomplete")
    mine = engine.tabulate(TableQuery(breakdowns=list(cube.breakdowns), population=cube.population))
    theirs = open_cube(published, cube.id)["count"].values
    if mine["count"].shape != theirs.shape or not np.array_equal(mine["count"].values, theirs):
        raise CubeguardError(
            f"the key store of release {engine.release_id} does not reproduce published cube {cube.id}; "
            "serve the release with the config and key store it was published with, or release again"
        )
    return str(cube.id)

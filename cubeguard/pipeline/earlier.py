"""Earlier publications of the same microdata, as an intruder who kept them reads them beside a new release.

An intruder keeps every release it downloaded. A publication recorded in the release's audit store
whose input checksums equal this run's (the same microdata) publishes the same cells again, perhaps
protected otherwise (other parameters, another method): its noise and this release's can be
intersected (Handbook on SDC v2, 5.2). Each of its cubes whose layout equals a cube of this release
joins the attack as ``<cube>@<release id>``, with the bounds of the steps it was published with
(its recorded config and secrets) and this run's originals to score against. Its published files
are read from ``published/<release id>/``; a publication whose folder is gone is not attacked.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from cubeguard.attack import CubeView
from cubeguard.attack.system import Bounder
from cubeguard.audit.record import AuditRecord
from cubeguard.config.load import Release, load_release
from cubeguard.cubes.store import list_cubes, open_cube
from cubeguard.pipeline.auditing import audit_store_of
from cubeguard.pipeline.bounds import step_bounds
from cubeguard.pipeline.inputs import input_checksums
from cubeguard.pipeline.reproduce import recorded_overrides
from cubeguard.pipeline.resolved_steps import recorded_step
from cubeguard.publish.stage import published_root

#: How an earlier cube is named in the attack: ``<cube id>@<release id>``.
SEPARATOR = "@"


def earlier_publications(release: Release, current: str | None = None) -> list[AuditRecord]:
    """Publications of this release's microdata (same input checksums) whose folders are still there.

    ``current``: the release id of this run, left out. Newest first, one record per release id.
    """
    path = release.config.output.internal / "audit.sqlite"
    if not release.config.output.audit_url and not path.is_file():
        return []
    checksums = input_checksums(release)
    found: dict[str, AuditRecord] = {}
    with audit_store_of(release, create=False) as store:
        for stored in store.records():
            record = stored.record
            rid = record.release_id
            if record.outcome != "published" or not rid or rid == current or record.input_checksums != checksums:
                continue
            if (published_root(release) / rid / "store.zarr").is_dir():
                found[rid] = record
    return list(reversed(found.values()))


def recorded_release(release: Release, record: AuditRecord) -> Release:
    """The release as it was configured for ``record``'s publication (its recorded config and plain overrides).

    The recorded text is loaded from a temporary file beside the current config (so relative paths
    resolve as they did), removed afterwards; secret references stay references.
    """
    text, overrides = recorded_overrides(record.config_text)
    plain = {k: v for k, v in overrides.items() if not (isinstance(v, dict) and {"env", "prefect_secret"} & set(v))}
    temp = release.path.parent / f".earlier-{record.run_id[:12]}-{release.path.name}"
    temp.write_text(text, encoding="utf-8")
    try:
        return load_release(temp, plain or None)
    finally:
        temp.unlink(missing_ok=True)


def earlier_views(
    release: Release, views: Sequence[CubeView], current: str | None = None
) -> tuple[list[CubeView], dict[str, Bounder | None]]:
    """The cubes of earlier publications that lay out as a cube of ``views``, named ``<cube>@<release id>``."""
    mine = {v.cube: v for v in views}
    out: list[CubeView] = []
    bounds: dict[str, Bounder | None] = {}
    for record in earlier_publications(release, current):
        rid = str(record.release_id)
        then = recorded_release(release, record)
        store = published_root(release) / rid / "store.zarr"
        for cube_id in list_cubes(store):
            now = mine.get(cube_id)
            if now is None:
                continue
            view = CubeView.of(open_cube(store, cube_id).load())
            if (view.population, view.dims, view.codes) != (now.population, now.dims, now.codes):
                continue  # redefined since: its cells are not this release's
            if np.array_equal(view.published, now.published):
                continue  # published alike (this release's own folder, or the same protection again): nothing new
            name = f"{cube_id}{SEPARATOR}{rid}"
            out.append(dataclasses.replace(view, cube=name, original=now.original))
            bounds[name] = recorded_bounds(then, cube_id, record.secrets, rid)
    return out, bounds


def recorded_bounds(release: Release, cube_id: str, secrets: Mapping[str, object], release_id: str) -> Bounder | None:
    """The bounds of ``cube_id`` as an earlier release published it, its secrets from its audit record."""
    return step_bounds(release, cube_id, lambda k, step: recorded_step(step, f"steps[{k}]", secrets, release_id))


def earlier_of(cube: str) -> tuple[str, str | None]:
    """``(cube id, release id)`` of an attacked cube's name; the release id is None for this release's own."""
    cube_id, mark, rid = cube.partition(SEPARATOR)
    return (cube_id, rid) if mark else (cube, None)

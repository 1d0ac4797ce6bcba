"""Tabulate every hypercube of a release in one streaming pass and write them to a Zarr store."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import zarr

from cubeguard.ckm.keys import KeyScale
from cubeguard.config.load import Release
from cubeguard.config.models import InputSpec
from cubeguard.cubes.hierarchy import Breakdown
from cubeguard.cubes.store import write_cube
from cubeguard.cubes.tabulate import CubePlan, Tabulator
from cubeguard.errors import InternalError
from cubeguard.methods.registry import CUBE_METHODS
from cubeguard.microdata.read import iter_batches
from cubeguard.microdata.rkeys import keys_from_ids
from cubeguard.secrets import SecretResolver, resolve_number

Progress = Callable[[str, int], None]


@dataclass(frozen=True)
class CubeSummary:
    """What a person wants to see of a tabulated cube."""

    cube_id: str
    dims: int
    cells: int
    bottom_cells: int
    total: int
    zero_share: float

    def as_dict(self) -> dict[str, object]:
        """Plain-dict form (for task results and artifacts)."""
        return asdict(self)


def plans_for(release: Release, cube_ids: Iterable[str] | None = None) -> list[CubePlan]:
    """Cube plans for the release's hypercubes (all, or the listed ones)."""
    wanted = set(cube_ids) if cube_ids is not None else None
    return [
        CubePlan(c.id, tuple(release.breakdowns[b] for b in c.breakdowns), c.population, summed(release, c.id))
        for c in release.config.hypercubes
        if wanted is None or c.id in wanted
    ]


def summed(release: Release, cube_id: str) -> tuple[tuple[str, int], ...]:
    """The columns cube ``cube_id`` publishes sums of, each with the top contributions its perturbation reads.

    The first step applying to the cube that perturbs the column's sums (its method's
    ``magnitudes``) says how many; the config check makes sure there is one.
    """
    out = []
    for column in release.cube(cube_id).sums:
        for _, step in release.config.steps_for(cube_id):
            found = CUBE_METHODS[step.method].magnitudes(step).get(column)
            if found is not None:
                out.append((column, found.top_k))
                break
        else:
            raise InternalError(f"cube {cube_id}: no step perturbs the sums of {column!r}; this is a bug in cubeguard")
    return tuple(out)


def key_scale(release: Release) -> KeyScale:
    """The record-key representation the release's keys need."""
    rk = release.config.input.record_key
    return KeyScale("decimal", rk.decimals) if rk.decimals else KeyScale()


def new_tabulator(release: Release) -> Tabulator:
    """An empty tabulator for every hypercube of ``release``, with its record-key representation."""
    cfg = release.config
    return Tabulator(
        plans_for(release), cfg.populations, key_scale(release), cfg.input.record_key.column, cfg.input.household_ref
    )


def tabulation_source(release: Release) -> InputSpec:
    """The microdata the cubes are tabulated from: the swapped file when there are pre-tabular steps."""
    cfg = release.config
    if cfg.pre_tabular:
        return cfg.input.model_copy(update={"microdata": cfg.output.swapped_microdata, "format": "parquet"})
    return cfg.input


def tabulate_release(
    release: Release,
    batch_size: int = 1_000_000,
    progress: Progress | None = None,
    resolver: SecretResolver | None = None,
    part: tuple[list[int], int] = ([], 0),
) -> Tabulator:
    """One pass over the microdata accumulating the bottom cells of every hypercube.

    Reads the swapped microdata when the release has pre-tabular steps. With
    ``input.record_key.generate_seed`` the record keys are made from person ids (row numbers when
    the data have none) and the secret seed instead of being read from a column.

    ``part`` = (row groups, first row) tabulates one partition of a Parquet file (all of it when
    the list is empty); partial tabulators add up exactly (integer sums), whatever the split.
    """
    tab = new_tabulator(release)
    tab.first_row = part[1]
    for batch in keyed_batches(release, tab.columns, batch_size, resolver, part):
        tab.add_batch(batch)
        if progress:
            progress("tabulate", batch.num_rows)
    return tab


def keyed_batches(
    release: Release,
    columns: Iterable[str],
    batch_size: int = 1_000_000,
    resolver: SecretResolver | None = None,
    part: tuple[list[int], int] = ([], 0),
) -> Iterator[pa.RecordBatch]:
    """Batches of the tabulation source with ``columns``, the record-key column made when generated.

    With ``input.record_key.generate_seed`` the keys come from person ids (row numbers when the
    data have none) and the secret seed, so every reader of the microdata gets the same keys.
    """
    cfg = release.config
    rk = cfg.input.record_key
    seed = (
        None
        if rk.generate_seed is None
        else int(resolve_number(rk.generate_seed, "input.record_key.generate_seed", resolver))
    )
    wanted = {c for c in columns if not (seed is not None and c == rk.column)}
    if seed is not None and cfg.input.person_id:
        wanted.add(cfg.input.person_id)
    row_groups, first_row = part
    done = 0
    for batch in iter_batches(tabulation_source(release), sorted(wanted), batch_size, row_groups or None):
        if seed is not None:
            start = first_row + done
            ids = (
                batch.column(cfg.input.person_id).to_numpy(zero_copy_only=False)
                if cfg.input.person_id
                else np.arange(start, start + batch.num_rows)
            )
            batch = batch.append_column(rk.column, pa.array(keys_from_ids(ids, seed)))
        done += batch.num_rows
        yield batch


def write_tabulation(
    release: Release, tab: Tabulator, store: Path, progress: Progress | None = None, workers: int = 2
) -> list[CubeSummary]:
    """Expand margins and write every cube to ``store`` (replaced), ``workers`` cubes at a time.

    numpy's prefix sums and zarr's compression release the GIL, so threads use both cores while
    only ``workers`` full cubes are in memory at once.
    """
    if store.exists():
        shutil.rmtree(store)
    store.parent.mkdir(parents=True, exist_ok=True)
    zarr.open_group(store, mode="w", zarr_format=3)

    def one(c: int) -> CubeSummary:
        summary = _write_one(release, tab, c, store)
        if progress:
            progress("write", 1)
        return summary

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, range(len(tab.plans))))


def _write_one(release: Release, tab: Tabulator, c: int, store: Path) -> CubeSummary:
    plan = tab.plans[c]
    spec = release.cube(plan.cube_id)
    attrs = {
        "cube_id": spec.id,
        "label": spec.label,
        "population": spec.population,
        "unit": release.config.populations[spec.population].unit,
        "stand_in": spec.stand_in,
        "config_hash": release.config_hash,
        "hierarchies": {b.id: _hierarchy_version(b) for b in plan.breakdowns},
        "variables": {b.id: b.classification.variable for b in plan.breakdowns},
    }
    cube = tab.cube(c, attrs)
    write_cube(store, cube, release.config.output.chunk_cells)
    bottom, _ = tab.bottom(c)
    zero_share = float(np.mean(bottom == 0)) if bottom.size else 0.0
    return CubeSummary(
        spec.id, len(plan.breakdowns), int(cube["count"].size), int(bottom.size), int(bottom.sum()), zero_share
    )


def _hierarchy_version(bd: Breakdown) -> str:
    """A short fingerprint of a breakdown's codes and parents, stored with each cube."""
    text = "|".join(f"{c}<{p}" for c, p in zip(bd.codes, bd.parents, strict=True))
    return hashlib.sha256(text.encode()).hexdigest()[:16]

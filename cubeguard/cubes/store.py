"""The Zarr v3 store of a release: one group per hypercube, chunked, with its provenance in attrs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import xarray as xr
import zarr

from cubeguard.errors import CubeguardError


def chunks_for(cube: xr.Dataset, target_cells: int) -> dict[str, int]:
    """Chunk sizes that keep about ``target_cells`` cells per chunk, splitting the leading dims first."""
    sizes = dict(cube.sizes)
    out = {d: n for d, n in sizes.items()}
    total = int(np.prod(list(sizes.values()), dtype=np.int64))
    for d in sizes:
        if total <= target_cells:
            break
        rest = total // sizes[d]
        out[d] = max(1, target_cells // max(rest, 1))
        total = out[d] * rest
    return out


def write_cube(store: Path, cube: xr.Dataset, target_cells: int = 1_000_000) -> None:
    """Write one cube as group ``cube.attrs['cube_id']`` of a Zarr v3 store (replacing it)."""
    group = str(cube.attrs["cube_id"])
    attrs = {k: (json.dumps(v) if isinstance(v, (dict, list, tuple)) else v) for k, v in cube.attrs.items()}
    chunks = chunks_for(cube, target_cells)
    chunked = cube.assign_attrs(attrs)
    for name in list(chunked.data_vars):
        chunked[name] = chunked[name].chunk(chunks)
    for name in chunked.variables:
        chunked[name].encoding = {}
    chunked.to_zarr(store, group=group, mode="w", zarr_format=3, consolidated=False)


def open_cube(store: Path, cube_id: str) -> xr.Dataset:
    """Open one cube of a store lazily (Dask-backed)."""
    if not Path(store).exists():
        raise CubeguardError(f"store {store} does not exist; check the path")
    try:
        ds = xr.open_zarr(store, group=cube_id, zarr_format=3, consolidated=False)
    except (FileNotFoundError, KeyError, zarr.errors.GroupNotFoundError):
        raise CubeguardError(
            f"store {store} has no cube {cube_id!r}; run 'cubeguard inspect {store}' to list its cubes"
        ) from None
    ds.attrs = {k: _maybe_json(v) for k, v in ds.attrs.items()}
    return ds


def list_cubes(store: Path) -> list[str]:
    """Cube ids present in a store."""
    if not Path(store).exists():
        raise CubeguardError(f"store {store} does not exist; check the path")
    root = zarr.open_group(store, mode="r", zarr_format=3)
    return sorted(name for name, _ in root.groups())


def _maybe_json(v: object) -> object:
    if isinstance(v, str) and v[:1] in "[{":
        try:
            return json.loads(v)
        except json.JSONDecodeError:
            return v
    return v

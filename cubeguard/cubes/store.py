"""The Zarr v3 store of a release: one group per hypercube, chunked, with its provenance in attrs."""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import cast

# open_cube returns Dask-backed cubes. Importing dask.array here, when the module loads, keeps its
# first import out of a task's thread: on a Dask worker, a lazy import racing the worker's own
# unpickling of a message ended in a half-initialised dask.array and a dropped worker.
import dask.array  # noqa: F401
import numpy as np
import xarray as xr
import zarr

from cubeguard.errors import CubeguardError


def chunks_for(cube: xr.Dataset, target_cells: int) -> dict[str, int]:
    """Chunk sizes that keep about ``target_cells`` cells per chunk, splitting the leading dims first."""
    sizes = {str(d): n for d, n in cube.sizes.items()}
    out = {d: n for d, n in sizes.items()}
    total = int(np.prod(list(sizes.values()), dtype=np.int64))
    for d in sizes:
        if total <= target_cells:
            break
        rest = total // sizes[d]
        out[d] = max(1, target_cells // max(rest, 1))
        total = out[d] * rest
    return out


_AUX = ("parent", "depth", "label")


def write_cube(store: Path, cube: xr.Dataset, target_cells: int = 1_000_000, *, label_arrays: bool = False) -> None:
    """Write one cube as group ``cube.attrs['cube_id']`` of a Zarr v3 store (replacing it).

    The layout is what xarray itself writes (arrays named by variable with ``dimension_names``,
    one index array per dimension, attributes on the group), so ``xarray.open_zarr`` reads it;
    writing it with zarr directly avoids xarray's per-cube Dask graph. The per-dimension hierarchy
    coordinates (``<dim>.parent/.depth/.label``) are kept in one JSON attribute rather than as many
    tiny arrays; :func:`open_cube` restores them. With ``label_arrays`` (the published store) the
    labels are arrays ``<dim>.label`` instead, named in each variable's ``coordinates`` attribute,
    so that plain ``xarray.open_zarr`` shows them as coordinates.
    """
    group = str(cube.attrs["cube_id"])
    labels = [str(d) for d in cube.dims if f"{d}.label" in cube.coords] if label_arrays else []
    aux = {str(d): {k: cube[f"{d}.{k}"].values.tolist() for k in _AUX if f"{d}.{k}" in cube.coords} for d in cube.dims}
    for d in labels:
        del aux[d]["label"]
    attrs = {k: (json.dumps(v) if isinstance(v, (dict, list, tuple)) else v) for k, v in cube.attrs.items()}
    attrs["dim_coords"] = json.dumps(aux)
    chunks = chunks_for(cube, target_cells)
    root = zarr.open_group(store, mode="a", zarr_format=3)
    target = root.create_group(group, attributes=attrs, overwrite=True)
    for dim in cube.dims:
        codes = np.array([str(c) for c in cube[dim].values.tolist()], dtype=object)
        arr = target.create_array(
            str(dim), shape=codes.shape, dtype=str, chunks=codes.shape, dimension_names=[str(dim)], fill_value=""
        )
        arr[...] = codes
    for dim in labels:  # variable-length UTF-8 as the codes (Zarr's fixed-width text is not in its spec)
        text = np.array([str(v) for v in cube[f"{dim}.label"].values.tolist()], dtype=object)
        arr = target.create_array(
            f"{dim}.label", shape=text.shape, dtype=str, chunks=text.shape, dimension_names=[dim], fill_value=""
        )
        arr[...] = text
    for name in cube.data_vars:
        values = np.asarray(cube[name].values)
        dims = [str(d) for d in cube[name].dims]
        arr = target.create_array(
            str(name),
            shape=values.shape,
            dtype=values.dtype,
            chunks=tuple(chunks[d] for d in dims),
            dimension_names=dims,
            fill_value=0,
            attributes={"coordinates": " ".join(f"{d}.label" for d in dims if d in labels)} if labels else None,
        )
        arr[...] = values


def open_cube(store: Path, cube_id: str, *, dask: bool = True) -> xr.Dataset:
    """Open one cube of a store lazily, with its hierarchy coordinates restored.

    Dask-backed by default; with ``dask=False`` its arrays are xarray's lazily indexed ones, which
    read only the chunks a selection needs but have no chunks to iterate over.
    """
    return _open(store, cube_id, {} if dask else None)  # {}: the stored chunks, xarray's default


def load_cube(store: Path, cube_id: str, variables: Sequence[str] | None = None) -> xr.Dataset:
    """One cube of a store (only ``variables``, if given) read whole into memory, without Dask.

    What ``open_cube(...)[variables].load()`` gives, for steps that need every cell of a cube at
    once (protection, the report, publishing): Dask's graph for a small cube cost about as much as
    reading it (21 ms against 12 ms a cube of the EU programme).
    """
    cube = _open(store, cube_id, None)
    return (cube if variables is None else cube[list(variables)]).load()


def _open(store: Path, cube_id: str, chunks: dict[str, int] | None) -> xr.Dataset:
    if not Path(store).exists():
        raise CubeguardError(f"store {store} does not exist; check the path")
    try:
        ds: xr.Dataset = xr.open_zarr(store, group=cube_id, zarr_format=3, consolidated=False, chunks=chunks)
    except (FileNotFoundError, KeyError, zarr.errors.GroupNotFoundError):
        raise CubeguardError(
            f"store {store} has no cube {cube_id!r}; run 'cubeguard inspect {store}' to list its cubes"
        ) from None
    attrs = {k: _maybe_json(v) for k, v in ds.attrs.items()}
    # written by write_cube: {dim: {"parent" | "depth" | "label": values}}
    aux = cast("dict[str, dict[str, object]]", attrs.pop("dim_coords", {}))
    ds.attrs = attrs
    coords = {
        f"{d}.{k}": (d, np.asarray(v, dtype=np.int16 if k == "depth" else object))
        for d, kv in aux.items()
        for k, v in kv.items()
    }
    stored = {  # labels stored as arrays (the published store), as objects like the rest
        str(name): (ds[name].dims, np.asarray(ds[name].values, dtype=object))
        for name in ds.coords
        if str(name).endswith(".label") and str(name) not in coords
    }
    return ds.assign_coords({**coords, **stored})


def consolidate_store(store: Path) -> None:
    """Write the store's consolidated metadata, so that ``xarray.open_zarr`` reads it without a warning.

    Zarr 3 warns that consolidated metadata is not yet part of its format 3 specification; zarr and
    xarray read it, and a reader that does not know it reads the per-array metadata as before.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Consolidated metadata is currently not part")
        zarr.consolidate_metadata(store)


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

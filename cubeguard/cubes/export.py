"""Flat exports of a cube: one row per cell, codes as in the regulation (Census Hub style).

Only published values leave: the ``count`` variable and a cube's published sums (``sum.<column>``,
one column each), never ``key_sum`` or internal noise. Large
cubes are written block by block along their first dimension, so memory stays bounded.

An export of a store that is not a published release (exact counts of ``original.zarr``, or
``protected.zarr`` before its gates passed) is ``internal`` and says so in the file, in the way
each format allows: a first comment line in CSV, key-value metadata in Parquet. SDMX-CSV, which
needs the release's SDMX names, is written by :mod:`cubeguard.sdmx.csv`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import xarray as xr

from cubeguard.cubes.store import open_cube
from cubeguard.cubes.values import sum_name, summed_columns
from cubeguard.errors import CubeguardError

_EXT = {"csv": "csv", "parquet": "parquet"}
BLOCK_CELLS = 2_000_000
INTERNAL_MARK = "INTERNAL - NOT FOR PUBLICATION"
#: The Parquet key-value metadata key that holds :data:`INTERNAL_MARK` in an internal export.
STATUS_KEY = "cubeguard.status"


def export_cube(
    store: Path,
    cube_id: str,
    fmt: str,
    out_file: Path | None = None,
    internal: bool = False,
    metadata: Mapping[str, str] | None = None,
) -> Path:
    """Write cube ``cube_id`` of ``store`` as ``fmt`` (csv or parquet); return the file.

    ``internal`` marks the file as not for publication (see the module docstring); give it for
    every store that is not a published release. A Parquet file also carries, as key-value
    metadata, the cube's id, its label and each dimension's code labels (:func:`parquet_metadata`),
    and ``metadata`` (the publisher adds the release id).
    """
    if fmt not in _EXT:
        raise CubeguardError(f"unknown export format {fmt!r}; use csv or parquet")
    cube = open_cube(store, cube_id, dask=False)  # blocks read their chunks only
    target = out_file or Path(f"{cube_id}.{_EXT[fmt]}")
    target.parent.mkdir(parents=True, exist_ok=True)
    blocks = _blocks(cube, fmt)
    first = next(blocks)
    if fmt == "parquet":
        # Code columns go in as dictionaries, which Parquet stores as they are; without the Arrow
        # schema in the file, readers see plain string columns, as with any dictionary-encoded column.
        with pq.ParquetWriter(target, first.schema, compression="zstd", store_schema=False) as w:
            w.add_key_value_metadata({**parquet_metadata(cube), **(metadata or {})})
            if internal:
                w.add_key_value_metadata({STATUS_KEY: INTERNAL_MARK})
            w.write_table(first)
            for t in blocks:
                w.write_table(t)
    else:
        with target.open("wb") as sink:
            if internal:
                sink.write(
                    f"# {INTERNAL_MARK}: cube {cube_id} of {Path(store).name}, not a published release\n".encode()
                )
            with pacsv.CSVWriter(sink, first.schema) as w:
                w.write_table(first)
                for t in blocks:
                    w.write_table(t)
    return target


def parquet_metadata(cube: xr.Dataset) -> dict[str, str]:
    """The cube's id and label, and ``{dimension: {code: label}}`` as JSON, for a Parquet file's metadata."""
    dims = [str(d) for d in cube["count"].dims]
    labels = {
        d: dict(zip(map(str, cube[d].values.tolist()), map(str, cube[f"{d}.label"].values.tolist()), strict=True))
        for d in dims
        if f"{d}.label" in cube.coords
    }
    return {
        "cubeguard.cube_id": str(cube.attrs.get("cube_id", "")),
        "cubeguard.cube_label": str(cube.attrs.get("label", "")),
        "cubeguard.labels": json.dumps(labels, ensure_ascii=False),
    }


def _blocks(cube: xr.Dataset, fmt: str) -> Iterator[pa.Table]:
    sums = [sum_name(c) for c in summed_columns(cube)]
    for part in _slices(cube["count"], BLOCK_CELLS):
        block = cube[["count", *sums]].isel(part).load()
        yield cell_table(block["count"], fmt, {name: block[name] for name in sums})


def _slices(counts: xr.DataArray, cells: int) -> Iterator[dict[str, slice]]:
    """Selections of about ``cells`` cells along the first dimension of ``counts``."""
    lead = str(counts.dims[0])
    rest = int(np.prod([counts.sizes[d] for d in counts.dims[1:]], dtype=np.int64)) if counts.ndim > 1 else 1
    step = max(1, cells // max(rest, 1))
    for start in range(0, counts.sizes[lead], step):
        yield {lead: slice(start, start + step)}


def count_blocks(cube: xr.Dataset, cells: int) -> Iterator[xr.DataArray]:
    """The cube's ``count`` in blocks along its first dimension of about ``cells`` cells, each loaded."""
    for part in _slices(cube["count"], cells):
        yield cube["count"].isel(part).load()


def cell_table(block: xr.DataArray, fmt: str, sums: Mapping[str, xr.DataArray] | None = None) -> pa.Table:
    """One row per cell of ``block`` in C order: a code column per dimension, the count, then each of ``sums``.

    Parquet keeps the code columns dictionary-encoded; CSV gets plain strings.
    """
    cols: dict[str, pa.Array] = {}
    for axis, d in enumerate(block.dims):
        codes = code_column(block.shape, axis, [str(v) for v in block[d].values])
        cols[str(d)] = codes if fmt == "parquet" else codes.cast(pa.string())
    cols["count"] = pa.array(block.values.ravel())
    for name, values in (sums or {}).items():
        cols[name] = pa.array(values.values.ravel())
    return pa.table(cols)


def code_column(shape: tuple[int, ...], axis: int, codes: list[str]) -> pa.DictionaryArray:
    """The code of axis ``axis`` for every cell of an array of ``shape`` in C order, as dictionary indices."""
    along = [-1 if a == axis else 1 for a in range(len(shape))]
    indices = np.broadcast_to(np.arange(shape[axis], dtype=np.int32).reshape(along), shape).ravel()
    return pa.DictionaryArray.from_arrays(pa.array(indices), pa.array(codes, type=pa.string()))

"""Flat exports of a cube: one row per cell, codes as in the regulation (Census Hub style).

Only published values leave: the ``count`` variable, never ``key_sum`` or internal noise. Large
cubes are written block by block along their first dimension, so memory stays bounded.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import xarray as xr

from cubeguard.cubes.store import open_cube
from cubeguard.errors import CubeguardError

_EXT = {"csv": "csv", "parquet": "parquet", "sdmx-csv": "sdmx.csv"}
BLOCK_CELLS = 2_000_000


def export_cube(store: Path, cube_id: str, fmt: str, out_file: Path | None = None) -> Path:
    """Write cube ``cube_id`` of ``store`` as ``fmt`` (csv, parquet or sdmx-csv); return the file."""
    if fmt not in _EXT:
        raise CubeguardError(f"unknown export format {fmt!r}; use csv, parquet or sdmx-csv")
    cube = open_cube(store, cube_id)
    target = out_file or Path(f"{cube_id}.{_EXT[fmt]}")
    target.parent.mkdir(parents=True, exist_ok=True)
    blocks = _blocks(cube, fmt)
    first = next(blocks)
    if fmt == "parquet":
        # Code columns go in as dictionaries, which Parquet stores as they are; without the Arrow
        # schema in the file, readers see plain string columns, as with any dictionary-encoded column.
        with pq.ParquetWriter(target, first.schema, compression="zstd", store_schema=False) as w:
            w.write_table(first)
            for t in blocks:
                w.write_table(t)
    else:
        with pacsv.CSVWriter(target, first.schema) as w:
            w.write_table(first)
            for t in blocks:
                w.write_table(t)
    return target


def _blocks(cube: xr.Dataset, fmt: str) -> Iterator[pa.Table]:
    counts = cube["count"]
    dims = list(counts.dims)
    lead = dims[0]
    rest = int(np.prod([counts.sizes[d] for d in dims[1:]], dtype=np.int64)) if len(dims) > 1 else 1
    step = max(1, BLOCK_CELLS // max(rest, 1))
    for start in range(0, counts.sizes[lead], step):
        block = counts.isel({lead: slice(start, start + step)}).load()
        yield _table(block, cube.attrs, fmt)


def _table(block: xr.DataArray, attrs: dict[str, object], fmt: str) -> pa.Table:
    """One row per cell of ``block`` in C order: a code column per dimension, then the count."""
    dims = [str(d) for d in block.dims]
    cols: dict[str, pa.Array] = {}
    if fmt == "sdmx-csv":
        cols["DATAFLOW"] = _repeated(f"CUBEGUARD:CENSUS_{attrs.get('cube_id')}(1.0)", block.size)
    for axis, d in enumerate(dims):
        codes = _code_column(block, axis)
        cols[_sdmx_dim(d) if fmt == "sdmx-csv" else d] = codes if fmt == "parquet" else codes.cast(pa.string())
    cols["OBS_VALUE" if fmt == "sdmx-csv" else "count"] = pa.array(block.values.ravel())
    return pa.table(cols)


def _code_column(block: xr.DataArray, axis: int) -> pa.DictionaryArray:
    """The code of axis ``axis`` for every cell, as dictionary indices into the axis's codes."""
    shape = block.shape
    along = [-1 if a == axis else 1 for a in range(len(shape))]
    indices = np.broadcast_to(np.arange(shape[axis], dtype=np.int32).reshape(along), shape).ravel()
    codes = pa.array([str(v) for v in block[block.dims[axis]].values], type=pa.string())
    return pa.DictionaryArray.from_arrays(pa.array(indices), codes)


def _repeated(value: str, n: int) -> pa.Array:
    """``value`` ``n`` times, without a Python list of ``n`` strings."""
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([value])).cast(pa.string())


def _sdmx_dim(breakdown: str) -> str:
    """SDMX dimension id of a breakdown: its variable part (AGE.M -> AGE), upper case."""
    return breakdown.split(".")[0].upper().replace("-", "_")

"""Numba kernels for the fused tabulation pass (one pass over a record batch serves every cube).

Record keys arrive as float64 in [0, 1) and are turned into uint64 numerators inside the kernel
by :func:`cubeguard.ckm.keys.key_numerator`, the rule the table service's key store uses too, without
a temporary array. With many cubes,
threads own whole cubes, so no two threads ever add to the same cell; with fewer cubes than
threads, threads own record ranges and add into private accumulators summed at the end.
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
import numpy.typing as npt
from numba import njit, prange

from cubeguard.ckm.keys import key_numerator

# The kernels' three argument tuples (types for mypy only; numba types the call's values itself).
Encoded: TypeAlias = tuple[
    npt.NDArray[np.integer],  # raw (columns, records)
    npt.NDArray[np.int64],  # column_of
    npt.NDArray[np.int64],  # first
    npt.NDArray[np.int32],  # luts
    npt.NDArray[np.int64],  # lens
]
Layout: TypeAlias = tuple[
    npt.NDArray[np.int32],  # cube_dims
    npt.NDArray[np.int64],  # strides
    npt.NDArray[np.int64],  # offsets
    npt.NDArray[np.int32],  # cube_pop
]
Records: TypeAlias = tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64], float, bool]  # masks, keys, scale, decimal
_Ints: TypeAlias = npt.NDArray[np.int64]


_BLOCK = 1024  # records whose indices are built together, one dimension at a time
_OUTSIDE = -(2**40)  # weight of a value outside the classification: any sum with it stays negative


@njit(nogil=True)
def _cube_tables(encoded: Encoded, layout: Layout, c: int) -> tuple[_Ints, _Ints, _Ints, _Ints]:  # pragma: no cover
    """Cube ``c``'s dimensions as (raw row, first value, table length, weighted table) per dimension.

    ``encoded`` is (raw, column_of, first, luts, lens) of ``cubeguard.cubes.encode.EncodedBatch``,
    ``layout`` (cube_dims, strides, offsets, cube_pop) of the tabulator's cubes.

    The weighted table holds ``position * stride``, or ``_OUTSIDE`` for values outside the
    classification, so a record's flat bottom index is a sum of one entry per dimension and is
    negative exactly when one of its values is unknown.
    """
    _, column_of, first, luts, lens = encoded
    cube_dims, strides, _, _ = layout
    nd = 0
    while nd < cube_dims.shape[1] and cube_dims[c, nd] >= 0:
        nd += 1
    rows = np.empty(nd, dtype=np.int64)
    firsts = np.empty(nd, dtype=np.int64)
    sizes = np.empty(nd, dtype=np.int64)
    weighted = np.full((nd, max(luts.shape[1], 1)), _OUTSIDE, dtype=np.int64)
    for d in range(nd):
        b = cube_dims[c, d]
        rows[d] = column_of[b]
        firsts[d] = first[b]
        sizes[d] = lens[b]
        for x in range(lens[b]):
            if luts[b, x] >= 0:
                weighted[d, x] = luts[b, x] * strides[c, d]
    return rows, firsts, sizes, weighted


@njit(inline="always")
def _block_cells(
    raw: npt.NDArray[np.integer],
    rows: _Ints,
    firsts: _Ints,
    sizes: _Ints,
    weighted: _Ints,
    start: int,
    m: int,
    idx: _Ints,
) -> None:  # pragma: no cover
    """Flat bottom-cell index of records ``start .. start + m - 1`` into ``idx[:m]`` (< 0: unknown code).

    One dimension at a time over the block, without branches, so the loop pipelines well.
    """
    for k in range(m):
        idx[k] = 0
    for d in range(rows.shape[0]):
        row, lo, size = rows[d], firsts[d], sizes[d]
        for k in range(m):
            x = np.int64(raw[row, start + k]) - lo
            inside = (x >= 0) & (x < size)
            idx[k] += weighted[d, x if inside else 0] if inside else _OUTSIDE


@njit(nogil=True)
def _add_range(
    encoded: Encoded,
    layout: Layout,
    records: Records,
    c: int,
    lo: int,
    hi: int,
    counts: _Ints,
    key_sums: npt.NDArray[np.uint64],
) -> int:  # pragma: no cover - compiled
    """Add records ``lo .. hi - 1`` of cube ``c``'s population to its cells; count unknown codes.

    ``counts`` and ``key_sums`` start at the cube's first cell. Returns the number of records with a
    value outside the classification.
    """
    raw = encoded[0]
    masks, keys, scale, decimal = records
    mask = masks[layout[3][c]]
    rows, firsts, sizes, weighted = _cube_tables(encoded, layout, c)
    idx = np.empty(_BLOCK, dtype=np.int64)
    bad = 0
    for start in range(lo, hi, _BLOCK):
        m = min(_BLOCK, hi - start)
        _block_cells(raw, rows, firsts, sizes, weighted, start, m, idx)
        for k in range(m):
            if mask[start + k]:
                if idx[k] < 0:
                    bad += 1
                else:
                    counts[idx[k]] += 1
                    key_sums[idx[k]] += key_numerator(keys[start + k], scale, decimal)
    return bad


@njit(parallel=True, nogil=True, cache=True)
def scatter_by_cube(
    encoded: Encoded, layout: Layout, records: Records, counts: _Ints, key_sums: npt.NDArray[np.uint64], bad: _Ints
) -> None:  # pragma: no cover - compiled
    """Add every record to each cube whose population holds it; threads own whole cubes.

    ``encoded`` = (raw, column_of, first, luts, lens) (``cubeguard.cubes.encode.EncodedBatch``),
    ``layout`` = (cube_dims, strides, offsets, cube_pop), ``records`` = (masks, keys, scale, decimal).
    """
    offsets = layout[2]
    n = records[1].shape[0]
    for c in prange(offsets.shape[0]):
        bad[c] += _add_range(encoded, layout, records, c, 0, n, counts[offsets[c] :], key_sums[offsets[c] :])


@njit(parallel=True, nogil=True, cache=True)
def scatter_by_records(
    encoded: Encoded,
    layout: Layout,
    records: Records,
    counts: _Ints,
    key_sums: npt.NDArray[np.uint64],
    bad: _Ints,
    parts: int,
) -> None:  # pragma: no cover - compiled
    """As :func:`scatter_by_cube` for few cubes: ``parts`` threads own record ranges.

    Each part adds into private accumulators that are summed at the end. Counts add as integers
    and key sums as uint64 modulo 2**64, so the result equals the one-thread pass bit for bit.
    """
    offsets = layout[2]
    n = records[1].shape[0]
    cells = counts.shape[0]
    n_cubes = offsets.shape[0]
    part_counts = np.zeros((parts, cells), dtype=np.int64)
    part_keys = np.zeros((parts, cells), dtype=np.uint64)
    part_bad = np.zeros((parts, n_cubes), dtype=np.int64)
    step = (n + parts - 1) // parts
    for t in prange(parts):
        lo, hi = t * step, min(n, (t + 1) * step)
        for c in range(n_cubes):
            off = offsets[c]
            part_bad[t, c] += _add_range(encoded, layout, records, c, lo, hi, part_counts[t, off:], part_keys[t, off:])
    for i in prange(cells):
        for t in range(parts):
            counts[i] += part_counts[t, i]
            key_sums[i] += part_keys[t, i]
    for c in range(n_cubes):
        for t in range(parts):
            bad[c] += part_bad[t, c]


@njit(nogil=True, cache=True)
def cell_indices(
    encoded: Encoded, layout: Layout, masks: npt.NDArray[np.bool_], c: int, out: _Ints
) -> None:  # pragma: no cover - compiled
    """Flat bottom cell of cube ``c`` of every record into ``out`` (-1: outside its population or classification).

    The cells :func:`scatter_by_cube` adds the records to, for the cubes that also sum values
    (:mod:`cubeguard.cubes.values`).
    """
    raw = encoded[0]
    mask = masks[layout[3][c]]
    rows, firsts, sizes, weighted = _cube_tables(encoded, layout, c)
    idx = np.empty(_BLOCK, dtype=np.int64)
    n = out.shape[0]
    for start in range(0, n, _BLOCK):
        m = min(_BLOCK, n - start)
        _block_cells(raw, rows, firsts, sizes, weighted, start, m, idx)
        for k in range(m):
            out[start + k] = idx[k] if mask[start + k] and idx[k] >= 0 else -1

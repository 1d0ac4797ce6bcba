"""Turn a batch of microdata (Arrow) into integers the tabulation kernels read.

:func:`encode_batch` keeps each column's raw integers (dictionary indices, or the values of integer
classifications) in one stacked array, and gives every breakdown a small lookup table from those
integers to its bottom positions; the kernels apply the tables record by record. That reads each
column once, in its narrowest integer type, whatever the number of breakdowns using it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from cubeguard.cubes.hierarchy import Breakdown


def column_positions(column: pa.Array | pa.ChunkedArray, breakdown: Breakdown) -> npt.NDArray[np.int32]:
    """Bottom position of every record for one breakdown (-1 for values outside the classification)."""
    raw, dictionary = _raw_column(column, integer=breakdown.classification.dtype == "integer")
    if dictionary is None:
        return breakdown.lookup_ints(raw)
    positions: npt.NDArray[np.int32] = _dictionary_lut(breakdown, dictionary)[raw]
    return positions


@dataclass(frozen=True)
class EncodedBatch:
    """A batch as the tabulation kernels read it.

    Record ``r`` of breakdown ``b`` is at bottom position ``luts[b, x]`` with
    ``x = raw[column_of[b], r] - first[b]``, or outside the classification (-1) if ``x`` is not in
    ``[0, lens[b])`` or the table holds -1.
    """

    raw: npt.NDArray[np.integer]  # (columns, records), one integer type for all columns
    column_of: npt.NDArray[np.int64]  # (breakdowns,)
    first: npt.NDArray[np.int64]  # (breakdowns,)
    luts: npt.NDArray[np.int32]  # (breakdowns, longest table), padded with -1
    lens: npt.NDArray[np.int64]  # (breakdowns,)


def encode_batch(batch: pa.RecordBatch, breakdowns: Sequence[Breakdown]) -> EncodedBatch:
    """Raw integers of every column the breakdowns read, and each breakdown's lookup table."""
    columns: dict[tuple[str, bool], tuple[npt.NDArray[np.integer], list[str] | None]] = {}
    for bd in breakdowns:
        key = (bd.column, bd.classification.dtype == "integer")
        if key not in columns:
            columns[key] = _raw_column(batch.column(bd.column), integer=key[1])
    order = list(columns)
    raw = np.empty((len(order), batch.num_rows), dtype=np.result_type(*(v for v, _ in columns.values())))
    for k, key in enumerate(order):
        raw[k] = columns[key][0]
    tables = []
    for bd in breakdowns:
        dictionary = columns[(bd.column, bd.classification.dtype == "integer")][1]
        tables.append(bd.int_table if dictionary is None else (0, _dictionary_lut(bd, dictionary)))
    luts = np.full((len(tables), max([t.size for _, t in tables] + [1])), -1, dtype=np.int32)
    for b, (_, lut) in enumerate(tables):
        luts[b, : lut.size] = lut
    column_of = [order.index((bd.column, bd.classification.dtype == "integer")) for bd in breakdowns]
    return EncodedBatch(
        raw=raw,
        column_of=np.array(column_of, dtype=np.int64),
        first=np.array([f for f, _ in tables], dtype=np.int64),
        luts=luts,
        lens=np.array([t.size for _, t in tables], dtype=np.int64),
    )


def _raw_column(column: pa.Array | pa.ChunkedArray, integer: bool) -> tuple[npt.NDArray[np.integer], list[str] | None]:
    """(raw integers, dictionary or None): dictionary indices for codes, values for integers.

    Missing values become an integer no table covers: the dictionary's length, or -2**62.
    """
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if integer:
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        if column.type == pa.uint64() or not pa.types.is_integer(column.type) or column.null_count:
            # int64 for all of these; uint64 values past 2**63 wrap to negatives no table covers
            column = pc.cast(column, pa.int64(), safe=column.type != pa.uint64()).fill_null(-(2**62))
        return column.to_numpy(zero_copy_only=False), None
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column.cast(pa.string()))
    dictionary = [str(v) for v in column.dictionary.cast(pa.string()).to_pylist()]
    indices = column.indices
    if indices.null_count:
        indices = indices.cast(pa.int32()).fill_null(len(dictionary))
    return indices.to_numpy(zero_copy_only=False), dictionary


def _dictionary_lut(breakdown: Breakdown, dictionary: list[str]) -> npt.NDArray[np.int32]:
    """Bottom position of each dictionary entry, and -1 for the missing-value index after them."""
    return np.append(breakdown.lookup_codes(dictionary), np.int32(-1))


def population_mask(
    batch: pa.RecordBatch, where: dict[str, list[str] | list[int]], ref_column: str | None
) -> npt.NDArray[np.bool_]:
    """Records of a population: every ``where`` column in its listed values (and reference persons if given)."""
    mask = np.ones(batch.num_rows, dtype=bool)
    for col, allowed in where.items():
        arr = batch.column(col)
        if pa.types.is_dictionary(arr.type):
            arr = arr.cast(arr.type.value_type)
        values = (
            pa.array(allowed).cast(arr.type)
            if not pa.types.is_string(arr.type)
            else pa.array([str(v) for v in allowed])
        )
        mask &= pc.is_in(arr, value_set=values).fill_null(False).to_numpy(zero_copy_only=False)
    if ref_column is not None:
        mask &= batch.column(ref_column).fill_null(False).to_numpy(zero_copy_only=False).astype(bool)
    return mask

"""Turn a batch of microdata (Arrow) into integer bottom positions, once per batch and breakdown."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from cubeguard.cubes.hierarchy import Breakdown


def column_positions(column: pa.Array | pa.ChunkedArray, breakdown: Breakdown) -> npt.NDArray[np.int32]:
    """Bottom position of every record for one breakdown (-1 for values outside the classification)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if breakdown.classification.dtype == "integer":
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        values = column.cast(pa.int64()).fill_null(-(2**62)).to_numpy(zero_copy_only=False)
        return breakdown.lookup_ints(values)
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column.cast(pa.string()))
    dictionary = column.dictionary.cast(pa.string()).to_pylist()
    lut = np.append(breakdown.lookup_codes([str(v) for v in dictionary]), np.int32(-1))
    indices = column.indices
    if indices.null_count:
        indices = indices.fill_null(len(dictionary))
    return lut[indices.to_numpy(zero_copy_only=False)]


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

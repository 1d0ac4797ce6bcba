"""Household encoding shared by the swapping methods: integer codes, checks and the final exchange.

Every method in :mod:`cubeguard.swap` works on integer codes: one index per household (sorted by
household id, as sdcMicro ``recordSwap`` orders its input) and lexicographically ordered group codes
for area prefixes and profiles. The data frame is touched only at the start (encode, check) and at
the end (:func:`exchange`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numba
import numpy as np
import numpy.typing as npt
import pandas as pd

from cubeguard.swap.common import SwapDataError

IntArray = npt.NDArray[np.int64]
_MAX_EXAMPLES = 3


@dataclass(frozen=True)
class Households:
    """Rows grouped into households.

    Attributes:
        ids: household ids in sorted order; household ``i`` has id ``ids[i]``.
        of_row: household index of every row.
        first_row: position of each household's first row (its values stand for the household).
        size: number of rows per household.
    """

    ids: pd.Index
    of_row: IntArray
    first_row: IntArray
    size: IntArray

    @property
    def n(self) -> int:
        """Number of households."""
        return len(self.ids)


def encode_households(data: pd.DataFrame, id_column: str | None) -> Households:
    """Group rows by ``id_column`` (``None``: every row is its own unit, ids are row positions)."""
    n_rows = len(data)
    if id_column is None:
        rows = np.arange(n_rows, dtype=np.int64)
        return Households(pd.RangeIndex(n_rows), rows, rows, np.ones(n_rows, dtype=np.int64))
    of_row, n_households = dense_codes(data[id_column])
    first_row = first_rows(of_row, n_households)
    ids = pd.Index(data[id_column].array.take(first_row), name=id_column)
    size = np.bincount(of_row, minlength=n_households).astype(np.int64)
    return Households(ids, of_row, first_row, size)


@numba.njit(cache=True)
def first_rows(of_row: IntArray, n_groups: int) -> IntArray:
    """Index of the first row of each group ``0..n_groups-1`` (-1 for an empty group)."""
    first = np.full(n_groups, -1, dtype=np.int64)
    for row in range(of_row.shape[0]):
        if first[of_row[row]] < 0:
            first[of_row[row]] = row
    return first


def household_values(
    data: pd.DataFrame, households: Households, columns: Sequence[str]
) -> list[npt.NDArray[np.generic]]:
    """Values of ``columns`` on each household's first row (households in id order)."""
    return [data[c].to_numpy()[households.first_row] for c in columns]


def check_columns(data: pd.DataFrame, columns: Sequence[str], what: str) -> list[str]:
    """Problems with ``columns`` in ``data``: absent or with missing values (one sentence each)."""
    problems: list[str] = []
    missing = [c for c in columns if c not in data.columns]
    if missing:
        known = ", ".join(map(str, data.columns[:12]))
        problems.append(f"{what} columns {missing} are not in the data (columns: {known})")
    present = list(dict.fromkeys(c for c in columns if c in data.columns))
    n_missing = data[present].isna().to_numpy().sum(axis=0)
    for column, n_na in zip(present, n_missing, strict=True):
        if n_na:
            problems.append(f"column {column!r} has {n_na} missing values; fill or drop them")
    return problems


def check_household_level(data: pd.DataFrame, households: Households, columns: Sequence[str]) -> list[str]:
    """Problems where a column takes more than one value inside a household."""
    problems: list[str] = []
    for column in dict.fromkeys(columns):
        values = data[column].to_numpy()
        if values.dtype.kind in "biuf":
            n_differ = _count_differing(values, households.of_row, households.first_row)
            if n_differ == 0:
                continue
        differs = values != values[households.first_row[households.of_row]]
        if differs.any():
            bad = households.ids[np.unique(households.of_row[differs])]
            examples = ", ".join(map(str, bad[:_MAX_EXAMPLES]))
            problems.append(
                f"column {column!r} varies within {len(bad)} households (e.g. {examples}); "
                "swapping moves whole households, so give every member the household's value"
            )
    return problems


@numba.njit(cache=True)
def _count_differing(values: npt.NDArray[np.generic], of_row: IntArray, first_row: IntArray) -> int:
    count = 0
    for row in range(values.shape[0]):
        if values[row] != values[first_row[of_row[row]]]:
            count += 1
    return count


def raise_problems(problems: list[str]) -> None:
    """Raise one :class:`SwapDataError` listing every problem, if there are any."""
    if problems:
        raise SwapDataError("; ".join(problems) + ".")


def dense_codes(values: pd.Series | npt.NDArray[np.generic]) -> tuple[IntArray, int]:
    """Codes ``0..k-1`` of the distinct values in sorted order, and ``k``.

    Integer columns with a small value range are coded with a presence table (linear time);
    everything else goes through ``pandas.factorize(sort=True)``.
    """
    array = values.to_numpy() if isinstance(values, pd.Series) else values
    if array.dtype.kind in "iu" and len(array):
        low, high = int(array.min()), int(array.max())
        if high - low <= 4 * len(array) + 1024:
            codes = np.empty(len(array), dtype=np.int64)
            n_values = _presence_codes(array, low, high - low + 1, codes)
            return codes, n_values
    codes, uniques = pd.factorize(values, sort=True)
    return codes.astype(np.int64, copy=False), len(uniques)


@numba.njit(cache=True)
def _presence_codes(array: npt.NDArray[np.generic], low: int, span: int, codes: IntArray) -> int:
    remap = np.zeros(span, dtype=np.int64)
    for value in array:
        remap[value - low] = 1
    n_values = 0
    for i in range(span):
        present = remap[i]
        remap[i] = n_values
        n_values += present
    for row in range(array.shape[0]):
        codes[row] = remap[array[row] - low]
    return n_values


def group_codes(columns: Sequence[pd.Series | npt.NDArray[np.generic]], n_rows: int) -> tuple[IntArray, int]:
    """Dense codes of the value combinations of ``columns``, in lexicographic order of the values.

    Returns the code per row and the number of distinct combinations (no columns: one group).
    """
    code = np.zeros(n_rows, dtype=np.int64)
    n_groups = 1
    for column in columns:
        part, n_values = dense_codes(column)
        code, n_groups = dense_codes(code * n_values + part)
    return code, n_groups


def combination_codes(columns: Sequence[pd.Series], n_rows: int) -> tuple[IntArray, int]:
    """Codes of the value combinations of ``columns`` in ``0..k-1``, not necessarily all used.

    Cheaper than :func:`group_codes` for counting: small-range integer columns are combined in
    place as mixed-radix digits ``value - min``, without intermediate arrays.
    """
    code = np.zeros(n_rows, dtype=np.int64)
    span = 1
    for column in columns:
        values = column.to_numpy()
        low, high = (int(values.min()), int(values.max())) if values.dtype.kind in "iu" and n_rows else (0, -1)
        if 0 <= high - low <= 4 * n_rows + 1024:
            digits, width = values, high - low + 1
        else:
            (digits, width), low = dense_codes(column), 0
        if span * width > 2**40:  # keep products of later steps far from int64 overflow
            code, span = dense_codes(code)
        _add_digit(code, digits, low, width)
        span *= width
    return code, span


@numba.njit(cache=True)
def _add_digit(code: IntArray, digits: npt.NDArray[np.integer], low: int, width: int) -> None:
    for row in range(code.shape[0]):
        code[row] = code[row] * width + (digits[row] - low)


def nested_area_codes(
    hierarchy_values: Sequence[npt.NDArray[np.generic]],
) -> list[tuple[IntArray, int]]:
    """Area code at each level: the group of the hierarchy prefix down to that level.

    ``hierarchy_values`` are the geography columns, top level first. Codes are lexicographic in the
    prefix values (sdcMicro's ``std::map`` order), so areas are visited in ``recordSwap``'s order.
    """
    levels: list[tuple[IntArray, int]] = []
    for column in hierarchy_values:
        if levels:
            code, _ = levels[-1]
            part, n_values = dense_codes(column)
            levels.append(dense_codes(code * n_values + part))
        else:
            levels.append(dense_codes(column))
    return levels


def exchange(data: pd.DataFrame, households: Households, partner: IntArray, columns: Sequence[str]) -> pd.DataFrame:
    """Copy of ``data`` where each row of a swapped household takes its partner's ``columns``.

    ``partner[i]`` is the household index of ``i``'s partner (``i`` itself when not swapped); the
    values come from the partner's first row. Rows of unswapped households are not touched.
    """
    partner_of_row = partner[households.of_row]
    rows = np.flatnonzero(partner_of_row != households.of_row)
    return copy_rows(data, rows, households.first_row[partner_of_row[rows]], columns)


def copy_rows(data: pd.DataFrame, rows: IntArray, sources: IntArray, columns: Sequence[str]) -> pd.DataFrame:
    """Copy of ``data`` where row ``rows[i]`` takes ``columns`` from row ``sources[i]``."""
    out = data.copy(deep=False)  # copy-on-write: the input is never modified
    if len(rows) == 0:
        return out
    for column in columns:
        original = data[column]
        if isinstance(original.dtype, np.dtype):
            values = original.to_numpy(copy=True)
            values[rows] = values[sources]
        else:  # extension arrays (categorical, string, nullable): rebuild by take
            source = np.arange(len(data), dtype=np.int64)
            source[rows] = sources
            values = original.array.take(source)
        out[column] = pd.Series(values, index=data.index, name=column)
    return out

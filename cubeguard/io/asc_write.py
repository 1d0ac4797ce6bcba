"""Write tau-ARGUS fixed-format microdata (``.asc``), the exact inverse of :mod:`cubeguard.io.asc`.

Codes are right-aligned in their field as tau-ARGUS expects (see :mod:`cubeguard.io.asc` on
padding), numbers written with the variable's declared decimals; :func:`fixed_layout` derives a
fixed-format layout from free-format metadata and the data.
"""

from __future__ import annotations

import gzip
import itertools
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from cubeguard.io.asc import _BLANK, MAX_PROBLEMS, AscError, _Bytes, _Field, _fields, _fixed_strings
from cubeguard.io.rda import RdaMetadata, RdaVariable

__all__ = ["fixed_layout", "number_text", "write_asc"]


def write_asc(
    data: pa.Table | Iterable[pa.RecordBatch],
    metadata: RdaMetadata,
    path: str | Path,
    *,
    newline: str = "\n",
    encoding: str = "utf-8",
) -> int:
    r"""Write records as a fixed-format tau-ARGUS microdata file; the inverse of :func:`iter_asc_batches`.

    Codes are right-aligned in their field with leading blanks, as tau-ARGUS right-justifies
    codes (module docstring); numbers are right-aligned with exactly ``<DECIMALS>`` decimals;
    nulls and the gaps between fields are blanks. A file name ending in ``.gz`` is gzipped.

    Args:
        data: the records; every variable of ``metadata`` must be a column.
        metadata: fixed-format metadata (:func:`fixed_layout` derives one from the data).
        path: the file to write (replaced; removed again if a value cannot be written).
        newline: the line end (tau-ARGUS on Windows writes ``"\r\n"``).
        encoding: the text encoding of the codes.

    Returns:
        The number of records written.

    Raises:
        AscError: the metadata is not fixed-format or has overlapping fields, a column is
            missing, or a value is wider than its field, has more decimals than ``<DECIMALS>``
            or a code starts with a blank (every problem of the first bad batch, at most 100).
    """
    target = Path(path)
    fields = _fields(metadata, str(path))
    _check_no_overlap(fields, str(path))
    decimals = {v.name: v.decimals for v in metadata.variables}
    batches = data.to_batches() if isinstance(data, pa.Table) else data
    rows = 0
    try:
        with gzip.open(target, "wb") if target.name.endswith(".gz") else target.open("wb") as out:
            for batch in batches:
                lines, problems = _render(batch, fields, decimals, newline, encoding, rows)
                if problems:
                    raise AscError(str(path), problems[:MAX_PROBLEMS])
                out.write(lines)
                rows += batch.num_rows
    except AscError:
        target.unlink(missing_ok=True)
        raise
    return rows


def _check_no_overlap(fields: list[_Field], source: str) -> None:
    ordered = sorted(fields, key=lambda f: f.offset)
    for a, b in itertools.pairwise(ordered):
        if a.offset + a.width > b.offset:
            raise AscError(
                source,
                [f"variables {a.name} and {b.name} overlap (columns {a.offset + 1}-{a.offset + a.width} and "
                 f"{b.offset + 1}-{b.offset + b.width}); give every variable its own columns to write them"],
            )  # fmt: skip


def _render(
    batch: pa.RecordBatch,
    fields: list[_Field],
    decimals: dict[str, int],
    newline: str,
    encoding: str,
    row0: int,
) -> tuple[bytes, list[str]]:
    end = newline.encode("ascii")
    record = max(f.offset + f.width for f in fields)
    lines = np.full((batch.num_rows, record + len(end)), _BLANK, dtype=np.uint8)
    lines[:, record:] = np.frombuffer(end, dtype=np.uint8)
    problems: list[str] = []
    for f in fields:
        if f.name not in batch.schema.names:
            return b"", [f"the data has no column {f.name}; add it or drop the variable from the metadata"]
        column = batch.column(f.name)
        if f.number:
            cells, found = _number_cells(column, f, decimals[f.name], row0)
        else:
            cells, found = _code_cells(column, f, encoding, row0)
        problems.extend(found)
        if not found:
            lines[:, f.offset : f.offset + f.width] = cells
    return lines.tobytes(), problems


def _code_cells(column: pa.Array, f: _Field, encoding: str, row0: int) -> tuple[_Bytes, list[str]]:
    """Right-aligned codes; each distinct code is encoded once, nulls are blanks."""
    encoded = column if pa.types.is_dictionary(column.type) else pc.dictionary_encode(column)
    values = encoded.dictionary.cast(pa.string()).to_pylist()
    indices = encoded.indices.fill_null(len(values)).to_numpy().astype(np.int64)
    table = np.full((len(values) + 1, f.width), _BLANK, dtype=np.uint8)
    bad: dict[int, str] = {}
    for k, code in enumerate(values):
        raw = code.encode(encoding)
        problem = _code_problem(code, raw, f)
        if problem:
            bad[k] = problem
        elif raw:
            table[k, f.width - len(raw) :] = np.frombuffer(raw, dtype=np.uint8)
    if not bad:
        return table[indices], []
    used, first = np.unique(indices, return_index=True)
    first_row = dict(zip(used.tolist(), first.tolist(), strict=True))
    rows = sorted((first_row[k], problem) for k, problem in bad.items() if k in first_row)
    return table[indices], [f"record {row0 + row + 1}: {problem}" for row, problem in rows]


def _code_problem(code: str, raw: bytes, f: _Field) -> str | None:
    if len(raw) > f.width:
        return (
            f"code {code!r} of {f.name} is {len(raw)} bytes, wider than its field (WIDTH {f.width}); widen "
            f"the variable in the metadata (fixed_layout does it from the data)"
        )
    if code[:1] == " " or "\n" in code or "\r" in code:
        return (
            f"code {code!r} of {f.name} starts with a blank or holds a line end, which tau-ARGUS reads as "
            f"padding or a new record; remove it from the code"
        )
    return None


class _Digits:
    """Decimal digits of numbers written with ``decimals`` decimals (vectorised, exact or flagged)."""

    def __init__(self, values: npt.NDArray[np.float64], decimals: int) -> None:
        self.decimals = decimals
        self.null = np.isnan(values)
        scale = 10.0**decimals
        scaled = np.round(np.where(self.null, 0.0, values) * scale)
        self.too_big = ~np.isfinite(scaled) | (np.abs(scaled) >= 2.0**53)
        scaled[self.too_big] = 0.0
        self.inexact = ~self.null & ~self.too_big & (scaled / scale != np.where(self.null, 0.0, values))
        self.negative = scaled < 0
        magnitude = np.abs(scaled).astype(np.uint64)
        self.whole = magnitude // np.uint64(10**decimals)
        self.fraction = magnitude % np.uint64(10**decimals)
        self.n_whole = np.ones(len(values), dtype=np.int64)
        for k in range(1, 17):
            self.n_whole += self.whole >= np.uint64(10**k)
        point = decimals + 1 if decimals else 0
        self.length = np.where(self.null, 0, self.n_whole + self.negative + point)

    def cells(self, width: int) -> _Bytes:
        """The numbers right-aligned in ``width`` columns (nulls blank); every length must fit."""
        out = np.full((len(self.length), width), _BLANK, dtype=np.uint8)
        if self.null.all():
            return out
        col = width - 1
        for j in range(self.decimals):
            out[:, col - j] = 48 + (self.fraction // np.uint64(10**j)) % np.uint64(10)
        col -= self.decimals + 1 if self.decimals else 0
        if self.decimals:
            out[:, col + 1] = ord(".")
        for k in range(int(self.n_whole.max(initial=1))):
            rows = self.n_whole > k
            out[rows, col - k] = 48 + (self.whole[rows] // np.uint64(10**k)) % np.uint64(10)
        signed = np.flatnonzero(self.negative)
        out[signed, col - self.n_whole[signed]] = ord("-")
        out[self.null] = _BLANK
        return out


def _float_values(column: pa.Array) -> npt.NDArray[np.float64]:
    return np.asarray(column.cast(pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)


def _number_cells(column: pa.Array, f: _Field, decimals: int, row0: int) -> tuple[_Bytes, list[str]]:
    digits = _Digits(_float_values(column), decimals)
    problems = []
    for i in np.flatnonzero(digits.too_big | digits.inexact | (digits.length > f.width))[:MAX_PROBLEMS]:
        value = column[int(i)].as_py()
        if digits.too_big[i]:
            why = "is too large (or infinite) to write exactly; drop it or write it as a code"
        elif digits.inexact[i]:
            why = f"has more decimals than <DECIMALS> {decimals}; raise <DECIMALS> in the metadata"
        else:
            why = f"needs {digits.length[i]} characters, wider than its field (WIDTH {f.width}); widen the variable"
        problems.append(f"record {row0 + int(i) + 1}: value {value!r} of {f.name} {why}")
    return (digits.cells(f.width) if not problems else np.empty((0, 0), np.uint8)), problems


def number_text(column: pa.Array, decimals: int) -> pa.StringArray:
    """Numbers as text with exactly ``decimals`` decimals (nulls as empty strings), for free-format files.

    Example:
        >>> number_text(pa.array([0.5, None, -12.0]), 2).to_pylist()
        ['0.50', '', '-12.00']
    """
    digits = _Digits(_float_values(column), decimals)
    width = max(int(digits.length.max(initial=1)), 1)
    return pc.utf8_ltrim(_fixed_strings(digits.cells(width)).cast(pa.string()), " ")


def fixed_layout(metadata: RdaMetadata, batches: Iterable[pa.RecordBatch]) -> RdaMetadata:
    """Fixed-format metadata for writing ``batches`` with :func:`write_asc`.

    Each variable keeps its tags and gets the width of its widest written value (codes in
    bytes, numbers with their ``<DECIMALS>``), at least its declared width so that hierarchy
    codes padded to it still match; the fields follow each other from column 1 without gaps.

    Args:
        metadata: free- or fixed-format metadata of the data (e.g. a free-format ``.rda``).
        batches: the records (one pass).

    Returns:
        The metadata with ``separator`` None and every variable's START and WIDTH set.
    """
    widths = {v.name: v.width for v in metadata.variables}
    for batch in batches:
        for v in metadata.variables:
            if v.name in batch.schema.names:
                widths[v.name] = max(widths[v.name], _widest(batch.column(v.name), v))
    variables: list[RdaVariable] = []
    start = 1
    for v in metadata.variables:
        variables.append(replace(v, position=start, width=widths[v.name]))
        start += widths[v.name]
    return replace(metadata, separator=None, spss=False, variables=tuple(variables))


def _widest(column: pa.Array, v: RdaVariable) -> int:
    if v.reads_as_number:
        return int(_Digits(_float_values(column), v.decimals).length.max(initial=0))
    values = column.dictionary if pa.types.is_dictionary(column.type) else column
    lengths = pc.binary_length(values.cast(pa.string()))
    return int(pc.max(lengths).as_py() or 0)

"""Read tau-ARGUS fixed-format microdata (``.asc``) as Arrow record batches (writing: :mod:`asc_write`).

Format (tau-ARGUS 4.2 user's manual, section 5.1 "Meta data files"; reader libtauargus
``TauArgus::ExploreFile``, ``ReadMicroRecord`` and ``DoMicroRecord``): one record a line, each
variable of the fixed-format ``.rda`` at columns ``START`` (counted from 1) to
``START + WIDTH - 1``. Positions are bytes. Empty lines are skipped, as tau-ARGUS does; a line
may be longer than the last field (tau-ARGUS wants every record as long as the first, cubeguard
ignores what follows the last field), but not shorter.

Padding. tau-ARGUS cuts a code out of a fixed-format record as it is (``strncpy``, no trimming),
and it right-justifies every free-format code to the variable's width with leading blanks
(``CVariable::NormaliseCode`` -> ``AddSpacesBefore``). So in tau-ARGUS a fixed-format ``"  1"``
(width 3) is the same code as a free-format ``"1"``, while a left-aligned ``"1  "`` is another
code. This reader maps tau-ARGUS's right-justified codes to cubeguard's unpadded ones: it removes
the *leading* blanks of a code and keeps trailing ones, so ``"  1"`` reads as ``"1"`` (the value
:func:`cubeguard.io.csv_input.read_tau_microdata` gives for the free-format file) and ``"1  "`` as
``"1  "``, a code no classification leaf matches, as in tau-ARGUS. :func:`cubeguard.io.asc_write.write_asc` right-aligns
codes, so reading gives the codes back; it refuses a code with a leading blank, which could not.
Numbers (numeric, weight and record-key variables) are trimmed on both sides; a blank number is a
null, as an empty field of a free-format file.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from cubeguard.io.errors import FileProblemsError
from cubeguard.io.rda import RdaMetadata

__all__ = ["AscError", "iter_asc_batches"]

DEFAULT_BLOCK_SIZE = 1 << 20
MAX_PROBLEMS = 100
_GZIP_MAGIC = b"\x1f\x8b"
_NL, _CR, _BLANK = 10, 13, 32
_Bytes = npt.NDArray[np.uint8]
_Ints = npt.NDArray[np.int64]


class AscError(FileProblemsError):
    """A fixed-format microdata file (or data to write as one) cubeguard cannot use.

    Attributes:
        source: the file.
        problems: the problems found, each with its line and variable, at most 100.
    """


@dataclass(frozen=True)
class _Field:
    name: str
    offset: int  # 0-based
    width: int
    number: bool


def _fields(metadata: RdaMetadata, source: str) -> list[_Field]:
    if metadata.format != "fixed":
        raise AscError(source, [f"the metadata describes a {metadata.format}-format file, not a fixed-format one"])
    unplaced = [v.name for v in metadata.variables if v.position is None]
    if unplaced:
        raise AscError(source, [f"variable {unplaced[0]} has no START; declare it as 'NAME START WIDTH'"])
    return [_Field(v.name, (v.position or 1) - 1, v.width, v.reads_as_number) for v in metadata.variables]


def iter_asc_batches(
    path: str | Path,
    metadata: RdaMetadata,
    *,
    dictionary: bool = True,
    block_size: int = DEFAULT_BLOCK_SIZE,
    encoding: str = "utf-8",
) -> Iterator[pa.RecordBatch]:
    """Stream a fixed-format tau-ARGUS microdata file as record batches.

    Args:
        path: the ``.asc`` file, plain or gzip (recognised by its content).
        metadata: its fixed-format metadata (:func:`cubeguard.io.rda.read_rda`).
        dictionary: dictionary-encode the code columns.
        block_size: bytes of (uncompressed) text per batch, roughly.
        encoding: the text encoding of the codes.

    Returns:
        Record batches with the metadata's variables in declaration order: codes as strings
        without leading blanks, numeric, weight and record-key variables as float64 -- the
        columns :func:`cubeguard.io.csv_input.read_tau_microdata` gives for free-format data.

    Raises:
        AscError: the metadata is not fixed-format, or the file is missing or empty (raised at
            once); a line shorter than the last field, a number that is not a number or
            undecodable bytes (raised when the iterator reaches them, with up to 100 problems).
    """
    source = str(path)
    fields = _fields(metadata, source)
    if block_size < 1024:
        raise AscError(source, [f"block_size {block_size} is too small; use at least 1024"])
    if not Path(path).is_file():
        raise AscError(source, ["file not found; check the path"])
    return _batches(Path(path), fields, dictionary, block_size, encoding)


def _open(path: Path) -> BinaryIO:
    with path.open("rb") as handle:
        magic = handle.read(2)
    return gzip.open(path, "rb") if magic == _GZIP_MAGIC else path.open("rb")  # type: ignore[return-value]


def _blocks(path: Path, block_size: int) -> Iterator[bytes]:
    """Whole lines, about ``block_size`` bytes at a time (the BOM of the file dropped)."""
    with _open(path) as stream:
        rest = b""
        first = True
        while chunk := stream.read(block_size):
            if first and chunk.startswith(b"\xef\xbb\xbf"):
                chunk = chunk[3:]
            first = False
            block = rest + chunk
            cut = block.rfind(b"\n") + 1
            rest = block[cut:]
            if cut:
                yield block[:cut]
        if rest:
            yield rest + b"\n"


def _batches(
    path: Path, fields: list[_Field], dictionary: bool, block_size: int, encoding: str
) -> Iterator[pa.RecordBatch]:
    problems: list[str] = []
    lines_before = records = 0
    for block in _blocks(path, block_size):
        data = np.frombuffer(block, dtype=np.uint8)
        starts, lengths, numbers = _lines(data, lines_before)
        lines_before += int(np.count_nonzero(data == _NL))
        records += len(starts)
        batch, found = _decode(data, starts, lengths, numbers, fields, dictionary, encoding)
        problems.extend(found)
        if problems:
            if len(problems) >= MAX_PROBLEMS:
                break
            continue
        if batch is not None:
            yield batch
    if problems:
        raise AscError(str(path), problems[:MAX_PROBLEMS])
    if records == 0:
        raise AscError(str(path), ["the file is empty; expected at least one record"])


def _lines(data: _Bytes, lines_before: int) -> tuple[_Ints, _Ints, _Ints]:
    """Start, length (without the line end) and 1-based number of every non-empty line."""
    ends = np.flatnonzero(data == _NL).astype(np.int64)
    starts = np.concatenate(([0], ends[:-1] + 1)).astype(np.int64)
    stops = ends - ((ends > starts) & (data[np.maximum(ends - 1, 0)] == _CR))
    lengths = stops - starts
    numbers = np.arange(lines_before + 1, lines_before + 1 + len(ends), dtype=np.int64)
    keep = lengths > 0
    return starts[keep], lengths[keep], numbers[keep]


def _decode(
    data: _Bytes,
    starts: _Ints,
    lengths: _Ints,
    numbers: _Ints,
    fields: list[_Field],
    dictionary: bool,
    encoding: str,
) -> tuple[pa.RecordBatch | None, list[str]]:
    """One block of lines as a record batch, or the problems found in it."""
    short = _short_lines(lengths, numbers, fields)
    if short:
        return None, short
    if len(starts) == 0:
        return None, []
    columns: list[pa.Array] = []
    problems: list[str] = []
    for f in fields:
        cells = data[starts[:, None] + f.offset + np.arange(f.width)]
        if f.number:
            column, found = _numbers(cells, numbers, f.name)
        else:
            column, found = _codes(cells, numbers, f.name, dictionary, encoding)
        columns.append(column)
        problems.extend(found)
    if problems:
        return None, problems
    return pa.RecordBatch.from_arrays(columns, names=[f.name for f in fields]), []


def _short_lines(lengths: _Ints, numbers: _Ints, fields: list[_Field]) -> list[str]:
    by_end = sorted(fields, key=lambda f: f.offset + f.width)
    record = by_end[-1].offset + by_end[-1].width
    out = []
    for i in np.flatnonzero(lengths < record)[:MAX_PROBLEMS]:
        cut = next(f for f in by_end if f.offset + f.width > lengths[i])
        out.append(
            f"line {numbers[i]}: {lengths[i]} characters, too short for variable {cut.name} (columns "
            f"{cut.offset + 1}-{cut.offset + cut.width}); pad the line with blanks to {record} characters "
            f"or fix START and WIDTH in the .rda"
        )
    return out


def _fixed_strings(cells: _Bytes) -> pa.BinaryArray:
    n, width = cells.shape
    offsets = pa.py_buffer((np.arange(n + 1, dtype=np.int32) * width).tobytes())
    return pa.BinaryArray.from_buffers(pa.binary(), n, [None, offsets, pa.py_buffer(cells.tobytes())])


def _codes(cells: _Bytes, numbers: _Ints, name: str, dictionary: bool, encoding: str) -> tuple[pa.Array, list[str]]:
    """Codes without leading blanks; each distinct value is decoded once (few per column)."""
    encoded = pc.dictionary_encode(_fixed_strings(cells))
    values: list[str] = []
    problems: list[str] = []
    for k, raw in enumerate(encoded.dictionary.to_pylist()):
        try:
            values.append(raw.decode(encoding).lstrip(" "))
        except UnicodeDecodeError:
            line = numbers[int(np.flatnonzero(encoded.indices.to_numpy() == k)[0])]
            problems.append(
                f"line {line}: variable {name} holds bytes {raw!r} that are not valid {encoding}; "
                f"convert the file to {encoding} or pass its encoding"
            )
            values.append("")
    unique, remap = np.unique(np.array(values, dtype=object), return_inverse=True)
    indices = remap.astype(np.int32)[encoded.indices.to_numpy()]
    strings = pa.array(unique.tolist(), type=pa.string())
    if dictionary:
        return pa.DictionaryArray.from_arrays(pa.array(indices), strings), problems
    return strings.take(pa.array(indices)), problems


def _numbers(cells: _Bytes, numbers: _Ints, name: str) -> tuple[pa.Array, list[str]]:
    """Numbers trimmed on both sides; blanks are nulls."""
    text = _fixed_strings(cells)
    try:
        trimmed = pc.utf8_trim_whitespace(text.cast(pa.string()))
        empty = pc.equal(trimmed, "")
        return pc.if_else(empty, None, trimmed).cast(pa.float64()), []
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pass
    problems = []
    for i, raw in enumerate(text.to_pylist()):
        value = raw.decode("utf-8", errors="replace").strip()
        try:
            float(value or "0")
        except ValueError:
            problems.append(
                f"line {numbers[i]}: variable {name} is numeric but holds {value!r}; fix the value or "
                f"drop <NUMERIC>, <WEIGHT> or <RECORDKEY> from the variable in the .rda"
            )
            if len(problems) >= MAX_PROBLEMS:
                break
    return pa.nulls(len(text), pa.float64()), problems

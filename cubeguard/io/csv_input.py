"""Stream delimited microdata (plain or gzip CSV) as Arrow record batches.

The file is read block by block with :func:`pyarrow.csv.open_csv`, so memory stays bounded by the
block size whatever the file size. Columns are strings (dictionary-encoded by default: census
variables have few distinct codes) except the ones declared numeric, which are read as float64.
Codes are kept exactly as written: no trimming, no conversion of ``"01"`` to ``1``, and an empty
field is the empty string, not a null.

Errors name the file and the line: pyarrow does not report line numbers when it streams, so on a
parse or conversion error the file is scanned again in Python to find every bad line.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

import pyarrow as pa
import pyarrow.csv as pacsv

from cubeguard.io.asc import iter_asc_batches
from cubeguard.io.errors import FileProblemsError
from cubeguard.io.rda import RdaMetadata, read_rda

__all__ = ["CsvInputError", "TauMicrodata", "iter_csv_batches", "read_tau_microdata"]

DEFAULT_BLOCK_SIZE = 1 << 20
_MAX_FOUND = 100
_GZIP_MAGIC = b"\x1f\x8b"


class CsvInputError(FileProblemsError):
    """A microdata file cubeguard cannot read.

    Attributes:
        source: the file.
        problems: the problems found (each with its line where there is one), at most 100.
    """


def iter_csv_batches(
    path: str | Path,
    *,
    delimiter: str = ";",
    header: bool = True,
    columns: RdaMetadata | Sequence[str] | None = None,
    numeric: Collection[str] = (),
    dictionary: bool = True,
    block_size: int = DEFAULT_BLOCK_SIZE,
    encoding: str = "utf-8",
) -> Iterator[pa.RecordBatch]:
    """Stream a delimited microdata file as record batches.

    Args:
        path: the file; gzip files are recognised by their content, whatever their name.
        delimiter: the field separator (one character).
        header: whether the first line holds the column names.
        columns: the column names, from tau-ARGUS metadata or a plain list. Required without a
            header; with a header the header must list the same names in the same order.
            Variables of the metadata that are numeric, weights or record keys are numeric.
        numeric: further columns to read as float64 (empty fields become nulls).
        dictionary: dictionary-encode the string columns (each batch has its own dictionary).
        block_size: bytes of (uncompressed) text per batch, roughly.
        encoding: the text encoding of the file; other encodings are converted to UTF-8.

    Returns:
        An iterator of record batches with the file's columns in file order. The file, the
        header and the first block are checked before this function returns.

    Raises:
        CsvInputError: the file is missing or empty, its header does not match ``columns``, a
            line has the wrong number of fields, a numeric field is not a number, or bytes are
            not valid in ``encoding``. Problems found while streaming are raised when the
            iterator reaches them, after the batches before them have been yielded.
    """
    source = str(path)
    file = Path(path)
    if len(delimiter) != 1 or delimiter in '\r\n"':
        raise CsvInputError(source, [f"delimiter {delimiter!r} must be one character, not a quote"])
    if block_size < 1024:
        raise CsvInputError(source, [f"block_size {block_size} is too small; use at least 1024"])
    if not file.is_file():
        raise CsvInputError(source, ["file not found; check the path"])
    names, numeric_cols = _names_and_numeric(columns, numeric)
    if names is not None and len(set(names)) != len(names):
        dupes = sorted({n for n in names if names.count(n) > 1})
        raise CsvInputError(source, [f"column names repeat ({', '.join(dupes)}); make them unique"])
    if header:
        file_names = _read_header(file, delimiter, encoding)
        _check_header(source, file_names, names, numeric_cols, delimiter)
    elif names is None:
        raise CsvInputError(source, ["the file has no header, so pass columns (tau-ARGUS metadata or a list)"])
    else:
        file_names = names
        unknown = sorted(numeric_cols - set(names))
        if unknown:
            raise CsvInputError(source, [f"numeric column(s) {', '.join(unknown)} are not in columns"])

    def diagnose(exc: pa.ArrowInvalid) -> CsvInputError:
        found = _diagnose(file, delimiter, header, file_names, numeric_cols, encoding)
        return CsvInputError(source, found or [f"cannot be parsed: {exc}"])

    text_type = pa.dictionary(pa.int32(), pa.string()) if dictionary else pa.string()
    stream = _open(file)
    try:
        reader = pacsv.open_csv(
            stream,
            read_options=pacsv.ReadOptions(
                block_size=block_size,
                encoding=encoding,
                column_names=None if header else file_names,
            ),
            parse_options=pacsv.ParseOptions(delimiter=delimiter),
            convert_options=pacsv.ConvertOptions(
                column_types={n: (pa.float64() if n in numeric_cols else text_type) for n in file_names},
                null_values=[""],  # only empty numeric fields are nulls, not "NA" or "NULL"
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except pa.ArrowInvalid as exc:
        stream.close()
        raise diagnose(exc) from None
    except OSError as exc:
        stream.close()
        raise _unreadable(source, exc) from None
    return _batches(reader, stream, diagnose, source)


def _batches(
    reader: pacsv.CSVStreamingReader,
    stream: pa.NativeFile,
    diagnose: Callable[[pa.ArrowInvalid], CsvInputError],
    source: str,
) -> Iterator[pa.RecordBatch]:
    try:
        yield from reader
    except pa.ArrowInvalid as exc:
        raise diagnose(exc) from None
    except OSError as exc:  # Arrow's I/O errors: a truncated or corrupt compressed stream
        raise _unreadable(source, exc) from None
    finally:
        stream.close()


def _unreadable(source: str, exc: OSError) -> CsvInputError:
    return CsvInputError(
        source, [f"cannot be read to its end ({exc}); the file is truncated or corrupt: copy it again"]
    )


def _read_header(file: Path, delimiter: str, encoding: str) -> list[str]:
    with _text_bytes(file) as raw:
        first = raw.readline()
    if first.startswith(b"\xef\xbb\xbf"):
        first = first[3:]
    if not first.strip():
        raise CsvInputError(str(file), ["line 1: the header is empty; expected the column names"])
    try:
        text = first.decode(encoding).rstrip("\r\n")
    except UnicodeDecodeError:
        raise CsvInputError(
            str(file),
            [f"line 1: the header is not valid {encoding}; convert the file or pass its encoding"],
        ) from None
    return next(csv.reader([text], delimiter=delimiter))


def _names_and_numeric(
    columns: RdaMetadata | Sequence[str] | None, numeric: Collection[str]
) -> tuple[list[str] | None, set[str]]:
    if columns is None:
        return None, set(numeric)
    if isinstance(columns, RdaMetadata):
        from_meta = {v.name for v in columns.variables if v.reads_as_number}
        return list(columns.names), from_meta | set(numeric)
    if isinstance(columns, str):
        raise TypeError("columns must be a list of names, not one string")
    return list(columns), set(numeric)


def _check_header(
    source: str, file_names: list[str], names: list[str] | None, numeric: set[str], delimiter: str
) -> None:
    other = [d for d in (";", ",", "\t", "|") if d != delimiter and len(file_names) == 1 and d in file_names[0]]
    if other:  # everything else would follow from reading the header as one column
        raise CsvInputError(
            source,
            [f"line 1: the header reads as one column containing {other[0]!r}; the file looks delimited by "
             f"{other[0]!r}, not {delimiter!r}: set the delimiter (input.csv.delimiter)"],
        )  # fmt: skip
    problems = []
    repeated = sorted({n for n in file_names if file_names.count(n) > 1})
    if repeated:
        problems.append(f"line 1: the header repeats {', '.join(repeated)}; make names unique")
    if names is not None and file_names != names:
        problems.append(
            f"line 1: the header ({', '.join(file_names)}) differs from the expected columns "
            f"({', '.join(names)}); fix the header or the column list"
        )
    unknown = sorted(numeric - set(file_names))
    if unknown:
        problems.append(
            f"numeric column(s) {', '.join(unknown)} are not in the file; columns are {', '.join(file_names)}"
        )
    if problems:
        raise CsvInputError(source, problems)


def _open(file: Path) -> pa.NativeFile:
    with file.open("rb") as handle:
        magic = handle.read(2)
    compression = "gzip" if magic == _GZIP_MAGIC else None
    return pa.input_stream(str(file), compression=compression)


def _text_bytes(file: Path) -> io.BufferedIOBase:
    with file.open("rb") as handle:
        magic = handle.read(2)
    if magic == _GZIP_MAGIC:
        return gzip.open(file, "rb")
    return file.open("rb")


def _diagnose(
    file: Path,
    delimiter: str,
    header: bool,
    names: Sequence[str],
    numeric: set[str],
    encoding: str,
) -> list[str]:
    """Scan the file in Python to find the lines pyarrow rejected (slow, error path only)."""
    problems: list[str] = []
    n_expected = len(names)
    number = 0
    with _text_bytes(file) as raw:
        for number, line in enumerate(raw, start=1):
            if number == 1 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]
            try:
                text = line.decode(encoding)
            except UnicodeDecodeError as exc:
                problems.append(
                    f"line {number}: byte {line[exc.start : exc.start + 1]!r} at column "
                    f"{exc.start + 1} is not valid {encoding}; convert the file to {encoding} "
                    f"or pass its encoding (e.g. encoding='latin-1')"
                )
            else:
                text = text.rstrip("\r\n")
                if not text or (number == 1 and header):
                    continue  # pyarrow skips empty lines; the header was checked already
                fields = next(csv.reader([text], delimiter=delimiter), [])
                if len(fields) != n_expected:
                    problems.append(
                        f"line {number}: {len(fields)} fields, expected {n_expected}; check the "
                        f"delimiter {delimiter!r} and the number of columns"
                    )
                else:
                    problems.extend(_bad_numbers(number, fields, names, numeric))
            if len(problems) >= _MAX_FOUND:
                break
    if number == 0:
        problems.append("the file is empty; expected at least one record")
    return problems


def _bad_numbers(number: int, fields: list[str], names: Sequence[str], numeric: set[str]) -> list[str]:
    out = []
    for name, value in zip(names, fields, strict=False):
        if name in numeric and value.strip():
            try:
                float(value)
            except ValueError:
                out.append(
                    f"line {number}: column {name} is numeric but holds {value!r}; fix the value "
                    f"or read the column as text"
                )
    return out


class TauMicrodata(NamedTuple):
    """tau-ARGUS microdata: the metadata and a stream of the records."""

    metadata: RdaMetadata
    batches: Iterator[pa.RecordBatch]


def read_tau_microdata(
    csv_path: str | Path,
    rda_path: str | Path,
    *,
    dictionary: bool = True,
    block_size: int = DEFAULT_BLOCK_SIZE,
    encoding: str = "utf-8",
) -> TauMicrodata:
    """Read tau-ARGUS microdata, free or fixed format: its metadata and a stream of its records.

    A free-format data file has no header; its columns are the metadata's variables in order,
    separated by the metadata's ``<SEPARATOR>``. A fixed-format file (metadata without
    ``<SEPARATOR>``, data usually ``.asc``) is read by :func:`cubeguard.io.asc.iter_asc_batches`
    into the same columns and types. Numeric, weight and record-key variables are read as float64
    (the record key keeps all its ``<DECIMALS>``: a decimal with at most 15 significant digits
    round-trips through float64), all others as strings.

    Args:
        csv_path: the data file (plain or gzip).
        rda_path: its ``.rda`` metadata.
        dictionary: dictionary-encode the string columns.
        block_size: bytes of text per batch, roughly.
        encoding: the text encoding of both files.

    Returns:
        The metadata and an iterator of record batches (see :func:`iter_csv_batches`).

    Raises:
        RdaError: the metadata cannot be read.
        CsvInputError: the metadata describes an SPSS file, or the free-format data file cannot
            be read (see :func:`iter_csv_batches`).
        AscError: the fixed-format data file cannot be read (see
            :func:`cubeguard.io.asc.iter_asc_batches`).
    """
    metadata = read_rda(rda_path, encoding=encoding)
    if metadata.spss:
        raise CsvInputError(
            str(rda_path),
            ["describes an SPSS system file (<SPSS>), which cubeguard cannot read; export the data from SPSS "
             "as delimited text and start the metadata with <SEPARATOR>"],
        )  # fmt: skip
    if metadata.separator is None:
        fixed = iter_asc_batches(csv_path, metadata, dictionary=dictionary, block_size=block_size, encoding=encoding)
        return TauMicrodata(metadata, fixed)
    if len(metadata.separator) != 1:
        raise CsvInputError(str(rda_path), [f"separator {metadata.separator!r} must be exactly one character"])
    batches = iter_csv_batches(
        csv_path,
        delimiter=metadata.separator,
        header=False,
        columns=metadata,
        dictionary=dictionary,
        block_size=block_size,
        encoding=encoding,
    )
    return TauMicrodata(metadata, batches)

"""Tests for cubeguard.io.csv_input: streaming CSV microdata, real files and hand-made bad ones."""

from __future__ import annotations

import gzip
from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from cubeguard.errors import CubeguardError
from cubeguard.io.csv_input import CsvInputError, iter_csv_batches, read_tau_microdata
from cubeguard.io.rda import RdaError, parse_rda

DATA = Path(__file__).resolve().parents[3] / "shared" / "external" / "censusprotection"
TAU_CSV = DATA / "test_data_10k_tau.csv.gz"
TAU_RDA = DATA / "test_data_10k_tau.rda"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"census test data not found at {DATA}")

TEXT = pa.dictionary(pa.int32(), pa.string())


def _file(tmp_path: Path, data: bytes, name: str = "d.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _table(batches: Iterable[pa.RecordBatch]) -> pa.Table:
    return pa.Table.from_batches(list(batches))


@needs_data
def test_tau_microdata_rows_columns_and_types() -> None:
    meta, batches = read_tau_microdata(TAU_CSV, TAU_RDA, block_size=1 << 16)
    batch_list = list(batches)
    assert len(batch_list) > 1  # streamed in several blocks
    table = pa.Table.from_batches(batch_list)
    assert table.num_rows == 30_578
    assert table.column_names == list(meta.names)
    assert table.column_names[-1] == "RKEY"
    assert table.schema.field("RKEY").type == pa.float64()
    assert all(table.schema.field(n).type == TEXT for n in meta.names[:-1])
    assert table.column("RKEY").null_count == 0


@needs_data
def test_tau_record_keys_keep_all_8_decimals() -> None:
    _, batches = read_tau_microdata(TAU_CSV, TAU_RDA, dictionary=False)
    keys = _table(batches).column("RKEY").to_numpy()
    raw = iter_csv_batches(TAU_CSV, header=False, columns=[f"c{i}" for i in range(15)])
    written = [str(s) for s in _table(raw).column("c14").cast(pa.string()).to_pylist()]
    exact = np.array([int(Decimal(s) * 10**8) for s in written], dtype=np.int64)
    assert np.array_equal(np.rint(keys * 1e8).astype(np.int64), exact)
    assert ((keys >= 0) & (keys < 1)).all()
    assert max(len(s.split(".")[1]) for s in written) == 8
    assert written[:2] == ["0.28757752", "0.78830514"]


@needs_data
def test_tau_file_is_the_plain_10k_file_with_split_grid_cell() -> None:
    _, batches = read_tau_microdata(TAU_CSV, TAU_RDA, dictionary=False)
    tau = _table(batches)
    plain = _table(iter_csv_batches(DATA / "test_data_10k.csv.gz", dictionary=False))
    assert plain.num_rows == tau.num_rows == 30_578
    assert len(plain.column_names) == 23
    for name in ["NUTS3", "LAU2", "HID", "Size", "SEX", "AGE.H", "COC.M", "POB.M"]:
        assert tau.column(name).equals(plain.column(name)), name
    ys, xs = tau.column("Y_COORD").to_pylist(), tau.column("X_COORD").to_pylist()
    cell = [f"1kmN{y}E{x}" for y, x in zip(ys, xs, strict=True)]
    assert cell == plain.column("L001000").to_pylist()


@needs_data
def test_100k_file_row_count() -> None:
    rows = sum(b.num_rows for b in iter_csv_batches(DATA / "test_data_100k.csv.gz"))
    assert rows == 303_214


@needs_data
def test_size_values_are_wider_than_the_metadata_says() -> None:
    # Size is declared width 1 in the .rda, but the data hold household sizes up to 100.
    meta, batches = read_tau_microdata(TAU_CSV, TAU_RDA)
    size = _table(batches).column("Size").cast(pa.string()).to_pylist()
    assert meta.variable("Size").width == 1
    assert max(len(s) for s in size) == 3


def test_header_names_and_string_types(tmp_path: Path) -> None:
    path = _file(tmp_path, b"a;b;c\n01;x;1.5\n2;;\n")
    table = _table(iter_csv_batches(path, numeric=["c"]))
    assert table.column_names == ["a", "b", "c"]
    assert table.schema.field("a").type == TEXT
    assert table.column("a").to_pylist() == ["01", "2"]  # codes kept as written
    assert table.column("b").to_pylist() == ["x", ""]  # empty stays a string, not null
    assert table.column("c").to_pylist() == [1.5, None]


def test_plain_strings_and_other_delimiter(tmp_path: Path) -> None:
    path = _file(tmp_path, b'a,b\n"x,y", 1\n')
    table = _table(iter_csv_batches(path, delimiter=",", dictionary=False))
    assert table.schema.field("a").type == pa.string()
    assert table.to_pydict() == {"a": ["x,y"], "b": [" 1"]}


def test_headerless_with_column_list(tmp_path: Path) -> None:
    path = _file(tmp_path, b"1;2\r\n3;4\r\n")
    table = _table(iter_csv_batches(path, header=False, columns=["x", "y"], numeric=["y"]))
    assert table.to_pydict() == {"x": ["1", "3"], "y": [2.0, 4.0]}


def test_headerless_with_metadata(tmp_path: Path) -> None:
    meta = parse_rda(['<SEPARATOR> ","', "A 1", "  <RECODEABLE>", "W 4", "  <WEIGHT>"])
    path = _file(tmp_path, b"1,2.5\n")
    table = _table(iter_csv_batches(path, header=False, columns=meta, delimiter=","))
    assert table.schema.field("W").type == pa.float64()
    assert table.to_pydict() == {"A": ["1"], "W": [2.5]}


def test_gzip_is_recognised_by_content(tmp_path: Path) -> None:
    path = _file(tmp_path, gzip.compress(b"a;b\n1;2\n"), name="looks_plain.csv")
    assert _table(iter_csv_batches(path)).to_pydict() == {"a": ["1"], "b": ["2"]}


def test_bom_is_skipped(tmp_path: Path) -> None:
    path = _file(tmp_path, b"\xef\xbb\xbfa;b\n1;2\n")
    assert _table(iter_csv_batches(path)).column_names == ["a", "b"]


def test_latin1_file(tmp_path: Path) -> None:
    path = _file(tmp_path, b"a;b\n1;M\xfcnchen\n")
    table = _table(iter_csv_batches(path, encoding="latin-1"))
    assert table.column("b").to_pylist() == ["M\u00fcnchen"]


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CsvInputError, match=r"nope\.csv, file not found; check the path") as info:
        iter_csv_batches(tmp_path / "nope.csv")
    assert isinstance(info.value, CubeguardError)


def test_wrong_number_of_fields_names_every_line(tmp_path: Path) -> None:
    path = _file(tmp_path, b"a;b;c\n1;2;3\n4;5\n\n6;7;8\r\n9;10;11;12\n")
    with pytest.raises(
        CsvInputError,
        match=r"d\.csv has 2 problems: line 3: 2 fields, expected 3; .*; line 6: 4 fields",
    ):
        _table(iter_csv_batches(path))


def test_wrong_number_of_fields_in_headerless_gzip(tmp_path: Path) -> None:
    path = _file(tmp_path, gzip.compress(b"1;2;3\n4;5\n"), name="d.csv.gz")
    with pytest.raises(CsvInputError, match=r"d\.csv\.gz, line 2: 2 fields, expected 3; check"):
        _table(iter_csv_batches(path, header=False, columns=["a", "b", "c"]))


def test_wrong_delimiter_against_metadata(tmp_path: Path) -> None:
    path = _file(tmp_path, b"1,2,3\n")
    with pytest.raises(CsvInputError, match=r"line 1: 1 fields, expected 3; check the delimiter"):
        _table(iter_csv_batches(path, header=False, columns=["a", "b", "c"]))


def test_bad_line_late_in_the_file_is_raised_after_earlier_batches(tmp_path: Path) -> None:
    lines = b"".join(b"%d;x\n" % i for i in range(20_000))
    path = _file(tmp_path, b"a;b\n" + lines + b"oops\n")
    batches = iter_csv_batches(path, block_size=4096)
    first = next(batches)
    assert first.num_rows > 0
    with pytest.raises(CsvInputError, match=r"line 20002: 1 fields, expected 2"):
        for _ in batches:
            pass


def test_number_that_is_not_a_number(tmp_path: Path) -> None:
    path = _file(tmp_path, b"a;b\n1;2\n3;x\n4;\n")
    with pytest.raises(CsvInputError, match=r"d\.csv, line 3: column b is numeric but holds 'x'"):
        _table(iter_csv_batches(path, numeric=["b"]))


def test_undecodable_bytes(tmp_path: Path) -> None:
    path = _file(tmp_path, b"a;b\n1;2\n3;M\xfcnchen\n")
    with pytest.raises(CsvInputError, match=r"d\.csv, line 3: byte b'\\xfc' at column 4 is not valid utf-8"):
        _table(iter_csv_batches(path))


def test_undecodable_header(tmp_path: Path) -> None:
    path = _file(tmp_path, b"a;\xfc\n1;2\n")
    with pytest.raises(CsvInputError, match=r"line 1: the header is not valid utf-8"):
        iter_csv_batches(path)


def test_header_differs_from_expected_columns(tmp_path: Path) -> None:
    path = _file(tmp_path, b"a;b\n1;2\n")
    with pytest.raises(
        CsvInputError,
        match=r"line 1: the header \(a, b\) differs from the expected columns \(a, c\)",
    ):
        iter_csv_batches(path, columns=["a", "c"])


def test_numeric_column_not_in_file(tmp_path: Path) -> None:
    path = _file(tmp_path, b"a;b\n1;2\n")
    with pytest.raises(CsvInputError, match=r"numeric column\(s\) z are not in the file"):
        iter_csv_batches(path, numeric=["z"])
    with pytest.raises(CsvInputError, match=r"numeric column\(s\) z are not in columns"):
        iter_csv_batches(path, header=False, columns=["a", "b"], numeric=["z"])


def test_only_empty_numeric_fields_are_nulls(tmp_path: Path) -> None:
    path = _file(tmp_path, b"a;b\n1;\n2;NA\n")
    with pytest.raises(CsvInputError, match=r"line 3: column b is numeric but holds 'NA'"):
        _table(iter_csv_batches(path, numeric=["b"]))


def test_repeated_header_names(tmp_path: Path) -> None:
    with pytest.raises(CsvInputError, match=r"line 1: the header repeats a; make names unique"):
        iter_csv_batches(_file(tmp_path, b"a;b;a\n1;2;3\n"))


def test_headerless_without_columns(tmp_path: Path) -> None:
    with pytest.raises(CsvInputError, match=r"the file has no header, so pass columns"):
        iter_csv_batches(_file(tmp_path, b"1;2\n"), header=False)


def test_repeated_column_names(tmp_path: Path) -> None:
    with pytest.raises(CsvInputError, match=r"column names repeat \(a\); make them unique"):
        iter_csv_batches(_file(tmp_path, b"1;2\n"), header=False, columns=["a", "a"])


def test_empty_files(tmp_path: Path) -> None:
    path = _file(tmp_path, b"")
    with pytest.raises(CsvInputError, match=r"line 1: the header is empty"):
        iter_csv_batches(path)
    with pytest.raises(CsvInputError, match=r"d\.csv, the file is empty; expected at least one"):
        _table(iter_csv_batches(path, header=False, columns=["a"]))


@pytest.mark.parametrize("delimiter", ["", ";;", '"', "\n"])
def test_bad_delimiter(tmp_path: Path, delimiter: str) -> None:
    with pytest.raises(CsvInputError, match=r"delimiter .* must be one character, not a quote"):
        iter_csv_batches(_file(tmp_path, b"a\n"), delimiter=delimiter)


def test_tiny_block_size(tmp_path: Path) -> None:
    with pytest.raises(CsvInputError, match=r"block_size 10 is too small"):
        iter_csv_batches(_file(tmp_path, b"a\n"), block_size=10)


def test_tau_reader_reads_fixed_format_and_refuses_spss(tmp_path: Path) -> None:
    rda = _file(tmp_path, b"A 1 2\n  <RECODEABLE>\n", name="m.rda")
    assert _table(read_tau_microdata(_file(tmp_path, b" 1\n12\n"), rda).batches).column("A").to_pylist() == ["1", "12"]
    spss = _file(tmp_path, b"<SPSS>\nA 1 2\n  <RECODEABLE>\n", name="s.rda")
    with pytest.raises(CsvInputError, match=r"s\.rda, describes an SPSS system file \(<SPSS>\), which"):
        read_tau_microdata(_file(tmp_path, b"12\n"), spss)


def test_tau_reader_reports_metadata_and_data_problems(tmp_path: Path) -> None:
    with pytest.raises(RdaError, match=r"nope\.rda, file not found"):
        read_tau_microdata(_file(tmp_path, b"1\n"), tmp_path / "nope.rda")
    rda = _file(tmp_path, b'<SEPARATOR> ";"\nA 1\nK 10\n  <RECORDKEY>\n', name="m.rda")
    with pytest.raises(CsvInputError, match=r"nope\.csv, file not found"):
        read_tau_microdata(tmp_path / "nope.csv", rda)
    with pytest.raises(CsvInputError, match=r"line 3: 1 fields, expected 2"):
        read_tau_microdata(_file(tmp_path, b"1;0.5\n2;0.25\n3\n"), rda)  # first block is eager

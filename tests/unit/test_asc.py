"""Tests for cubeguard.io.asc: tau-ARGUS fixed-format microdata, read and written."""

from __future__ import annotations

import doctest
import gzip
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cubeguard.io.asc as asc_module
from cubeguard.io.asc import AscError, iter_asc_batches
from cubeguard.io.asc_write import fixed_layout, number_text, write_asc
from cubeguard.io.csv_input import read_tau_microdata
from cubeguard.io.rda import RdaMetadata, RdaVariable, parse_rda, write_rda
from tests.unit.test_io_csv import _table

DATA = Path(__file__).resolve().parents[3] / "shared" / "external" / "censusprotection"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"census test data not found at {DATA}")
TEXT = pa.dictionary(pa.int32(), pa.string())

# Codes at 1-3 and 4-5, a number with two decimals at 6-12, a record key at 13-22.
META = parse_rda(
    """\
A 1 3
  <RECODEABLE>
B 4 2
  <RECODEABLE>
V 6 7
  <NUMERIC>
  <DECIMALS> 2
K 13 10
  <RECORDKEY>
  <DECIMALS> 8
""".splitlines()
)


def _file(tmp_path: Path, data: bytes, name: str = "d.asc") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _rows(table: pa.Table) -> dict[str, list[object]]:
    return {name: table.column(name).to_pylist() for name in table.column_names}


def _fails(tmp_path: Path, data: bytes, pattern: str, meta: RdaMetadata = META) -> AscError:
    with pytest.raises(AscError, match=pattern) as info:
        list(iter_asc_batches(_file(tmp_path, data), meta))
    return info.value


def test_columns_types_and_padding(tmp_path: Path) -> None:
    # fields: A (1-3) | B (4-5) | V (6-12) | K (13-22)
    data = b"".join(
        [
            b"  1" + b" A" + b"  12.50" + b"0.12345678\n",
            b"12 " + b" B" + b"  -3.00" + b" 0.5      \n",
            b"1  " + b"CC" + b"       " + b"1.00000000\n",
        ]
    )
    table = _table(iter_asc_batches(_file(tmp_path, data), META))
    assert table.schema == pa.schema([("A", TEXT), ("B", TEXT), ("V", pa.float64()), ("K", pa.float64())])
    # Leading blanks are tau-ARGUS's right-justification and go; trailing ones make another code.
    assert _rows(table) == {
        "A": ["1", "12 ", "1  "],
        "B": ["A", "B", "CC"],
        "V": [12.5, -3.0, None],
        "K": [0.12345678, 0.5, 1.0],
    }
    plain = _table(iter_asc_batches(_file(tmp_path, data), META, dictionary=False))
    assert plain.schema.field("A").type == pa.string()


def test_crlf_empty_lines_bom_gzip_and_last_line_without_end(tmp_path: Path) -> None:
    data = b"\xef\xbb\xbf  1 A   1.00       0.1\r\n\r\n\n  2 B   2.00       0.2"
    path = tmp_path / "d.gz.bin"
    path.write_bytes(gzip.compress(data))
    table = _table(iter_asc_batches(path, META))
    assert _rows(table)["A"] == ["1", "2"]
    assert _rows(table)["K"] == [0.1, 0.2]


def test_blocks_stream_and_line_numbers_count_every_line(tmp_path: Path) -> None:
    good = b"  1 A   1.00       0.1\n" * 200
    batches = list(iter_asc_batches(_file(tmp_path, good * 10), META, block_size=1024))
    assert len(batches) > 1 and sum(b.num_rows for b in batches) == 2000
    error = _fails(
        tmp_path, good + b"\n  1 A   x.00       0.1\n", r"d\.asc, line 202: variable V is numeric but holds 'x\.00'"
    )
    assert len(error.problems) == 1


@needs_data
def test_course_data_read_from_fixed_format_equals_free_format(tmp_path: Path) -> None:
    meta, batches = read_tau_microdata(DATA / "test_data_10k_tau.csv.gz", DATA / "test_data_10k_tau.rda")
    free = _table(batches)
    fixed = fixed_layout(meta, free.to_batches())
    assert write_asc(free, fixed, tmp_path / "m.asc") == 30578
    write_rda(fixed, tmp_path / "m.rda")
    again_meta, again = read_tau_microdata(tmp_path / "m.asc", tmp_path / "m.rda", block_size=1 << 16)
    table = _table(again)
    assert again_meta.format == "fixed" and table.schema == free.schema
    assert _rows(table) == _rows(free)
    assert (tmp_path / "m.asc").read_bytes().startswith(b"121121025    1  42  1212 11116 21  1279346560.28757752\n")


# Codes: printable ASCII without a leading blank (which tau-ARGUS reads as padding), trailing blanks allowed.
_codes = st.text(st.sampled_from("01239AZaz.- "), min_size=1, max_size=6).filter(lambda c: not c.startswith(" "))


@st.composite
def _tables(draw: st.DrawFn) -> tuple[pa.Table, RdaMetadata]:
    n = draw(st.integers(1, 30))
    n_codes = draw(st.integers(1, 3))
    decimals = draw(st.integers(0, 4))
    columns: dict[str, pa.Array] = {}
    variables = []
    for k in range(n_codes):
        pad = draw(st.integers(0, 3))  # declared width beyond the widest code: padding
        columns[f"C{k}"] = pa.array(draw(st.lists(_codes, min_size=n, max_size=n))).dictionary_encode()
        variables.append(RdaVariable(f"C{k}", None, 1 + pad, recodeable=True))
    scaled = draw(st.lists(st.none() | st.integers(-(10**9), 10**9), min_size=n, max_size=n))
    columns["V"] = pa.array([None if s is None else s / 10**decimals for s in scaled], pa.float64())
    variables.append(RdaVariable("V", None, 1, numeric=True, decimals=decimals))
    keys = draw(st.lists(st.integers(0, 10**8 - 1), min_size=n, max_size=n))
    columns["RKEY"] = pa.array([k / 10**8 for k in keys], pa.float64())
    variables.append(RdaVariable("RKEY", None, 10, record_key=True, decimals=8))
    return pa.table(columns), RdaMetadata(";", tuple(variables))


@given(_tables())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_read_of_write_gives_the_table_back(tmp_path: Path, drawn: tuple[pa.Table, RdaMetadata]) -> None:
    table, free = drawn
    meta = fixed_layout(free, table.to_batches(max_chunksize=7))
    path = tmp_path / "h.asc"
    write_asc(table.to_batches(max_chunksize=7), meta, path, newline="\r\n")
    back = _table(iter_asc_batches(path, meta, block_size=1024))
    assert _rows(back) == _rows(table)
    assert back.schema == pa.schema([(n, TEXT if n.startswith("C") else pa.float64()) for n in table.column_names])


def test_fixed_layout_takes_the_widest_value_and_keeps_tags() -> None:
    free = parse_rda(['<SEPARATOR> ";"', "S 1", "  <RECODEABLE>", '  <TOTCODE> "T"', "X 2", "  <NUMERIC>"])
    table = pa.table({"S": ["1", "100"], "X": [1.0, -12345.0]})
    meta = fixed_layout(free, table.to_batches())
    assert [(v.name, v.position, v.width, v.total_code) for v in meta.variables] == [
        ("S", 1, 3, "T"),
        ("X", 4, 6, "Total"),
    ]
    assert meta.format == "fixed"


def test_write_right_aligns_codes_and_numbers(tmp_path: Path) -> None:
    table = pa.table({"A": ["1", "12", None], "B": ["A", "B", "C"], "V": [12.5, -3.0, None], "K": [0.5, 0.0, 1.0]})
    write_asc(table, META, tmp_path / "w.asc")
    assert (tmp_path / "w.asc").read_bytes() == b"".join(
        [
            b"  1" + b" A" + b"  12.50" + b"0.50000000\n",
            b" 12" + b" B" + b"  -3.00" + b"0.00000000\n",
            b"   " + b" C" + b"       " + b"1.00000000\n",  # a null code and a null number are blanks
        ]
    )


def test_number_text_for_free_format() -> None:
    assert number_text(pa.array([0.25, None, -7.0, 1e9]), 0 if False else 2).to_pylist() == [
        "0.25",
        "",
        "-7.00",
        "1000000000.00",
    ]


def test_doctests() -> None:
    assert doctest.testmod(asc_module).failed == 0


# --- errors, one test each ---


def test_short_line_names_file_line_and_variable(tmp_path: Path) -> None:
    _fails(
        tmp_path,
        b"  1 A   1.00       0.1\n  1 A   1.00\n",
        r"d\.asc, line 2: 12 characters, too short for variable K \(columns 13-22\); pad the line",
    )


def test_problems_are_collected_up_to_100(tmp_path: Path) -> None:
    error = _fails(tmp_path, b"  1 A   1.0\n" * 150, r"d\.asc has 100 problems: line 1: 11 characters")
    assert len(error.problems) == 100


def test_non_numeric_value(tmp_path: Path) -> None:
    _fails(
        tmp_path, b"  1 A   1.00       abc\n", r"d\.asc, line 1: variable K is numeric but holds 'abc'; fix the value"
    )


def test_undecodable_code(tmp_path: Path) -> None:
    _fails(
        tmp_path, b"  \xff A   1.00       0.1\n", r"line 1: variable A holds bytes b'  \\xff' that are not valid utf-8"
    )


def test_missing_empty_and_not_fixed(tmp_path: Path) -> None:
    with pytest.raises(AscError, match=r"nope\.asc, file not found; check the path"):
        iter_asc_batches(tmp_path / "nope.asc", META)
    _fails(tmp_path, b"\n\n", r"d\.asc, the file is empty; expected at least one record")
    free = parse_rda(['<SEPARATOR> ";"', "A 1"])
    with pytest.raises(AscError, match=r"describes a free-format file, not a fixed-format one"):
        iter_asc_batches(_file(tmp_path, b"1\n"), free)
    with pytest.raises(AscError, match=r"variable A has no START; declare it as 'NAME START WIDTH'"):
        iter_asc_batches(_file(tmp_path, b"1\n"), RdaMetadata(None, (RdaVariable("A", None, 1),)))
    with pytest.raises(AscError, match=r"block_size 10 is too small"):
        iter_asc_batches(_file(tmp_path, b"1\n"), META, block_size=10)


def _write_fails(tmp_path: Path, table: pa.Table, pattern: str, meta: RdaMetadata = META) -> None:
    with pytest.raises(AscError, match=pattern):
        write_asc(table, meta, tmp_path / "w.asc")
    assert not (tmp_path / "w.asc").exists()  # no half-written file is left


def _one(**values: object) -> pa.Table:
    row = {"A": "1", "B": "A", "V": 1.0, "K": 0.5} | values
    return pa.table({k: [v] for k, v in row.items()})


def test_write_refuses_a_code_wider_than_its_field(tmp_path: Path) -> None:
    _write_fails(tmp_path, _one(A="1234"), r"w\.asc, record 1: code '1234' of A is 4 bytes, wider than its field")


def test_write_refuses_a_code_with_a_leading_blank(tmp_path: Path) -> None:
    _write_fails(tmp_path, _one(B=" 1"), r"record 1: code ' 1' of B starts with a blank or holds a line end")


def test_write_refuses_more_decimals_than_declared(tmp_path: Path) -> None:
    _write_fails(tmp_path, _one(V=1.125), r"record 1: value 1.125 of V has more decimals than <DECIMALS> 2")


def test_write_refuses_a_number_wider_than_its_field(tmp_path: Path) -> None:
    _write_fails(tmp_path, _one(V=123456.0), r"record 1: value 123456.0 of V needs 9 characters, wider than its field")


def test_write_refuses_an_infinite_number(tmp_path: Path) -> None:
    _write_fails(tmp_path, _one(V=np.inf), r"record 1: value inf of V is too large \(or infinite\)")


def test_write_refuses_a_missing_column(tmp_path: Path) -> None:
    _write_fails(tmp_path, _one().drop_columns(["K"]), r"w\.asc, the data has no column K; add it")


def test_write_refuses_overlapping_fields(tmp_path: Path) -> None:
    meta = parse_rda(["A 1 3", "B 3 2"])
    _write_fails(tmp_path, _one(), r"variables A and B overlap \(columns 1-3 and 3-4\)", meta)

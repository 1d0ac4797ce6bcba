"""Tests for the tau-ARGUS writers: .rda (format_rda), .hrc (format_hrc) and cubeguard.io.tau_export."""

from __future__ import annotations

import dataclasses
import doctest
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pytest

import cubeguard.io.tau_export as tau_export_module
from cubeguard.config.hrc_codes import hrc_classification
from cubeguard.cubes.spec import CodeSpec
from cubeguard.io.csv_input import read_tau_microdata
from cubeguard.io.hrc import format_hrc, parse_hrc, read_hrc
from cubeguard.io.rda import RdaError, RdaMetadata, RdaTag, RdaVariable, format_rda, parse_rda, read_rda, write_rda
from cubeguard.io.tau_export import TauExportError, export_tau, hierarchy_codes

DATA = Path(__file__).resolve().parents[3] / "shared" / "external" / "censusprotection"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"census test data not found at {DATA}")
HRC = ["nuts3_hierarchy.hrc", "lau2_hierarchy.hrc", "age_h_hierarchy.hrc", "coc_m_hierarchy.hrc", "pob_m_hierarchy.hrc"]

FIXED = """\
NACE 1 6
    <RECODEABLE>
    <HIERARCHICAL>
    <HIERLEVELS> 3 1 1 1 0 0
Region 11 1 "9" "8"
    <RECODEABLE>
    <TOTCODE> "All regions"
    <HIERARCHICAL>
    <HIERCODELIST> "Region files/Region.hrc"
    <HIERLEADSTRING> "@"
Var1 12 10
    <NUMERIC>
    <DECIMALS> 2
    <CKM> T(3)
    <NEWTAG> "two words" bare
Weight 22 6
    <WEIGHT>
Req 28 1
    <REQUEST> "1" "2"
"""


def _unlined(meta: RdaMetadata) -> RdaMetadata:
    """The metadata without line numbers and source, which a rewrite may change."""
    variables = tuple(
        dataclasses.replace(v, line=0, tags=tuple(dataclasses.replace(t, line=0) for t in v.tags))
        for v in meta.variables
    )
    return dataclasses.replace(meta, variables=variables, source=None)


@needs_data
def test_course_rda_is_written_back_byte_for_byte() -> None:
    path = DATA / "test_data_10k_tau.rda"
    meta = read_rda(path)
    text = format_rda(meta, newline="\r\n")
    assert text.encode() == path.read_bytes()
    assert _unlined(parse_rda(text.splitlines())) == _unlined(meta)


def test_fixed_rda_round_trip_keeps_every_tag(tmp_path: Path) -> None:
    meta = parse_rda(FIXED.splitlines())
    write_rda(meta, tmp_path / "m.rda")
    assert (tmp_path / "m.rda").read_text() == FIXED  # this text is already in tau-ARGUS's layout
    again = read_rda(tmp_path / "m.rda")
    assert _unlined(again) == _unlined(meta)
    assert again.variable("Var1").unknown_tags[0].values == ("two words", "bare")


def test_variable_without_tags_is_written_from_its_fields() -> None:
    key = RdaVariable("K", None, 10, record_key=True, decimals=8, pfile_freq="p.csv")
    code = RdaVariable("S", None, 1, recodeable=True, total_code="T", missing=("9",))
    text = format_rda(RdaMetadata(",", (code, key)))
    assert text == (
        '   <SEPARATOR> ","\nS 1 "9"\n    <RECODEABLE>\n    <TOTCODE> "T"\n'
        'K 10\n    <RECORDKEY>\n    <PFILE_FREQ> "p.csv"\n    <DECIMALS> 8\n'
    )
    back = parse_rda(text.splitlines())
    assert back.variable("K").record_key and back.variable("K").decimals == 8
    assert back.variable("S").missing == ("9",) and back.variable("S").total_code == "T"


def test_rda_refuses_a_value_with_a_double_quote() -> None:
    meta = parse_rda(["A 1 1"])
    bad = dataclasses.replace(meta.variables[0], tags=(RdaTag("TOTCODE", ('say "all"',), 0),))
    with pytest.raises(
        RdaError, match=r"metadata to write, <TOTCODE> of A: 'say \"all\"' holds a double quote or a line end"
    ):
        format_rda(dataclasses.replace(meta, variables=(bad,)))


@needs_data
@pytest.mark.parametrize("name", HRC)
def test_course_hierarchies_round_trip(name: str) -> None:
    path = DATA / "hierarchies" / name
    codes = read_hrc(path, strip=False)
    text = format_hrc(codes, newline="\r\n")
    assert parse_hrc(text.splitlines(), strip=False) == codes
    # Byte for byte, but for blank lines at the end (age_h_hierarchy.hrc has one), which tau-ARGUS skips.
    assert text.encode() == path.read_bytes().rstrip(b"\r\n") + b"\r\n"


def _code(code: str, parent: str | None, values: list[str] | None = None, rng: tuple[int, int] | None = None) -> object:
    return SimpleNamespace(code=code, parent=parent, values=values, range=rng)


def test_hierarchy_codes_right_justify_leaves_and_expand_values() -> None:
    tree = [
        _code("  1", "T", ["1"]),
        _code("T", None),
        _code("G", "T"),
        _code("G1", "G", ["21", "22"]),
        _code("Y", "T", rng=(8, 9)),
    ]
    codes = hierarchy_codes(tree, 3)  # type: ignore[arg-type]
    assert format_hrc(codes) == "  1\nG\n@G1\n@@ 21\n@@ 22\nY\n@  8\n@  9\n"


def test_hierarchy_codes_need_one_total() -> None:
    with pytest.raises(TauExportError, match=r"classification, 2 codes have no parent; give exactly one total"):
        hierarchy_codes([_code("T", None), _code("U", None)], 1)  # type: ignore[list-item]


def _read(table: pa.Table) -> tuple[list[int], object]:
    calls = [0]

    def read() -> Iterator[pa.RecordBatch]:
        calls[0] += 1
        return iter(table.to_batches(max_chunksize=2))

    return calls, read


TABLE = pa.table(
    {
        "hid": ["h1", "h1", "h2"],
        "geo": ["11", "12", "21"],
        "age": pa.array([3, 40, 7], pa.int64()),
        "income": [1.5, 20.25, None],
        "rkey": [0.125, 0.5, 0.75],
    }
)
CLASSES = {
    "geo": [_code("Total", None), _code("1", "Total"), _code("11", "1"), _code("12", "1"), _code("21", "Total")],
    "age": [_code("Total", None), _code("young", "Total", rng=(0, 9)), _code("old", "Total", rng=(10, 99))],
}


@pytest.mark.parametrize("fixed", [True, False])
def test_export_from_data_round_trips(tmp_path: Path, fixed: bool) -> None:
    calls, read = _read(TABLE)
    out = export_tau(read, tmp_path, classifications=CLASSES, record_key="rkey", household_id="hid", fixed=fixed)  # type: ignore[arg-type]
    assert out.data.name == ("microdata.asc" if fixed else "microdata.csv") and out.records == 3
    assert calls[0] == 4  # peek, decimals, widths, write
    meta, batches = read_tau_microdata(out.data, out.metadata)
    back = pa.Table.from_batches(list(batches))
    assert back.column("geo").to_pylist() == ["11", "12", "21"]
    assert back.column("age").to_pylist() == ["3", "40", "7"]  # integer codes are written as codes
    assert back.column("income").to_pylist() == [1.5, 20.25, None]
    assert back.column("rkey").to_pylist() == [0.125, 0.5, 0.75]
    assert meta.variable("hid").holding and meta.variable("rkey").record_key and meta.variable("rkey").decimals == 3
    assert meta.variable("income").numeric and meta.variable("income").decimals == 2
    geo, age = meta.variable("geo"), meta.variable("age")
    assert (geo.hier_codelist, geo.hier_lead_string, geo.total_code) == ("geo.hrc", "@", "Total")
    assert (tmp_path / "geo.hrc").read_text() == "1\n@11\n@12\n21\n"
    assert (tmp_path / "age.hrc").read_text().splitlines()[:3] == ["young", "@ 0", "@ 1"]
    assert age.width == 2 and age.hierarchical


def test_codes_read_from_a_hrc_file_are_written_back_as_the_file_spells_them(tmp_path: Path) -> None:
    # Groups unpadded, leaves right-justified to the data width (2), as tau-ARGUS matches them.
    source = "1\r\n@ 1\r\n@ 2\r\n2\r\n@10\r\n"
    (tmp_path / "geo.hrc").write_text(source, newline="")
    read = hrc_classification({"hrc": "geo.hrc", "group_prefix": "G"}, tmp_path)
    assert [c["code"] for c in read.codes] == ["Total", "G1", "1", "2", "G2", "10"]  # the config's codes
    classes = {"geo": [CodeSpec.model_validate(c) for c in read.codes]}
    _, rows = _read(pa.table({"geo": ["1", "2", "10"]}))

    out = export_tau(rows, tmp_path / "tau", classifications=classes, written={"geo": read.written})  # type: ignore[arg-type]
    assert out.hierarchies["geo"].read_text() == source.replace("\r\n", "\n")  # prefix gone, padding back
    back = hrc_classification({"hrc": "tau/geo.hrc", "group_prefix": "G"}, tmp_path)
    assert back.codes == read.codes and back.written == read.written

    plain = export_tau(rows, tmp_path / "plain", classifications=classes)  # type: ignore[arg-type]
    assert plain.hierarchies["geo"].read_text() == "G1\n@ 1\n@ 2\nG2\n@10\n"  # the config's own codes


def test_export_notes_generated_record_keys(tmp_path: Path) -> None:
    _, read = _read(TABLE.drop_columns(["rkey"]))
    out = export_tau(read, tmp_path, classifications={}, record_key="rkey")  # type: ignore[arg-type]
    assert out.notes == ("record keys (rkey) are generated, not in the data: no <RECORDKEY> written",)


def test_export_refuses_a_hierarchy_with_a_code_twice(tmp_path: Path) -> None:
    classes = {"geo": [_code("Total", None), _code("11", "Total", ["12"]), _code("12", "Total")]}
    _, read = _read(TABLE)
    with pytest.raises(TauExportError, match=r"geo\.hrc, code '12' appears twice in the hierarchy"):
        export_tau(read, tmp_path, classifications=classes)  # type: ignore[arg-type]


def test_free_export_refuses_a_code_holding_the_separator(tmp_path: Path) -> None:
    _, read = _read(pa.table({"geo": ["1;2", "3"]}))
    with pytest.raises(TauExportError, match=r"microdata\.csv, a code in records 1-2 holds the separator ';'"):
        export_tau(read, tmp_path, classifications={}, fixed=False)


def test_export_refuses_empty_microdata(tmp_path: Path) -> None:
    with pytest.raises(TauExportError, match=r"the microdata has no records; nothing to write"):
        export_tau(lambda: iter([]), tmp_path, classifications={})


def test_doctests() -> None:
    assert doctest.testmod(tau_export_module).failed == 0

"""Tests for cubeguard.io.rda: tau-ARGUS metadata, the real file and hand-made ones."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

import cubeguard.io.rda as rda_module
from cubeguard.errors import CubeguardError
from cubeguard.io.rda import (
    RdaError,
    RdaMetadata,
    RdaTag,
    parse_rda,
    read_rda,
    resolve_referenced_file,
)

DATA = Path(__file__).resolve().parents[3] / "shared" / "external" / "censusprotection"
RDA = DATA / "test_data_10k_tau.rda"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"census test data not found at {DATA}")

TAU_NAMES = (
    "NUTS3", "LAU2", "HID", "Size", "SEX", "AGE.H", "TPH.H", "HST", "EDU", "SIE",
    "COC.M", "POB.M", "Y_COORD", "X_COORD", "RKEY",
)  # fmt: skip

# In the style of tau-ARGUS's own example data/vars1to5sampleG.rda (fixed format).
FIXED = """\
NACE 1  6
  <RECODEABLE>
  <HIERARCHICAL>
  <HIERLEVELS>  3 1 1 1 0 0
Size 8  2  99
  <RECODEABLE>
Region 11  1  "9" "8"
  <RECODEABLE>
  <HIERARCHICAL>
  <HIERCODELIST> "Region.hrc"
  <HIERLEADSTRING> "@"
  <TOTCODE> "All regions"
Var1 12  10
  <NUMERIC>
  <DECIMALS> 2
Weight 22 6
  <WEIGHT>
"""


def _rda(tmp_path: Path, text: str, name: str = "m.rda") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _fails(text: str, pattern: str) -> RdaError:
    with pytest.raises(RdaError, match=pattern) as info:
        parse_rda(text.splitlines(), source="m.rda")
    assert isinstance(info.value, CubeguardError)
    return info.value


@needs_data
def test_real_metadata_free_format() -> None:
    meta = read_rda(RDA)
    assert meta.format == "free"
    assert meta.separator == ";"
    assert meta.names == TAU_NAMES
    assert meta.source == RDA
    assert all(v.position is None for v in meta.variables)
    assert [v.width for v in meta.variables] == [3, 6, 5, 1, 1, 3, 3, 3, 2, 1, 3, 3, 4, 4, 10]
    assert all(not v.unknown_tags for v in meta.variables)
    assert not meta.header_tags


@needs_data
def test_real_metadata_variables() -> None:
    meta = read_rda(RDA)
    nuts3 = meta.variable("NUTS3")
    assert nuts3.recodeable and nuts3.hierarchical
    assert nuts3.hier_codelist == "nuts3_hierarchy.hrc"
    assert nuts3.hier_lead_string == "@"
    assert nuts3.total_code == "Total"
    assert nuts3.line == 2
    assert [t.name for t in nuts3.tags] == [
        "RECODEABLE", "TOTCODE", "HIERARCHICAL", "HIERCODELIST", "HIERLEADSTRING",
    ]  # fmt: skip
    hid = meta.variable("HID")
    assert hid.holding and not hid.recodeable and not hid.reads_as_number
    assert not meta.variable("SEX").hierarchical
    key = meta.record_key
    assert key is not None and key.name == "RKEY"
    assert key.decimals == 8 and key.width == 10
    assert key.pfile_freq == "ptab2.csv"
    assert [v.name for v in meta.variables if v.reads_as_number] == ["RKEY"]
    hierarchical = [v.name for v in meta.variables if v.hierarchical]
    assert hierarchical == ["NUTS3", "LAU2", "AGE.H", "COC.M", "POB.M"]


@needs_data
def test_real_metadata_names_files_in_other_folders() -> None:
    # The course keeps .hrc files in hierarchies/ and p-tables in ptables/, not beside the .rda.
    meta = read_rda(RDA)
    with pytest.raises(RdaError, match=r"file 'nuts3_hierarchy.hrc' named in the metadata not"):
        resolve_referenced_file(meta, "nuts3_hierarchy.hrc")
    found = resolve_referenced_file(meta, "nuts3_hierarchy.hrc", [DATA / "hierarchies"])
    assert found == DATA / "hierarchies" / "nuts3_hierarchy.hrc"
    key = meta.record_key
    assert key is not None and key.pfile_freq is not None
    ptable = resolve_referenced_file(RDA, key.pfile_freq, [DATA / "hierarchies", DATA / "ptables"])
    assert ptable == DATA / "ptables" / "ptab2.csv"


def test_resolve_next_to_the_metadata_with_windows_path(tmp_path: Path) -> None:
    (tmp_path / "Region.hrc").write_text("1\n")
    meta = read_rda(_rda(tmp_path, FIXED))
    assert resolve_referenced_file(meta, "C:\\tau\\Region.hrc") == tmp_path / "Region.hrc"


def test_fixed_format(tmp_path: Path) -> None:
    meta = read_rda(_rda(tmp_path, FIXED))
    assert meta.format == "fixed" and meta.separator is None
    nace, size, region, var1, weight = meta.variables
    assert (nace.position, nace.width) == (1, 6)
    assert nace.hierarchical and nace.hier_levels == (3, 1, 1, 1, 0, 0)
    assert size.missing == ("99",)
    assert region.missing == ("9", "8")
    assert region.total_code == "All regions"
    assert region.hier_codelist == "Region.hrc"
    assert var1.numeric and var1.decimals == 2 and var1.reads_as_number
    assert weight.weight and weight.reads_as_number and (weight.position, weight.width) == (22, 6)
    assert nace.hier_lead_string is None and nace.total_code == "Total"


def test_unknown_tags_are_kept() -> None:
    meta = parse_rda(['<SEPARATOR> ","', "<GLOBALTHING> 1", "A 2", "  <RECODEABLE>", '  <FUTURE> "x y" 3'])
    a = meta.variable("A")
    assert a.unknown_tags == (RdaTag("FUTURE", ("x y", "3"), 5),)
    assert meta.header_tags == (RdaTag("GLOBALTHING", ("1",), 2),)
    assert a.recodeable


def test_other_known_tags() -> None:
    lines = [
        '<SEPARATOR> "\t"',
        "Age 3",
        "  <RECODABLE>",
        '  <MISSING> "999"',
        "  <TRUNCABLE>",
        '  <CODELIST> "age.cdl"',
        "  <DISTANCE> 1 2 3",
        "Pers 4",
        '  <REQUEST> "1" "2"',
        "Income 8",
        "  <NUMERIC>",
        "  <CKM> T(3)",
        "  <SCALING> F(0.03,0.30,1000,3,0.5,0.2)",
        "Key 10",
        "  <RECORDKEY>",
        '  <PFILE> "freq.txt"',
        '  <PFILE_CONT> "cont.txt"',
        '  <PFILE_SEP> "sep.txt"',
    ]
    meta = parse_rda(lines)
    assert meta.separator == "\t"
    age = meta.variable("age")  # tau-ARGUS ignores case in names
    assert age.recodeable and age.truncable and age.missing == ("999",)
    assert age.codelist == "age.cdl"
    assert meta.variable("Pers").request == ("1", "2")
    income = meta.variable("Income")
    assert income.numeric and not income.unknown_tags
    key = meta.variable("Key")
    assert (key.pfile_freq, key.pfile_cont, key.pfile_sep) == ("freq.txt", "cont.txt", "sep.txt")


def test_spss_metadata() -> None:
    meta = parse_rda(["<SPSS>", "A 1 2", "  <RECODEABLE>"])
    assert meta.format == "spss"


def test_unknown_variable_lookup() -> None:
    meta = parse_rda(["A 1 1", "B 2 1"])
    with pytest.raises(KeyError, match=r"unknown variable 'C'; known: A, B"):
        meta.variable("C")


def test_tag_before_any_variable() -> None:
    _fails("<RECODEABLE>\nA 1 1", r"m\.rda, line 1: <RECODEABLE> comes before any variable")


def test_separator_after_a_variable() -> None:
    _fails('A 1 1\n<SEPARATOR> ";"', r"line 2: <SEPARATOR> must come before the first variable")


def test_separator_without_value() -> None:
    _fails("<SEPARATOR>\nA 1", r"line 1: <SEPARATOR> needs one value")


def test_declaration_without_width() -> None:
    _fails('<SEPARATOR> ";"\nA', r"line 2: variable 'A' needs 'NAME WIDTH \[MISSING1")


def test_fixed_declaration_needs_start_and_width() -> None:
    _fails("A 1", r"line 1: variable 'A' needs 'NAME START WIDTH")


def test_width_not_a_number() -> None:
    _fails("A 1 x", r"line 1: variable 'A': start and width must be whole numbers above 0")
    _fails('<SEPARATOR> ";"\nA 0', r"line 2: variable 'A': width must be whole numbers above 0")


def test_missing_value_too_long() -> None:
    _fails("A 1 2 999", r"line 1: variable 'A': missing value '999' is longer than width 2")


def test_too_many_missing_values() -> None:
    _fails("A 1 2 8 9 7", r"line 1: variable 'A' has 3 missing values; at most 2")
    _fails("A 1 2 8 9\n  <MISSING> 7", r"line 1: variable 'A' has 3 missing values; at most 2")


def test_hierlevels_must_add_up_to_the_width() -> None:
    _fails("A 1 4\n  <HIERLEVELS> 1 2", r"line 2: <HIERLEVELS> of 'A' add up to 3 digits but")


def test_decimals_must_be_a_number() -> None:
    _fails("A 1 4\n  <NUMERIC>\n  <DECIMALS> two", r"line 3: <DECIMALS> of 'A' needs whole numbers")


def test_tag_value_count() -> None:
    _fails("A 1 4\n  <TOTCODE>", r"line 2: <TOTCODE> of 'A' takes 1 value, got 0")
    _fails("A 1 4\n  <RECODEABLE> yes", r"line 2: <RECODEABLE> of 'A' takes no value, got 1")


def test_variable_declared_twice() -> None:
    _fails("A 1 1\nA 2 1", r"line 2: variable 'A' is declared twice")


def test_two_record_keys() -> None:
    _fails("K 1 1\n <RECORDKEY>\nL 2 1\n <RECORDKEY>", r"2 variables are <RECORDKEY> \(K, L\)")


def test_unbalanced_quote() -> None:
    _fails('A 1 1\n  <TOTCODE> "Total', r"line 2: unbalanced quote in '\"Total'")


def test_not_a_tag() -> None:
    _fails("A 1 1\n  <TOTCODE", r"line 2: '<TOTCODE' is not a tag")


def test_no_variables() -> None:
    _fails('<SEPARATOR> ";"\n\n', r"m\.rda, no variables declared")


def test_every_problem_is_reported_at_once() -> None:
    error = _fails(
        "<TOTCODE> x\nA 1\nB 1 1\n  <DECIMALS> x\nB 2 1",
        r"m\.rda has 4 problems: line 1: .*; line 2: .*; line 4: .*; line 5: ",
    )
    assert len(error.problems) == 4


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(RdaError, match=r"nope\.rda, file not found; check the path"):
        read_rda(tmp_path / "nope.rda")


def test_undecodable_bytes(tmp_path: Path) -> None:
    path = tmp_path / "m.rda"
    path.write_bytes(b'A 1 1\n  <TOTCODE> "Gesamt\xfc"\n')
    with pytest.raises(RdaError, match=r"m\.rda, line 2: bytes are not valid utf-8"):
        read_rda(path)
    assert read_rda(path, encoding="latin-1").variables[0].total_code == "Gesamt\u00fc"


def test_crlf_and_bom(tmp_path: Path) -> None:
    path = tmp_path / "m.rda"
    path.write_bytes(b'\xef\xbb\xbf   <SEPARATOR> ";"\r\nA 2\r\n    <RECODEABLE>\r\n')
    meta = read_rda(path)
    assert isinstance(meta, RdaMetadata)
    assert meta.separator == ";" and meta.variable("A").recodeable


def test_docstring_examples() -> None:
    assert doctest.testmod(rda_module).failed == 0

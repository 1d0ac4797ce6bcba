"""Tests for cubeguard.io.hrc: tau-ARGUS hierarchy files, real and hand-made."""

from __future__ import annotations

import doctest
from pathlib import Path

import pyarrow as pa
import pytest

import cubeguard.io.hrc as hrc_module
from cubeguard.errors import CubeguardError
from cubeguard.io.csv_input import read_tau_microdata
from cubeguard.io.hrc import (
    HrcCode,
    HrcError,
    format_hrc,
    hrc_leaves,
    parse_hrc,
    read_hrc,
    write_hrc,
)

DATA = Path(__file__).resolve().parents[3] / "shared" / "external" / "censusprotection"
HIER = DATA / "hierarchies"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"census test data not found at {DATA}")

# variable -> (file, codes including the total, leaves)
REAL = {
    "NUTS3": ("nuts3_hierarchy.hrc", 48, 35),
    "LAU2": ("lau2_hierarchy.hrc", 1620, 1572),
    "COC.M": ("coc_m_hierarchy.hrc", 11, 8),
    "POB.M": ("pob_m_hierarchy.hrc", 11, 8),
}


def _write(tmp_path: Path, text: str, name: str = "h.hrc") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode())
    return path


def _assert_tree(codes: list[HrcCode], total: str = "Total") -> None:
    assert codes[0] == HrcCode(total, None, 0)
    depth_of = {codes[0].code: 0}
    for c in codes[1:]:
        assert c.parent in depth_of, f"{c} has a parent not listed before it"
        assert c.depth == depth_of[c.parent] + 1
        assert c.code not in depth_of
        depth_of[c.code] = c.depth


@pytest.fixture(scope="module")
def tau_codes() -> dict[str, set[str]]:
    """The distinct codes of each variable in the 10k tau-ARGUS file."""
    meta, batches = read_tau_microdata(DATA / "test_data_10k_tau.csv.gz", DATA / "test_data_10k_tau.rda")
    table = pa.Table.from_batches(list(batches))
    return {name: set(table.column(name).cast(pa.string()).to_pylist()) for name in meta.names}


@needs_data
@pytest.mark.parametrize("variable", sorted(REAL))
def test_real_hierarchies_parse_to_consistent_trees(variable: str) -> None:
    file, n_codes, n_leaves = REAL[variable]
    codes = read_hrc(HIER / file)
    assert len(codes) == n_codes
    assert len(hrc_leaves(codes)) == n_leaves
    _assert_tree(codes)


@needs_data
@pytest.mark.parametrize("variable", sorted(REAL))
def test_real_hierarchy_leaves_are_exactly_the_codes_in_the_tau_data(
    variable: str, tau_codes: dict[str, set[str]]
) -> None:
    codes = read_hrc(HIER / REAL[variable][0])
    assert set(hrc_leaves(codes)) == tau_codes[variable]


@needs_data
def test_nuts3_hierarchy_structure() -> None:
    codes = {c.code: c for c in read_hrc(HIER / "nuts3_hierarchy.hrc")}
    assert codes["1"] == HrcCode("1", "Total", 1)
    assert codes["11"] == HrcCode("11", "1", 2)
    assert codes["111"] == HrcCode("111", "11", 3)
    assert codes["130"].parent == "13"


@needs_data
def test_padded_codes_are_stripped_by_default() -> None:
    lau2 = read_hrc(HIER / "lau2_hierarchy.hrc")  # written "@      11", "@@    111"
    assert lau2[2] == HrcCode("11", "1", 2)
    assert lau2[3] == HrcCode("111", "11", 3)
    coc = read_hrc(HIER / "coc_m_hierarchy.hrc")  # written "  1", "@ 21", "@@221"
    assert [c.code for c in coc] == ["Total", "1", "2", "21", "22", *map(str, range(221, 227))]


@needs_data
def test_age_hierarchy_clashes_when_stripped() -> None:
    # Groups "1".."6" and "11".."64" are written unpadded, ages "  1", " 11" padded to 3:
    # tau-ARGUS tells them apart, stripped codes do not.
    with pytest.raises(HrcError, match=r"line 4: code '1' already appears on line 1") as info:
        read_hrc(HIER / "age_h_hierarchy.hrc")
    assert len(info.value.problems) == 27
    assert "pass strip=False" in str(info.value)
    assert str(HIER / "age_h_hierarchy.hrc") in str(info.value)


@needs_data
def test_age_hierarchy_with_tau_argus_padding(tau_codes: dict[str, set[str]]) -> None:
    codes = read_hrc(HIER / "age_h_hierarchy.hrc", strip=False)
    _assert_tree(codes)
    assert len(codes) == 129  # 128 lines (one blank at the end) + total
    assert codes[1:4] == [HrcCode("1", "Total", 1), HrcCode("11", "1", 2), HrcCode("  0", "11", 3)]
    # tau-ARGUS right-justifies data codes to the width (3) before matching basic codes
    assert set(hrc_leaves(codes)) == {code.rjust(3) for code in tau_codes["AGE.H"]}


@needs_data
def test_lau2_hierarchy_lacks_codes_of_the_100k_file() -> None:
    from cubeguard.io.csv_input import iter_csv_batches

    leaves = set(hrc_leaves(read_hrc(HIER / "lau2_hierarchy.hrc")))
    data: set[str] = set()
    for batch in iter_csv_batches(DATA / "test_data_100k.csv.gz"):
        data.update(batch.column("LAU2").dictionary.to_pylist())
    assert len(data) == 2067
    assert len(data - leaves) == 497  # the hierarchy was made for the 10k file
    assert leaves - data == {"113010", "124097"}


def test_parse_example_and_custom_total() -> None:
    codes = parse_hrc(["A", "@A1", "@@A11", "@A2", "B"], total_code="T")
    assert codes == [
        HrcCode("T", None, 0),
        HrcCode("A", "T", 1),
        HrcCode("A1", "A", 2),
        HrcCode("A11", "A1", 3),
        HrcCode("A2", "A", 2),
        HrcCode("B", "T", 1),
    ]
    assert hrc_leaves(codes) == ["A11", "A2", "B"]


def test_crlf_bom_blank_lines_and_trailing_spaces(tmp_path: Path) -> None:
    path = tmp_path / "h.hrc"
    path.write_bytes(b"\xef\xbb\xbfA  \r\n\r\n@A1\t\r\n   \r\nB\r\n\r\n")
    assert read_hrc(path) == [
        HrcCode("Total", None, 0),
        HrcCode("A", "Total", 1),
        HrcCode("A1", "A", 2),
        HrcCode("B", "Total", 1),
    ]


@pytest.mark.parametrize("lead", ["#", "..", "@@"])
def test_other_lead_strings(lead: str) -> None:
    codes = parse_hrc(["A", f"{lead}A1", f"{lead * 2}A11"], lead=lead)
    assert [c.depth for c in codes] == [0, 1, 2, 3]


def test_jump_of_two_levels_names_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "A\n@A1\n@@@A111\n")
    with pytest.raises(HrcError, match=r"h\.hrc, line 3: code 'A111' is 2 levels deeper") as info:
        read_hrc(path)
    assert isinstance(info.value, CubeguardError)


def test_first_code_may_not_be_indented(tmp_path: Path) -> None:
    with pytest.raises(HrcError, match=r"line 1: code 'A' is 2 levels deeper"):
        read_hrc(_write(tmp_path, "@A\nB\n"))


def test_lead_without_code(tmp_path: Path) -> None:
    with pytest.raises(HrcError, match=r"line 2: 2 lead string\(s\) '@' but no code"):
        read_hrc(_write(tmp_path, "A\n@@  \n"))


def test_duplicate_code(tmp_path: Path) -> None:
    with pytest.raises(HrcError, match=r"line 3: code 'A1' already appears on line 2; give"):
        read_hrc(_write(tmp_path, "A\n@A1\n@A1\n"))


def test_duplicate_differing_only_by_padding_hints_at_strip(tmp_path: Path) -> None:
    with pytest.raises(HrcError, match=r"written ' 1' there.*pass strip=False"):
        read_hrc(_write(tmp_path, "2\n@ 1\n1\n"))


def test_total_code_in_file(tmp_path: Path) -> None:
    with pytest.raises(HrcError, match=r"line 2: code 'Total' is the total code"):
        read_hrc(_write(tmp_path, "A\nTotal\n"))


@pytest.mark.parametrize("line", ["@ @A1", " @A1", "@A@1"])
def test_bad_lead_characters(tmp_path: Path, line: str) -> None:
    with pytest.raises(HrcError, match=r"line 2: code .* contains the lead character '@'"):
        read_hrc(_write(tmp_path, f"A\n{line}\n"))


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    path = _write(tmp_path, "A\n@@A11\n@\nA\n@ @x\n")
    with pytest.raises(HrcError, match=r"h\.hrc has 4 problems: line 2: .*; line 3: .*") as info:
        read_hrc(path)
    assert [p.split(":")[0] for p in info.value.problems] == [
        "line 2",
        "line 3",
        "line 4",
        "line 5",
    ]


def test_many_problems_are_capped_in_the_message(tmp_path: Path) -> None:
    path = _write(tmp_path, "A\n" + "A\n" * 8)
    with pytest.raises(HrcError, match=r"has 8 problems: .*; and 3 more$") as info:
        read_hrc(path)
    assert len(info.value.problems) == 8


def test_empty_file(tmp_path: Path) -> None:
    with pytest.raises(HrcError, match=r"h\.hrc, no codes found"):
        read_hrc(_write(tmp_path, "\n  \n"))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(HrcError, match=r"nope\.hrc, file not found; check the path"):
        read_hrc(tmp_path / "nope.hrc")


def test_undecodable_bytes(tmp_path: Path) -> None:
    path = tmp_path / "h.hrc"
    path.write_bytes(b"A\n@A\xe91\n")
    with pytest.raises(HrcError, match=r"line 2: byte b'\\xe9' at column 3 is not valid utf-8"):
        read_hrc(path)
    assert [c.code for c in read_hrc(path, encoding="latin-1")] == ["Total", "A", "A\u00e91"]


@pytest.mark.parametrize("lead", ["", " @", "@ "])
def test_bad_lead_argument(lead: str) -> None:
    with pytest.raises(HrcError, match=r"lead string .* must be non-empty and hold no spaces"):
        parse_hrc(["A"], lead=lead)


def test_empty_total_code() -> None:
    with pytest.raises(HrcError, match=r"the total code must not be empty"):
        parse_hrc(["A"], total_code=" ")


@needs_data
@pytest.mark.parametrize(
    ("file", "strip"),
    [(f, True) for f, _, _ in REAL.values()] + [("age_h_hierarchy.hrc", False)],
)
def test_write_then_read_gives_the_same_codes(tmp_path: Path, file: str, strip: bool) -> None:
    codes = read_hrc(HIER / file, strip=strip)
    out = tmp_path / file
    write_hrc(codes, out, newline="\r\n")
    assert read_hrc(out, strip=strip) == codes
    assert out.read_bytes().endswith(b"\r\n")


def test_format_hrc_without_the_total() -> None:
    codes = parse_hrc(["A", "@A1", "B"])
    assert format_hrc(codes[1:], lead="#") == "A\n#A1\nB\n"


def test_write_rejects_a_wrong_parent(tmp_path: Path) -> None:
    codes = [
        HrcCode("T", None, 0),
        HrcCode("A", "T", 1),
        HrcCode("B", "T", 1),
        HrcCode("A1", "A", 2),
    ]
    with pytest.raises(HrcError, match=r"codes\[3\] \('A1'\): parent 'A' is not the latest code"):
        write_hrc(codes, tmp_path / "out.hrc")
    assert not (tmp_path / "out.hrc").exists()


def test_write_rejects_a_depth_jump_and_bad_codes() -> None:
    codes = [HrcCode("A", "T", 1), HrcCode("A11", "A1", 3), HrcCode("@x", "A", 2)]
    with pytest.raises(HrcError, match=r"has 2 problems: codes\[1\] \('A11'\): depth 3 must be"):
        format_hrc(codes)


def test_docstring_examples() -> None:
    assert doctest.testmod(hrc_module).failed == 0

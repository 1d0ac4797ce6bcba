"""Codes from a tau-ARGUS .hrc file in a release config: padding stripped, groups and leaves kept apart."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cubeguard.config import load_release
from tests.conftest import TINY_CONFIG, load_problems
from tests.conftest import TINY_GEO_CODES as GEO_CODES

COURSE = Path(__file__).resolve().parents[2] / "configs" / "censusprotection.yaml"
HIER = Path(__file__).resolve().parents[3] / "shared" / "external" / "censusprotection" / "hierarchies"
# Groups "1" and "2" are written unpadded, their leaves right-justified to 3, as in the course AGE file.
PADDED = "1\r\n@  1\r\n@  2\r\n2\r\n@  3\r\n"


def _config(folder: Path, hrc: str, codes: str = "{hrc: geo.hrc}") -> str:
    (folder / "geo.hrc").write_text(hrc, newline="")
    assert GEO_CODES in TINY_CONFIG
    return TINY_CONFIG.replace(GEO_CODES, f"    codes: {codes}\n")


def test_a_group_and_a_leaf_equal_once_stripped_are_an_error_naming_both_lines(tmp_path: Path) -> None:
    problems = load_problems(tmp_path, _config(tmp_path, PADDED))
    assert len(problems) == 1 and re.fullmatch(
        r"variables\.GEO\.codes \(c\.yaml line \d+\): group '1' \(geo\.hrc line 1\) and leaf '  1' \(geo\.hrc "
        r"line 2\) are both '1' once the padding is stripped, and so are 1 more pair\(s\) of codes; set "
        r'codes\.group_prefix \(e\.g\. "G"\) to put a prefix before every group code and keep groups and leaves apart',
        problems[0],
    ), problems


def test_the_group_prefix_keeps_them_apart_and_the_file_spelling_is_kept(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(_config(tmp_path, PADDED, "{hrc: geo.hrc, group_prefix: G}"))
    release = load_release(tmp_path / "c.yaml")
    geo = release.config.variables["GEO"].codes
    assert [(c.code, c.parent, c.values) for c in geo] == [
        ("Total", None, None),
        ("G1", "Total", None),
        ("1", "G1", None),  # a leaf matches the raw value "1", unpadded
        ("2", "G1", None),
        ("G2", "Total", None),
        ("3", "G2", None),
    ]
    assert release.breakdowns["GEO.1"].codes == ["Total", "G1", "G2"]
    assert release.hrc_written["GEO"] == {"G1": "1", "1": "  1", "2": "  2", "G2": "2", "3": "  3"}
    assert tmp_path / "geo.hrc" in release.sources


def test_two_leaves_equal_once_stripped_must_be_renamed_in_the_file(tmp_path: Path) -> None:
    problems = load_problems(tmp_path, _config(tmp_path, "A\n@ 1\nB\n@  1\n", "{hrc: geo.hrc, group_prefix: G}"))
    assert re.search(
        r"variables\.GEO\.codes \(c\.yaml line \d+\): leaf ' 1' \(geo\.hrc line 2\) and leaf '  1' \(geo\.hrc line "
        r"4\) are both '1' once the padding is stripped; rename one of them in the \.hrc file \(group_prefix only",
        problems[0],
    ), problems


def test_a_prefix_that_makes_a_group_equal_a_leaf_must_change(tmp_path: Path) -> None:
    problems = load_problems(tmp_path, _config(tmp_path, "1\n@ 11\n@ 12\n", "{hrc: geo.hrc, group_prefix: '1'}"))
    assert re.search(
        r"group '1' \(geo\.hrc line 1\) and leaf ' 11' \(geo\.hrc line 2\) are both '11' once the padding is "
        r"stripped; set codes\.group_prefix to another prefix than '1'",
        problems[0],
    ), problems


def test_a_code_equal_to_the_total_once_stripped_needs_another_total(tmp_path: Path) -> None:
    problems = load_problems(tmp_path, _config(tmp_path, "A\n@ T\n", "{hrc: geo.hrc, total: T}"))
    assert re.search(
        r"the total 'T' \(codes\.total\) and leaf ' T' \(geo\.hrc line 2\) are both 'T' once the padding is "
        r"stripped; set codes\.total to a code the file does not use",
        problems[0],
    ), problems


def test_a_group_prefix_with_a_blank_is_refused_at_its_key(tmp_path: Path) -> None:
    problems = load_problems(tmp_path, _config(tmp_path, PADDED, "{hrc: geo.hrc, group_prefix: 'G '}"))
    assert len(problems) == 1 and re.fullmatch(
        r"variables\.GEO\.codes\.group_prefix \(c\.yaml line \d+\): a group prefix must hold no blanks, as codes "
        r"are stripped of them \(e\.g\. G\); change the value",
        problems[0],
    ), problems


@pytest.mark.skipif(not HIER.is_dir(), reason="shared course data not present")
def test_the_course_age_hierarchy_loads_with_distinct_clean_codes() -> None:
    release = load_release(COURSE)
    codes = [c.code for c in release.config.variables["AGE"].codes]
    assert len(codes) == len(set(codes)) == 129  # 128 codes of age_h_hierarchy.hrc and the total
    assert all(c == c.strip() for c in codes)
    assert release.breakdowns["AGE.L"].codes == ["Total", "G1", "G2", "G3", "G4", "G5", "G6"]
    age_h = release.breakdowns["AGE.H"]
    assert age_h.bottom_codes == [str(age) for age in range(101)]  # single years, the raw values
    assert age_h.parents[age_h.codes.index("11")] == "G13" and age_h.parents[age_h.codes.index("G11")] == "G1"
    assert release.hrc_written["AGE"]["G11"] == "11" and release.hrc_written["AGE"]["11"] == " 11"
    coc = release.breakdowns["COC.M"].codes  # no group and leaf collide: no prefix needed
    assert coc == ["Total", "1", "2", "21", "22", "221", "222", "223", "224", "225", "226"]

"""``output.total_code``: one code for the total of every variable, renamed when the config loads."""

from __future__ import annotations

import re
from pathlib import Path

from cubeguard.config import load_release
from tests.conftest import TINY_CONFIG, load_problems

# TINY_CONFIG's totals are "0" (SEX, GEO) and "T" (AGE); GEO.X lists its codes, the total among them.
CONFIG = TINY_CONFIG.replace(
    "breakdowns: {GEO.1: {depth: 1}, GEO.2: {}}",
    'breakdowns: {GEO.1: {depth: 1}, GEO.2: {}, GEO.X: {codes: ["0", "A", "B"]}}',
)


def _with_total(total: str) -> str:
    assert "output: {folder: out}" in CONFIG and "GEO.X" in CONFIG
    return CONFIG.replace("output: {folder: out}", f"output: {{folder: out, total_code: {total!r}}}")


def test_every_root_is_renamed_with_its_children_and_listed_breakdowns(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(_with_total("_T"))
    release = load_release(tmp_path / "c.yaml")
    assert {bid: bd.codes[0] for bid, bd in release.breakdowns.items()} == dict.fromkeys(
        ["SEX", "AGE.L", "AGE.M", "GEO.1", "GEO.2", "GEO.X"], "_T"
    )
    assert release.breakdowns["SEX"].codes == ["_T", "1", "2"]
    assert release.breakdowns["GEO.X"].codes == ["_T", "A", "B"]
    assert release.breakdowns["AGE.M"].parents == ["", "_T", "Y_LT15", "Y_LT15", "_T", "_T"]
    assert release.breakdowns["AGE.M"].labels[0] == "Total"  # the label stays
    geo = release.config.variables["GEO"].codes
    assert [(c.code, c.parent) for c in geo[:3]] == [("_T", None), ("A", "_T"), ("A1", "A")]


def test_a_total_code_some_roots_already_have_renames_the_others(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(_with_total("0"))
    release = load_release(tmp_path / "c.yaml")
    assert [release.breakdowns[b].codes[0] for b in ("SEX", "AGE.M", "GEO.2")] == ["0", "0", "0"]


def test_without_total_code_each_classification_keeps_its_root(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(CONFIG)
    release = load_release(tmp_path / "c.yaml")
    assert [release.breakdowns[b].codes[0] for b in ("SEX", "AGE.M", "GEO.2")] == ["0", "T", "0"]


def test_a_total_code_that_is_another_code_is_an_error_naming_both_keys(tmp_path: Path) -> None:
    text = _with_total("A")
    code_line = text.splitlines().index('      - {code: "A", parent: "0"}') + 1
    output_line = next(n for n, line in enumerate(text.splitlines(), 1) if line.startswith("output:"))
    problems = load_problems(tmp_path, text)
    assert problems == [
        f"output.total_code (c.yaml line {output_line}): 'A' is already a code of variable GEO, at "
        f"variables.GEO.codes[1] (c.yaml line {code_line}); choose a total code no variable uses, or rename that code"
    ]


def test_a_blank_total_code_is_refused(tmp_path: Path) -> None:
    problems = load_problems(tmp_path, _with_total("_ T"))
    assert len(problems) == 1 and re.fullmatch(
        r"output\.total_code \(c\.yaml line \d+\): the total code '_ T' holds blanks; write it without them \(e\.g\. _T\)",
        problems[0],
    ), problems

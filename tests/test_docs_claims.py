"""Every figure of the README and the documentation site comes from a file: a benchmark's results,
a test, a config or the code (issue 37)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs_claims import ROOT, check, dangling_paths, figures, pages


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_figure_is_found_in_a_source_it_names(page: Path) -> None:
    problems = check(page.read_text())
    listed = "\n".join(f"{page.relative_to(ROOT)}:{p.line}: {p.figure}: {p.why}" for p in problems)
    assert not problems, f"{len(problems)} figures without a source:\n{listed}"


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_project_path_a_page_names_exists(page: Path) -> None:
    assert dangling_paths(page.read_text()) == []


def test_a_path_that_does_not_exist_is_found() -> None:
    text = "see `cubeguard/methods/cell_key/method.py`, `tests/bad_inputs.py` and `benchmarks/results/*.md`"
    assert dangling_paths(text) == ["tests/bad_inputs.py"]


def test_figures_are_numbers_with_units_or_separators_outside_code() -> None:
    text = "took 9.09 s and 2.3 GB, 48.6 % (or 47.7%), 1,119,662 cells, 8.6-8.9 s, 15x; `60 s` p50 Table 5.21 (2009) 3 steps, its 1s and 2s"
    assert figures(text) == ["1,119,662", "9.09", "2.3", "48.6", "47.7", "8.6", "8.9", "15"]


def test_a_figure_without_a_source_fails() -> None:
    assert [p.figure for p in check("The release took 78.9 s.\n")] == ["78.9"]


def test_a_figure_its_source_does_not_hold_fails() -> None:
    # benchmarks/results/release.md holds 9.09 s but not 9.07 s, nor 0.9 (only inside 9.09)
    text = "The release took 9.07 s and 0.9 s (`benchmarks/results/release.md`).\n"
    assert [p.figure for p in check(text)] == ["9.07", "0.9"]
    assert check("The release took 9.09 s (`benchmarks/results/release.md`).\n") == []


def test_a_table_row_or_list_item_may_take_its_source_from_the_lead_in() -> None:
    text = "From `benchmarks/results/release.md`:\n\n- took 9.09 s\n\n| a | b |\n| --- | --- |\n| x | 9.09 s |\n"
    assert check(text) == []
    assert [p.figure for p in check("Intro.\n\n- took 9.09 s\n")] == ["9.09"]

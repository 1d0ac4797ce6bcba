"""Config-time checks of ``hypercubes[i].sums``: one test per message, before any data is read."""

from __future__ import annotations

from pathlib import Path

from cubeguard.config import load_release
from tests.conftest import TINY_CONFIG, load_problems
from tests.tables_release import with_magnitudes

C3 = "  - {id: hh, population: households, breakdowns: [GEO.2]}\n"


def _with_cube(config: str, cube: str) -> str:
    return config.replace(C3, C3 + f"  - {cube}\n")


def test_a_cube_sums_a_column_the_cell_key_step_perturbs(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(_with_cube(with_magnitudes(TINY_CONFIG), "{id: c3, breakdowns: [GEO.2, SEX], sums: [age]}"))
    assert load_release(path).cube("c3").sums == ["age"]
    assert load_release(path).cube("c1").sums == []


def test_a_sum_no_step_perturbs_is_refused(tmp_path: Path) -> None:
    text = _with_cube(TINY_CONFIG, "{id: c3, breakdowns: [GEO.2, SEX], sums: [age]}")
    assert load_problems(tmp_path, text) == [
        "hypercubes[3].sums[0] (c.yaml line 42): cube c3 would publish exact sums of 'age', which give the counts "
        "back; only the cell key method perturbs sums: declare the column in steps[0].magnitudes.age, or remove it "
        "from sums"
    ]


def test_a_sum_under_another_method_is_refused(tmp_path: Path) -> None:
    text = _with_cube(TINY_CONFIG, "{id: c3, breakdowns: [GEO.2, SEX], sums: [age]}").replace(
        "{method: cell_key, D: 5, V: 3, js: 2}", "{method: conventional_rounding, base: 3}"
    )
    problems = load_problems(tmp_path, text)
    assert len(problems) == 1
    assert "declare the column in the magnitudes of a cell_key step that protects it" in problems[0]


def test_a_sum_of_a_column_the_cube_is_broken_down_by_is_refused(tmp_path: Path) -> None:
    text = _with_cube(with_magnitudes(TINY_CONFIG), "{id: c3, breakdowns: [GEO.2, AGE.L], sums: [age]}")
    assert load_problems(tmp_path, text) == [
        "hypercubes[3].sums[0] (c.yaml line 42): cube c3 is broken down by AGE.L, which reads column 'age', so "
        "its sums would give the counts back (in one-year ages, count = sum / age); remove 'age' from sums or sum "
        "it in a cube without that breakdown"
    ]


def test_a_column_summed_twice_is_refused(tmp_path: Path) -> None:
    text = _with_cube(with_magnitudes(TINY_CONFIG), "{id: c3, breakdowns: [GEO.2, SEX], sums: [age, age]}")
    assert load_problems(tmp_path, text) == [
        "hypercubes[3] (c.yaml line 42): column 'age' is listed twice in sums; list each column once; change the value"
    ]


def test_mu_c_is_refused_since_no_cell_is_marked_sensitive(tmp_path: Path) -> None:
    text = with_magnitudes(TINY_CONFIG).replace("ptable_file:", "mu_c: 2.5, ptable_file:")
    (problem,) = load_problems(tmp_path, text)
    assert problem.startswith("steps[0].magnitudes.age.mu_c (c.yaml line ")
    assert problem.endswith(
        "mu_c protects sensitive cells, and cubeguard marks no cell sensitive (there is no sensitivity rule); "
        "remove mu_c or set it to 0"
    )

"""The ``tables`` section: each mistake is found when the config loads, located, saying what to change."""

from __future__ import annotations

from pathlib import Path

import pytest

from cubeguard.config import load_release
from tests.conftest import TINY_CONFIG as PLAIN
from tests.conftest import load_problems
from tests.tables_release import TABLES, with_magnitudes

TINY_CONFIG = with_magnitudes(PLAIN)  # the tables' means need the sums of age perturbed

# A second classification of the age column whose bands cross AGE's (0-9 against 0-4 and 5-14).
AGE10 = """\
  AGE10:
    column: age
    dtype: integer
    codes:
      - {code: T}
      - {code: Y0-9, parent: T, range: [0, 9]}
      - {code: Y10-120, parent: T, range: [10, 120]}
    breakdowns: {AGE10: {}}
"""


_problems = load_problems


def test_a_tables_section_loads_with_its_defaults(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(TINY_CONFIG + TABLES)
    spec = load_release(path).config.tables
    assert spec is not None and spec.max_dimensions == 3 and spec.small_count == 3 and spec.admin_token_env is None


def test_an_unknown_or_repeated_breakdown_is_named(tmp_path: Path) -> None:
    text = TINY_CONFIG + TABLES.replace("[GEO.1, GEO.2, SEX,", "[GEO.1, GEO.9, SEX, SEX,")
    problems = _problems(tmp_path, text)
    assert problems == [
        "tables.breakdowns[1] (c.yaml line 47): unknown breakdown 'GEO.9'; offer breakdowns declared under variables",
        "tables.breakdowns[3] (c.yaml line 47): breakdown 'SEX' is listed twice; list each once",
    ]


def test_an_unknown_population_is_named(tmp_path: Path) -> None:
    (p,) = _problems(tmp_path, TINY_CONFIG + TABLES.replace("[total, households]", "[total, families]"))
    assert p == (
        "tables.populations[1] (c.yaml line 48): unknown population 'families'; offer populations declared under populations"
    )


def test_crossing_categories_of_one_column_are_refused_against_differencing(tmp_path: Path) -> None:
    text = TINY_CONFIG.replace("  GEO:\n", AGE10 + "  GEO:\n") + TABLES.replace("AGE.M]", "AGE.M, AGE10]")
    first, second = _problems(tmp_path, text)  # one per level of AGE that crosses AGE10
    assert first.startswith("tables.breakdowns (c.yaml line 55): AGE.L 'Y_LT15' and AGE10 'Y10-120' overlap without")
    assert second.startswith("tables.breakdowns (c.yaml line 55): AGE.M 'Y_LT15' and AGE10 'Y10-120' overlap without")
    assert first.endswith("offer breakdowns of only one of the two variables")


def test_nested_classifications_of_one_column_are_allowed(tmp_path: Path) -> None:
    nested = AGE10.replace("Y0-9, parent: T, range: [0, 9]", "Y0-14, parent: T, range: [0, 14]").replace(
        "Y10-120, parent: T, range: [10, 120]", "Y15-120, parent: T, range: [15, 120]"
    )
    path = tmp_path / "c.yaml"
    path.write_text(TINY_CONFIG.replace("  GEO:\n", nested + "  GEO:\n") + TABLES.replace("AGE.M]", "AGE.M, AGE10]"))
    assert "AGE10" in load_release(path).config.tables.breakdowns  # type: ignore[union-attr]


def test_tables_need_the_release_protected_by_one_cell_key_step_alone(tmp_path: Path) -> None:
    steps = "  - {method: cell_key, D: 5, V: 3, js: 2}\n"
    text = with_magnitudes(PLAIN.replace(steps, steps + "  - {method: conventional_rounding, base: 3, cubes: [c2]}\n"))
    (p,) = _problems(tmp_path, text + TABLES)
    assert p.startswith("tables (c.yaml line 47): flexible tables are protected with the release's step")
    assert p.endswith("a cell_key step or a random_rounding step with margins: independent and no seed")


@pytest.mark.parametrize(
    ("step", "allowed"),
    [
        ("{method: random_rounding, base: 3}", True),
        ("{method: random_rounding, base: 3, margins: summed}", False),
        ("{method: random_rounding, base: 3, seed: 5}", False),
    ],
)
def test_random_rounding_serves_tables_only_when_a_cell_rounds_alike_in_every_table(
    tmp_path: Path, step: str, allowed: bool
) -> None:
    text = PLAIN.replace("{method: cell_key, D: 5, V: 3, js: 2}", step) + TABLES
    problems = [p for p in load_problems(tmp_path, text, missing_ok=True) if p.startswith("tables ")]
    assert bool(problems) != allowed


def test_the_admin_token_is_named_by_its_environment_variable_only(tmp_path: Path) -> None:
    (p,) = _problems(tmp_path, TINY_CONFIG + TABLES + "  admin_token_env: s3cret token\n")
    assert p.startswith("tables.admin_token_env (c.yaml line 51):")
    assert "s3cret" not in p

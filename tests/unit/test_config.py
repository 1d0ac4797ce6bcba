"""Release configs: good ones load; each kind of mistake gives a located, actionable message."""

from __future__ import annotations

from pathlib import Path

import pytest

from cubeguard.config import ConfigError, load_release
from tests.conftest import TINY_CONFIG


def _problems(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_release(path)
    return info.value.problems


def test_tiny_config_loads_and_resolves_breakdowns(tiny_release: Path) -> None:
    rel = load_release(tiny_release)
    age = rel.breakdowns["AGE.M"]
    assert age.codes == ["T", "Y_LT15", "Y0-4", "Y5-14", "Y15-64", "Y_GE65"]
    assert age.bottom_codes == ["Y0-4", "Y5-14", "Y15-64", "Y_GE65"]
    assert rel.breakdowns["AGE.L"].bottom_codes == ["Y_LT15", "Y15-64", "Y_GE65"]
    assert rel.config.input.microdata == (tiny_release.parent / "data" / "persons.parquet").resolve()
    assert len(rel.config_hash) == 64


def test_unknown_key_names_path_and_line(tmp_path: Path) -> None:
    text = TINY_CONFIG.replace("    column: sex\n", "    column: sex\n    colour: red\n")
    (p,) = _problems(tmp_path, text)
    assert p.startswith("variables.SEX.colour (c.yaml line 9): unknown key 'colour'")


def test_unknown_breakdown_suggests_close_names(tmp_path: Path) -> None:
    text = TINY_CONFIG.replace("[GEO.1, AGE.L]", "[GEO.1, AGE.Q]")
    (p,) = _problems(tmp_path, text)
    assert p.startswith("hypercubes[1].breakdowns[1] (c.yaml line 40): unknown breakdown 'AGE.Q'; did you mean")
    assert "AGE.L" in p


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    text = TINY_CONFIG.replace("range: [5, 14]", "range: [4, 14]").replace("population: households", "population: hhs")
    problems = _problems(tmp_path, text)
    assert any("raw value 4 already belongs to leaf 'Y0-4'" in p for p in problems)
    assert any(p.startswith("hypercubes[2].population") and "known: households, total" in p for p in problems)


def test_missing_required_key(tmp_path: Path) -> None:
    (p,) = _problems(tmp_path, TINY_CONFIG.replace("output: {folder: out}\n", ""))
    assert p == "output (c.yaml line 1): this required key is missing; add it"


def test_wrong_schema_version(tmp_path: Path) -> None:
    problems = _problems(tmp_path, TINY_CONFIG.replace("schema_version: 1", "schema_version: 7"))
    assert problems[0].startswith("schema_version (c.yaml line 1): this cubeguard reads schema_version 1")


def test_parent_must_come_first(tmp_path: Path) -> None:
    text = TINY_CONFIG.replace('- {code: "B1", parent: "B"}', '- {code: "B1", parent: "C"}')
    (p,) = _problems(tmp_path, text)
    assert "parent 'C' is not listed before 'B1'; list parents first" in p
    assert "variables.GEO.codes[5].parent" in p


def test_incomplete_explicit_breakdown(tmp_path: Path) -> None:
    text = TINY_CONFIG.replace("GEO.2: {}", 'GEO.2: {codes: ["0", "A", "A1", "B"]}')
    (p,) = _problems(tmp_path, text)
    assert "code 'A' has selected children but leaf 'A2' lies under none of them" in p


def test_two_levels_of_one_variable_in_a_cube(tmp_path: Path) -> None:
    (p,) = _problems(tmp_path, TINY_CONFIG.replace("[GEO.1, AGE.L]", "[GEO.1, GEO.2]"))
    assert "two breakdowns read column 'region'" in p


def test_yaml_syntax_error_names_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("schema_version: 1\nname: [unclosed\n")
    with pytest.raises(Exception, match=r"c.yaml line \d+: not valid YAML"):
        load_release(path)


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="no such file; check the path"):
        load_release(tmp_path / "absent.yaml")


def test_variable_from_classification_file(tmp_path: Path) -> None:
    (tmp_path / "sex.yaml").write_text(
        'column: sex\ncodes:\n  - {code: "0"}\n  - {code: "1", parent: "0"}\n  - {code: "2", parent: "0"}\n'
        "breakdowns: {SEX: {}}\n"
    )
    start = TINY_CONFIG.index("  SEX:")
    end = TINY_CONFIG.index("  AGE:")
    text = TINY_CONFIG[:start] + "  SEX: {file: sex.yaml}\n" + TINY_CONFIG[end:]
    path = tmp_path / "c.yaml"
    path.write_text(text)
    assert load_release(path).breakdowns["SEX"].codes == ["0", "1", "2"]
    (tmp_path / "sex.yaml").write_text((tmp_path / "sex.yaml").read_text().replace("breakdowns", "brekdowns"))
    problems = _problems(tmp_path, text)
    assert any("(sex.yaml line 6): unknown key 'brekdowns'" in p for p in problems)


def test_env_secret_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cubeguard.config.secrets import EnvSecret, resolve_number
    from cubeguard.errors import CubeguardError

    monkeypatch.setenv("CG_TEST_SEED", "12345")
    assert resolve_number(EnvSecret(env="CG_TEST_SEED"), "input.record_key.generate_seed") == 12345
    with pytest.raises(CubeguardError, match="environment variable CG_MISSING is not set"):
        resolve_number(EnvSecret(env="CG_MISSING"), "x")

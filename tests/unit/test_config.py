"""Release configs: good ones load; each kind of mistake gives a located, actionable message."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cubeguard.config import load_release
from tests.conftest import TINY_CONFIG, load_problems

_problems = load_problems


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


SEX_FILE = 'column: sex\ncodes:\n  - {code: "0"}\n  - {code: "1", parent: "0"}\n  - {code: "2", parent: "0"}\n'


def _with_sex_file(tmp_path: Path, extra: str) -> str:
    """TINY_CONFIG with SEX read from ``sex.yaml`` (SEX_FILE followed by ``extra``)."""
    (tmp_path / "sex.yaml").write_text(SEX_FILE + extra)
    start = TINY_CONFIG.index("  SEX:")
    end = TINY_CONFIG.index("  AGE:")
    return TINY_CONFIG[:start] + "  SEX: {file: sex.yaml}\n" + TINY_CONFIG[end:]


def test_variable_from_classification_file(tmp_path: Path) -> None:
    text = _with_sex_file(tmp_path, "breakdowns: {SEX: {}}\n")
    path = tmp_path / "c.yaml"
    path.write_text(text)
    assert load_release(path).breakdowns["SEX"].codes == ["0", "1", "2"]
    (tmp_path / "sex.yaml").write_text((tmp_path / "sex.yaml").read_text().replace("breakdowns", "brekdowns"))
    problems = _problems(tmp_path, text)
    assert any("(sex.yaml line 6): unknown key 'brekdowns'" in p for p in problems)


def test_a_key_given_twice_in_the_release_config(tmp_path: Path) -> None:
    text = TINY_CONFIG.replace("{method: cell_key, D: 5, V: 3, js: 2}", "{method: cell_key, D: 5, V: 3, js: 2, D: 8}")
    line = text[: text.index("D: 8")].count("\n") + 1  # the step is one flow mapping: both on one line
    assert _problems(tmp_path, text) == [f"steps[0].D (c.yaml line {line}): the key 'D' is given twice; keep one"]


def test_a_key_given_twice_in_a_classification_file(tmp_path: Path) -> None:
    problems = _problems(tmp_path, _with_sex_file(tmp_path, "column: gender\nbreakdowns: {SEX: {}}\n"))
    assert problems[0] == "variables.SEX.column (sex.yaml lines 1 and 6): the key 'column' is given twice; keep one"
    assert not any("gender" in p for p in problems)


def test_a_merge_key_shares_step_parameters(tmp_path: Path) -> None:
    text = TINY_CONFIG.replace(
        "steps:\n  - {method: cell_key, D: 5, V: 3, js: 2}\n",
        "steps:\n  - &ck {method: cell_key, D: 5, V: 3, js: 2, cubes: [c1]}\n  - {<<: *ck, name: ck2, D: 4, cubes: [c2]}\n",
    )
    path = tmp_path / "c.yaml"
    path.write_text(text)
    steps = load_release(path).config.steps
    assert [(s.D, s.V, s.js, s.cubes) for s in steps] == [(5, 3, 2, ["c1"]), (4, 3, 2, ["c2"])]


def test_env_secret_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cubeguard.errors import CubeguardError
    from cubeguard.secrets import EnvSecret, resolve_number

    monkeypatch.setenv("CG_TEST_SEED", "12345")
    assert resolve_number(EnvSecret(env="CG_TEST_SEED"), "input.record_key.generate_seed") == 12345
    with pytest.raises(CubeguardError, match="environment variable CG_MISSING is not set"):
        resolve_number(EnvSecret(env="CG_MISSING"), "x")


SWAP_STEPS = """\
pre_tabular:
  - {method: targeted_swap, hierarchy: [region], similar: [[sex]], seed: 1, report_cubes: [c1]}
  - method: random_swap
    swap_columns: [region]
    swap_rate: 0.1
    seed: 2
    where: {sex: ["1"]}
  - method: ons_household_swap
    hierarchy: [region]
    household_size: hsize
    risk_variables: [sex, age]
    risk_thresholds: [0.1]
    seed: 3
    report_cubes: [c1, hh]
  - method: ons_communal_swap
    rate_a: 0.05
    rate_b: 0.1
    rate_c: 0.2
    family_rate: 0.1
    risk_variables: [sex]
    hierarchy: [region]
    score_area: region
    unique_area: region
    family_area: region
    delivery_group: dg
    matching: {staff: [[sex], []]}
    seed: 4
"""


def test_every_swap_variant_loads_as_a_pre_tabular_step(tmp_path: Path) -> None:
    from cubeguard.methods.ons_communal_swap import OnsCommunalSwapStep
    from cubeguard.methods.ons_household_swap import OnsHouseholdSwapStep
    from cubeguard.methods.random_swap import RandomSwapStep
    from cubeguard.methods.targeted_swap import TargetedSwapStep

    path = tmp_path / "c.yaml"
    path.write_text(TINY_CONFIG + SWAP_STEPS)
    steps = load_release(path).config.pre_tabular
    assert [type(s) for s in steps] == [TargetedSwapStep, RandomSwapStep, OnsHouseholdSwapStep, OnsCommunalSwapStep]
    assert [s.name for s in steps] == ["targeted_swap", "random_swap", "ons_household_swap", "ons_communal_swap"]
    assert steps[0].report_cubes == ["c1"] and steps[1].report_cubes == [] and steps[2].report_cubes == ["c1", "hh"]
    assert steps[1].where == {"sex": ["1"]} and steps[1].unit == "households"
    assert steps[3].matching.staff == (("sex",), ()) and steps[3].matching.client_adult == ((),)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("    swap_columns: [region]\n", "    swap_colums: [region]\n",
         r"pre_tabular\[1\]\.swap_colums \(c\.yaml line \d+\): unknown key 'swap_colums'"),
        ("    swap_rate: 0.1\n", "    swap_rate: 0.7\n",
         r"pre_tabular\[1\]\.swap_rate \(c\.yaml line \d+\): input should be less than or equal to 0\.5"),
        ("    swap_rate: 0.1\n", "    swap_rate: {env: RATE, file: x}\n",
         r"pre_tabular\[1\]\.swap_rate\.file \(c\.yaml line \d+\): unknown key 'file'"),
        ("    seed: 2\n", "    seed: -2\n",
         r"pre_tabular\[1\]\.seed \(c\.yaml line \d+\): the seed must be a non-negative integer"),
        ("risk_thresholds: [0.1]", "risk_thresholds: [0.1, 0.2]",
         r"pre_tabular\[2\] \(c\.yaml line \d+\): risk_thresholds has 2 values but hierarchy has 1 levels"),
        ("    household_size: hsize\n", "",
         r"pre_tabular\[2\]\.household_size \(c\.yaml line \d+\): this required key is missing"),
        ("report_cubes: [c1, hh]", "report_cubes: [c1, hhh]",
         r"pre_tabular\[2\]\.report_cubes\[1\] \(c\.yaml line \d+\): unknown hypercube 'hhh'; did you mean hh\?"),
        ("    rate_a: 0.05\n", "    rate_a: 0.5\n",
         r"pre_tabular\[3\] \(c\.yaml line \d+\): swap rates must satisfy rate_a <= rate_b <= rate_c"),
        ("    score_area: region\n", "    score_area: lau\n",
         r"pre_tabular\[3\] \(c\.yaml line \d+\): score_area 'lau' must be one of the hierarchy columns"),
        ("matching: {staff: [[sex], []]}", "matching: {staf: [[sex], []]}",
         r"pre_tabular\[3\]\.matching\.staf \(c\.yaml line \d+\): unknown key 'staf'"),
        ("- method: ons_household_swap\n", "- method: ons_houshold_swap\n",
         r"pre_tabular\[2\] \(c\.yaml line \d+\): input tag 'ons_houshold_swap' found using 'method' does not match"),
        ("- method: random_swap\n", "- method: random_swap\n    name: targeted_swap\n",
         r"pre_tabular\[1\]\.name \(c\.yaml line \d+\): name 'targeted_swap' is also used by pre_tabular\[0\]"),
        ("    swap_columns: [region]\n", "    swap_columns: [region]\n    carry_along: [region]\n",
         r"pre_tabular\[1\] \(c\.yaml line \d+\): columns \['region'\] appear more than once"),
        ("  household_columns: [region]\n", "  household_columns: [region]\n  household_id: null\n",
         r"pre_tabular\[0\]\.household_id \(c\.yaml line \d+\): this swap needs a household id; set input\.household_id"),
    ],
)  # fmt: skip
def test_swap_step_mistakes_name_their_key_path(tmp_path: Path, old: str, new: str, expected: str) -> None:
    text = TINY_CONFIG + SWAP_STEPS
    assert old in text
    problems = _problems(tmp_path, text.replace(old, new, 1))
    assert any(re.match(expected, p) for p in problems), problems


def test_swap_secrets_may_be_given_by_reference(tmp_path: Path) -> None:
    from cubeguard.secrets import EnvSecret, PrefectSecret

    text = (
        (TINY_CONFIG + SWAP_STEPS)
        .replace("    swap_rate: 0.1\n    seed: 2\n", "    swap_rate: {env: RATE}\n    seed: {prefect_secret: s}\n")
        .replace("risk_thresholds: [0.1]", "risk_thresholds: [{env: T0}]")
        .replace("    rate_b: 0.1\n    rate_c: 0.2\n", "    rate_b: {env: B}\n    rate_c: {env: C}\n")
        .replace("seed: 1,", "seed: {env: SEED}, k_anonymity: {env: K}, swap_rate: {env: R},")
    )
    path = tmp_path / "c.yaml"
    path.write_text(text)
    targeted, random, ons, communal = load_release(path).config.pre_tabular  # no variable needs to be set
    assert targeted.seed == EnvSecret(env="SEED") and targeted.k_anonymity == EnvSecret(env="K")
    assert random.swap_rate == EnvSecret(env="RATE") and random.seed == PrefectSecret(prefect_secret="s")
    assert ons.risk_thresholds == (EnvSecret(env="T0"),)
    assert communal.rate_a == 0.05 and communal.rate_b == EnvSecret(env="B")
    # Inline rates are still checked against each other when others are references.
    problems = _problems(
        tmp_path,
        text.replace("    rate_a: 0.05\n", "    rate_a: 0.5\n")
        .replace("    family_rate: 0.1\n", "    family_rate: 0.1\n    rate_c: 0.3\n")
        .replace("    rate_c: {env: C}\n", ""),
    )
    assert any("swap rates must satisfy rate_a <= rate_b <= rate_c" in p for p in problems), problems


def test_a_households_population_without_the_reference_person_flag(tmp_path: Path) -> None:
    text = TINY_CONFIG.replace(
        "  household_columns: [region]\n", "  household_columns: [region]\n  household_ref: null\n"
    )
    (p,) = _problems(tmp_path, text)
    assert p.startswith("populations.households.unit (c.yaml line ")
    assert p.endswith(
        "population 'households' counts households, which needs the reference-person flag; name its column in "
        "input.household_ref, or count persons"
    )

"""Sweep grids: deterministic expansion, explicit sets, and located messages for every mistake."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cubeguard.methods.cell_key import CellKeyStep
from cubeguard.methods.identity import IdentityStep
from cubeguard.methods.registry import CUBE_METHODS
from cubeguard.sweep import SweepGridError, build_steps, grid_from_mapping, load_grid
from cubeguard.sweep.grid import MEASURE_KEYS, STEP_MODELS, measure_column


def _grid(tmp_path: Path, text: str):
    path = tmp_path / "g.yaml"
    path.write_text(textwrap.dedent(text))
    return load_grid(path)


def _problems(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(SweepGridError) as info:
        _grid(tmp_path, text)
    assert str(info.value).startswith(info.value.problems[0])
    return info.value.problems


def test_vary_expands_as_a_cartesian_product_last_key_fastest(tmp_path: Path) -> None:
    grid = _grid(
        tmp_path,
        """\
        method: cell_key
        base: {js: 2}
        vary:
          D: [8, 4]
          V: [3, 5]
          pstay: [null, 0.5]
        """,
    )
    got = [(s.step.D, s.step.V, s.step.pstay) for s in grid.sets]
    assert got == [
        (8, 3, None),
        (8, 3, 0.5),
        (8, 5, None),
        (8, 5, 0.5),
        (4, 3, None),
        (4, 3, 0.5),
        (4, 5, None),
        (4, 5, 0.5),
    ]
    assert [s.number for s in grid.sets] == list(range(1, 9))
    assert all(isinstance(s.step, CellKeyStep) and s.step.js == 2 for s in grid.sets)
    assert grid.sets[1].name == "D=8 V=3 pstay=0.5" and grid.sets[0].name == "D=8 V=3 pstay=null"
    assert grid.sets[5].where == "vary.D[1], vary.V[0], vary.pstay[1]"
    assert grid.sets[5].home == ("vary",)
    assert "D=" not in repr(grid.sets[5])  # the values are secret


def test_explicit_sets_merge_over_base_and_may_override_it() -> None:
    grid = grid_from_mapping(
        {"method": "cell_key", "base": {"js": 2, "V": 3}, "sets": [{"D": 0, "V": 1, "js": 0}, {"D": 5}]}
    )
    assert [(s.step.D, s.step.V, s.step.js) for s in grid.sets] == [(0, 1, 0), (5, 3, 2)]
    assert [s.name for s in grid.sets] == ["D=0 V=1 js=0", "D=5 V=3 js=2"]
    assert [s.where for s in grid.sets] == ["sets[0]", "sets[1]"]
    assert [s.home for s in grid.sets] == [("sets", 0), ("sets", 1)]


def test_a_grid_without_vary_or_sets_is_one_set_and_identity_is_sweepable() -> None:
    (only,) = grid_from_mapping({"method": "identity"}).sets
    assert isinstance(only.step, IdentityStep) and only.name == "set 1" and only.where == "base"
    assert set(STEP_MODELS) == set(CUBE_METHODS)  # every post-tabular method


def test_defaults_and_the_measures_computed(tmp_path: Path) -> None:
    grid = grid_from_mapping({"method": "cell_key", "base": {"D": 5, "V": 3}})
    assert (grid.spec.risk, grid.spec.utility) == ("small_origin_risk@cube", "hellinger@interior")
    assert grid.spec.cubes is None
    spec = grid.measure_spec()
    assert spec.scopes == ("interior", "cube")
    assert {"small_origin_risk", "hellinger", "average_absolute_distance"} <= set(spec.measures)
    other = grid_from_mapping({**grid.spec.model_dump(), "utility": "cramers_v_protected@SEX*AGE.M", "risk": "rad"})
    assert other.spec.risk == "rad@interior"
    assert other.measure_spec().scopes == ("interior", "cube", ("SEX", "AGE.M"))
    assert "cramers_v" in other.measure_spec().measures


@pytest.mark.parametrize(
    ("text", "column"),
    [
        ("disclosive_share_protected", "disclosive_share_protected@cube"),
        ("entropy_risk_protected@GEO.2*SEX", "entropy_risk_protected@GEO.2*SEX"),
        ("wilcoxon_p@cube", "wilcoxon_p@cube"),
    ],
)
def test_measure_columns(text: str, column: str) -> None:
    assert measure_column(text) == column
    assert MEASURE_KEYS[column.partition("@")[0]][0] in {"directly_disclosive", "entropy_risk", "wilcoxon"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("helinger", "unknown measure 'helinger'; did you mean hellinger"),
        ("disclosive_true@interior", "'disclosive_true' exists only on the whole cube; write disclosive_true@cube"),
        ("entropy_risk_protected@cube", "'entropy_risk_protected' is not computed on the whole cube"),
        ("cramers_v_original@A*B*C", "'cramers_v_original' needs a two-way margin"),
        ("rad@", "scope '' is empty"),
    ],
)
def test_unfit_measure_columns(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        measure_column(text)


def test_bad_keys_name_the_yaml_path_and_line(tmp_path: Path) -> None:
    problems = _problems(
        tmp_path,
        """\
        method: cell_key
        base: {js: 2, cubes: [c1]}
        vary:
          DD: [4, 8]
          V: [3, five]
        vray: 1
        utility: helinger
        """,
    )
    assert problems == [
        "utility (g.yaml line 7): unknown measure 'helinger'; did you mean hellinger, hellinger_counts?",
        "vray (g.yaml line 6): unknown key 'vray'; remove it or fix its spelling",
        "base.cubes (g.yaml line 2): choose cubes with the grid's top-level 'cubes'; a set applies to all of them",
        "vary.DD (g.yaml line 4): unknown parameter 'DD' of cell_key; did you mean D?",
        "vary.V[1] (g.yaml line 5): input should be a valid number, unable to parse string as a number; "
        "change the value",
    ]


def test_structure_mistakes(tmp_path: Path) -> None:
    assert _problems(tmp_path, "method: cell_kee\n") == [
        "method (g.yaml line 1): unknown step method 'cell_kee'; did you mean cell_key?"
    ]
    assert _problems(tmp_path, "method: cell_key\nvary: {D: [4]}\nsets: [{D: 4}]\n")[0] == (
        "(top level) (g.yaml line 1): give either 'vary' (a cartesian product) or 'sets' (an explicit list), not both; "
        "change the value"
    )
    assert _problems(tmp_path, "method: cell_key\nbase: {D: 4}\nvary: {D: [4]}\n")[0].endswith(
        "parameter 'D' is both in 'base' and 'vary'; keep it in one of them; change the value"
    )
    assert _problems(tmp_path, "method: cell_key\nbase: {V: 3}\nvary: {D: [4, 5, 4]}\n") == [
        "vary (g.yaml line 3): vary.D[0] and vary.D[2] are equal; list each value once; change the value"
    ]
    assert _problems(tmp_path, "method: cell_key\nvary: {D: []}\n") == [
        "vary (g.yaml line 2): vary.D lists no value; give at least one; change the value"
    ]
    assert _problems(tmp_path, "- a list\n") == ["(top level) (g.yaml): the grid must be a YAML mapping of keys"]
    assert _problems(tmp_path, "method: cell_key\ncubes: [c1, c1]\nbase: {D: 4, V: 3}\n") == [
        "cubes (g.yaml line 2): cube 'c1' is listed twice; list each cube once; change the value"
    ]


def test_invalid_parameter_sets_are_all_reported_with_their_place(tmp_path: Path) -> None:
    problems = _problems(
        tmp_path,
        """\
        method: cell_key
        base: {js: 2}
        sets:
          - {D: 4, V: 3}
          - {D: 4}
          - {D: 4, V: 3}
          - {D: 4, V: 3, ptable_file: p.csv}
          - {D: 4, V: 3, mono: maybe, name: x}
        """,
    )
    assert problems == [
        "sets[1] (g.yaml line 5): set 2 (sets[1]): give the p-table parameters D and V, or a ptable_file; "
        "change the value",
        "sets[2] (g.yaml line 6): set 3 (sets[2]) repeats set 1 (sets[0]); list each set once",
        "sets[3] (g.yaml line 7): set 4 (sets[3]): give either D and V or a ptable_file, not both; change the value",
        "sets[4].name (g.yaml line 8): sets are named by their parameters; remove 'name'",
        "sets[4].mono (g.yaml line 8): input should be a valid boolean, unable to interpret input; change the value",
    ]


def test_infeasible_and_invalid_p_tables_are_reported_together_without_values() -> None:
    grid = grid_from_mapping({"method": "cell_key", "base": {"js": 2}, "vary": {"D": [0, 4], "V": [1.25, 3]}})
    seen: list[tuple[str, int]] = []
    with pytest.raises(SweepGridError) as info:
        build_steps(grid, progress=lambda stage, n: seen.append((stage, n)))
    problems = info.value.problems
    assert seen == [("build", 1)] * 4  # every set is tried
    assert [p.split(": ")[0] for p in problems] == ["vary (grid)"] * 3
    assert [p.split(": ")[1] for p in problems] == [
        "set 1 (vary.D[0], vary.V[0])",
        "set 2 (vary.D[0], vary.V[1])",
        "set 3 (vary.D[1], vary.V[0])",
    ]
    assert "parameters: js > 0 needs noise to move small counts" in problems[0]
    assert "No noise distribution for original count 1 meets the p-table constraints" in problems[2]
    assert not any("1.25" in p for p in problems)  # V is secret


def test_secret_references_resolve_only_when_steps_are_built(monkeypatch: pytest.MonkeyPatch) -> None:
    grid = grid_from_mapping({"method": "cell_key", "base": {"js": 2}, "vary": {"D": [{"env": "SWEEP_D"}], "V": [3]}})
    assert grid.sets[0].name == "D=env:SWEEP_D V=3"
    monkeypatch.delenv("SWEEP_D", raising=False)
    with pytest.raises(SweepGridError, match=r"environment variable SWEEP_D is not set"):
        build_steps(grid)
    monkeypatch.setenv("SWEEP_D", "5")
    (step,) = build_steps(grid)
    assert callable(step)


def test_ptable_files_are_relative_to_the_grid(tmp_path: Path) -> None:
    grid = _grid(tmp_path, "method: cell_key\nsets: [{ptable_file: tables/p.csv}]\n")
    assert grid.sets[0].step.ptable_file == (tmp_path / "tables" / "p.csv").resolve()

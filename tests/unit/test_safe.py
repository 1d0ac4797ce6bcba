"""SAFE (Höhne 2011): the heuristic's guarantees, its report in the paper's layout, and its config errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cubeguard.config import ConfigError, load_release
from cubeguard.cubes.hierarchy import Breakdown
from cubeguard.cubes.spec import BreakdownSpec, CodeSpec, VariableSpec
from cubeguard.errors import CubeguardError
from cubeguard.methods.context import TableSet
from cubeguard.methods.safe import (
    Dimension,
    SafeStep,
    Settings,
    apply,
    build,
    deviation_tables,
    kernel,
    markdown,
    search,
)
from cubeguard.methods.safe.controlled import tabulate, weights
from cubeguard.methods.safe.deviations import cell_identity
from cubeguard.methods.safe.elementary import distinct_rows
from tests.conftest import CELL_KEY_STEP, TINY_CONFIG
from tests.hierarchies import breakdown_of

SAFE = "pre_tabular:\n  - {method: safe, seed: 3}\n"


def _flat(variable: int, n: int) -> Dimension:
    """A one-level breakdown of ``n`` categories: the total, then each category."""
    lo = np.r_[0, np.arange(n)].astype(np.int64)
    return Dimension(variable, np.arange(n, dtype=np.int64), lo, np.r_[n, np.arange(1, n + 1)].astype(np.int64))


def _problem(seed: int, n: int = 3000) -> tuple[np.ndarray, np.ndarray, object]:
    """An elementary table of 3 variables (12 x 5 x 8 categories) with all three 2-way tables controlled."""
    rng = np.random.default_rng(seed)
    records = np.stack([rng.integers(0, k, n) for k in (12, 5, 8)], axis=1)
    cats, counts = np.unique(records, axis=0, return_counts=True)
    tables = build([[_flat(a, s[0]), _flat(b, s[1])] for a, b, s in ((0, 1, (12, 5)), (0, 2, (12, 8)), (1, 2, (5, 8)))])
    return cats.astype(np.int64), counts.astype(np.int64), tables


def test_weights_are_the_integer_part_of_log10_as_in_table_1() -> None:
    a = np.array([0, 1, 9, 10, 99, 100, 999, 1000, 9999, 10_000, 10**12], dtype=np.int64)
    assert weights(a).tolist() == [0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 12]


def _random_dimension(rng: np.random.Generator, variable: int, n_cats: int) -> Dimension:
    """Categories on random bottoms (some outside the breakdown), random ranges of bottoms as codes, mostly the total."""
    bottoms = int(rng.integers(1, 6))
    position = rng.integers(-1, bottoms, n_cats).astype(np.int64)
    lo = rng.integers(0, bottoms, 4)
    hi = lo + rng.integers(1, bottoms - lo + 1)
    if bottoms > 1 and rng.random() < 0.3:  # no total, and no code reaching the last bottom
        lo = np.minimum(lo, bottoms - 2)
        hi = np.clip(hi, lo + 1, bottoms - 1)
        return Dimension(variable, position, lo.astype(np.int64), hi.astype(np.int64))
    return Dimension(variable, position, np.r_[0, lo].astype(np.int64), np.r_[bottoms, hi].astype(np.int64))


@pytest.mark.parametrize("seed", range(12))
def test_controlled_cells_count_every_record_whose_bottoms_lie_in_their_codes(seed: int) -> None:
    rng = np.random.default_rng(seed)
    cats = rng.integers(0, 6, (400, 3)).astype(np.int64)
    counts = rng.integers(1, 9, 400).astype(np.int64)
    tables = [[_random_dimension(rng, v, 6) for v in rng.permutation(3)[: rng.integers(1, 4)]] for _ in range(3)]
    found = tabulate(build(tables), cats, counts)
    expected = []
    for table in tables:  # each cell by its definition: the records inside every one of its codes
        for codes in np.ndindex(*[d.lo.size for d in table]):
            inside = np.ones(cats.shape[0], dtype=bool)
            for dim, c in zip(table, codes, strict=True):
                pos = dim.position[cats[:, dim.variable]]
                inside &= (pos >= 0) & (dim.lo[c] <= pos) & (pos < dim.hi[c])
            expected.append(int(counts[inside].sum()))
    assert found.tolist() == expected
    assert found.sum() > 0


@pytest.mark.parametrize("seed", range(6))
def test_a_moves_effect_on_any_one_cell_is_the_change_of_that_cells_count(seed: int) -> None:
    """Model 2 rejects a candidate on a remembered cell without visiting the rest: that test must be exact."""
    rng = np.random.default_rng(seed)
    cats = rng.integers(0, 6, (60, 3)).astype(np.int64)
    tables = [[_random_dimension(rng, v, 6) for v in rng.permutation(3)[: rng.integers(1, 4)]] for _ in range(4)]
    ctl = build(tables)
    nd, var, ptr, cstart, cval, base = ctl.arrays
    for _ in range(40):
        j, k = rng.choice(60, 2, replace=False)
        m = int(rng.integers(1, 4))
        before = np.zeros(60, np.int64)
        before[j] = m
        after = np.zeros(60, np.int64)
        after[k] = m
        change = tabulate(ctl, cats, after) - tabulate(ctl, cats, before)
        found = [
            kernel._effect(c, cats[j], cats[k], m, nd, var, ptr, cstart, cval, base, ctl.strides)
            for c in range(ctl.n_cells)
        ]
        assert found == change.tolist()


def test_distinct_rows_sort_as_numpy_unique_on_rows_wider_than_one_word() -> None:
    rng = np.random.default_rng(7)
    rows = rng.integers(-1, 3000, (500, 9))[rng.integers(0, 500, 2000)]  # 9 columns of 3001 values: 3 words
    found, inverse, counts = distinct_rows(rows)
    expected, expected_inverse, expected_counts = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(found, expected)
    np.testing.assert_array_equal(inverse, expected_inverse.ravel())
    np.testing.assert_array_equal(counts, expected_counts)
    np.testing.assert_array_equal(found[inverse], rows)


def test_every_elementary_cell_ends_at_0_or_3_and_up_and_deviations_are_the_real_ones() -> None:
    cats, counts, tables = _problem(1)
    out = search(cats, counts, tables, Settings(), np.random.default_rng(0))
    assert not np.isin(out.counts, [1, 2]).any()
    assert out.counts.sum() == counts.sum()
    assert np.isin(counts, [1, 2]).any()  # the test had work to do
    moved = np.zeros_like(counts)
    np.add.at(moved, out.log[:, 0], -out.log[:, 2])
    np.add.at(moved, out.log[:, 1], out.log[:, 2])
    np.testing.assert_array_equal(counts + moved, out.counts)
    # the deviation of a 2-way cell, recomputed by hand from the elementary table
    first = (cats[:, 0] == 4) & (cats[:, 1] == 2)
    cell = tables.base[0] + (1 + 4) * 6 + (1 + 2)
    assert out.deviation[cell] == out.counts[first].sum() - counts[first].sum()
    assert np.all(np.abs(out.deviation) <= out.bound)


def test_model_3_tightens_the_bounds_below_where_model_2_stopped() -> None:
    cats, counts, tables = _problem(2)
    out = search(cats, counts, tables, Settings(start=(3, 5), target=(1, 1)), np.random.default_rng(0))
    first = out.schedule[0]
    assert first.model == 2 and first.accepted
    assert (out.final.bound_one, out.final.bound_other) < (first.bound_one, first.bound_other)
    assert np.abs(out.deviation).max() <= max(out.final.bound_one, out.final.bound_other)
    assert any(s.model == 3 and s.accepted and s.moves > 0 for s in out.schedule)


def test_the_same_seed_gives_the_same_solution_and_another_seed_another() -> None:
    cats, counts, tables = _problem(3)
    a = search(cats, counts, tables, Settings(), np.random.default_rng(5))
    b = search(cats, counts, tables, Settings(), np.random.default_rng(5))
    c = search(cats, counts, tables, Settings(), np.random.default_rng(6))
    np.testing.assert_array_equal(a.counts, b.counts)
    np.testing.assert_array_equal(a.log, b.log)
    assert not np.array_equal(a.counts, c.counts)


def test_a_safe_table_is_left_alone() -> None:
    cats = np.array([[0, 0], [0, 1], [1, 0]], dtype=np.int64)
    counts = np.array([3, 7, 4], dtype=np.int64)
    tables = build([[_flat(0, 2), _flat(1, 2)]])
    out = search(cats, counts, tables, Settings(), np.random.default_rng(0))
    np.testing.assert_array_equal(out.counts, counts)
    assert out.log.shape[0] == 0 and not out.deviation.any()


def test_fewer_than_3_records_cannot_be_protected() -> None:
    cats = np.array([[0, 0], [1, 1]], dtype=np.int64)
    tables = build([[_flat(0, 2), _flat(1, 2)]])
    with pytest.raises(CubeguardError, match="the microdata hold 2 record"):
        search(cats, np.array([1, 1], dtype=np.int64), tables, Settings(), np.random.default_rng(0))


def test_deviation_tables_count_a_cell_shared_by_two_tables_once_by_its_dimension() -> None:
    # two tables, A x B and A alone: A's margin cells are the same cells in both
    codes_a = np.array([-1, 1, 2], dtype=np.int64)
    codes_b = np.array([-1, 1], dtype=np.int64)
    ident = cell_identity([[(0, codes_a), (1, codes_b)], [(0, codes_a)]], [3, 2])
    original = np.array([10, 10, 4, 4, 6, 6, 10, 4, 6], dtype=np.int64)
    deviation = np.array([0, 0, 3, 3, -3, -3, 0, 3, -3], dtype=np.int64)
    dims = np.array([0, 1, 1, 2, 1, 2, 0, 1, 1], dtype=np.int8)
    found = deviation_tables(ident, original, deviation, dims)
    assert found["cells"] == 5  # B, A1, A2 (once each), A1xB, A2xB; the grand total is left out
    assert found["by_dimension"]["1"] == [1, 0, 0, 2] and found["by_dimension"]["2"] == [0, 0, 0, 2]
    assert [s["cells"] for s in found["by_size"]] == [4, 1]
    assert found["by_size"][0]["cumulative_percent"] == [0.0, 0.0, 0.0, 100.0]
    text = markdown(found)
    assert "| 3 | 2 | 2 | 0 | 0 | 100.0 | 100.0 | 0.0 | 0.0 |" in text


def _spec(column: str, groups: list[int]) -> VariableSpec:
    """A total, then groups of leaves (one group: flat)."""
    codes = [CodeSpec(code="T")]
    for g, size in enumerate(groups):
        parent = "T" if len(groups) == 1 else f"G{g}"
        if len(groups) > 1:
            codes.append(CodeSpec(code=parent, parent="T"))
        codes += [CodeSpec(code=f"{column}{g}{k}", parent=parent) for k in range(size)]
    return VariableSpec(column=column, codes=codes, breakdowns={"X": BreakdownSpec()})


def _leaves(bd: Breakdown) -> list[str]:
    c = bd.classification
    return [code for code, kids in zip(c.codes, c.children, strict=True) if not kids]


def test_apply_moves_whole_records_and_reports_the_schedule_and_tables() -> None:
    a, b = breakdown_of(_spec("a", [6]), "A"), breakdown_of(_spec("b", [3, 3]), "B")
    rng = np.random.default_rng(4)
    n = 400
    frame = pd.DataFrame({"a": rng.choice(_leaves(a), n), "b": rng.choice(_leaves(b), n), "pid": np.arange(n)})
    tables = TableSet({a.id: a, b.id: b}, (("x", (a.id, b.id)),))
    result = apply(frame, SafeStep(seed=1).with_tables(tables), 1)
    changed = (result.data[["a", "b"]] != frame[["a", "b"]]).any(axis=1)
    assert result.persons == int(changed.sum())
    assert result.moved == ["a", "b"] and result.households is None
    report = result.report
    assert report["records"] == n and report["records_moved"] == result.persons
    assert report["schedule"][0]["model"] == 2
    assert set(report["deviations"]) >= {"by_dimension", "by_size", "max_deviation"}
    pairs = set(map(tuple, frame[["a", "b"]].to_numpy()))
    assert set(map(tuple, result.data[["a", "b"]].to_numpy())) <= pairs  # only combinations that occurred


def test_safe_must_be_the_last_pre_tabular_step(tmp_path: Path) -> None:
    steps = (
        "pre_tabular:\n  - {method: safe, seed: 3}\n"
        "  - {method: random_swap, unit: records, swap_columns: [region], swap_rate: 0.1, seed: 2}\n"
    )
    found = _problems(tmp_path, steps)
    assert any(p.startswith("pre_tabular[0]") and "safe must be the last pre_tabular step" in p for p in found)


def _problems(tmp_path: Path, pre_tabular: str, households: bool = False) -> list[str]:
    """The config problems of TINY_CONFIG with ``pre_tabular`` steps instead of its post-tabular step."""
    text = TINY_CONFIG.replace("steps:\n" + CELL_KEY_STEP, pre_tabular)
    if not households:
        text = text.replace("  - {id: hh, population: households, breakdowns: [GEO.2]}\n", "")
    (tmp_path / "c.yaml").write_text(text)
    try:
        load_release(tmp_path / "c.yaml")
    except ConfigError as exc:
        return exc.problems
    return []


def test_a_release_of_person_cubes_with_safe_loads(tmp_path: Path) -> None:
    assert _problems(tmp_path, SAFE) == []


@pytest.mark.parametrize(
    ("step", "message"),
    [
        (
            "{method: safe, seed: 3, tables: [[GEO.9]]}",
            "pre_tabular[0].tables[0][0] (c.yaml line 42): unknown breakdown 'GEO.9'",
        ),
        ("{method: safe, seed: 3, tables: [[SEX, SEX]]}", "a breakdown appears twice in this table"),
        ("{method: safe, seed: 3, target: {one: 4, other: 1}}", "target bounds must not exceed the start bounds"),
        ("{method: safe}", "pre_tabular[0].seed (c.yaml line 42): this required key is missing"),
    ],
)
def test_each_config_error_names_its_key(tmp_path: Path, step: str, message: str) -> None:
    found = _problems(tmp_path, f"pre_tabular:\n  - {step}\n")
    assert any(message in p for p in found), found


def test_safe_needs_the_forbidden_values_gate(tmp_path: Path) -> None:
    text = TINY_CONFIG.replace("  - {id: hh, population: households, breakdowns: [GEO.2]}\n", "")
    text = text.replace("steps:\n" + CELL_KEY_STEP, SAFE).replace("forbidden_values: [1, 2]", "forbidden_values: [1]")
    (tmp_path / "c.yaml").write_text(text)
    release = load_release(tmp_path / "c.yaml")
    assert any(
        "step 'safe' promises that no table holds a count of 1, 2; add [2] to gates.forbidden_values" in p
        for p in release.unprotected
    )


def test_max_tightenings_stops_model_3_the_same_on_every_machine() -> None:
    cats, counts, tables = _problem(2)
    whole = search(cats, counts, tables, Settings(), np.random.default_rng(0))
    assert whole.stopped_by == "target" and sum(s.model == 3 for s in whole.schedule) > 2
    runs = [search(cats, counts, tables, Settings(max_tightenings=2), np.random.default_rng(0)) for _ in range(2)]
    assert all(r.stopped_by == "max_tightenings" and sum(s.model == 3 for s in r.schedule) == 2 for r in runs)
    np.testing.assert_array_equal(runs[0].counts, runs[1].counts)  # no clock in the result
    np.testing.assert_array_equal(runs[0].log, whole.log[: runs[0].log.shape[0]])  # the same path, cut short
    late = search(cats, counts, tables, Settings(time_limit=1e-9), np.random.default_rng(0))
    assert late.stopped_by == "time_limit"  # the machine-dependent stop says so


def test_the_report_says_why_safe_stopped() -> None:
    a, b = breakdown_of(_spec("a", [6]), "A"), breakdown_of(_spec("b", [3, 3]), "B")
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"a": rng.choice(_leaves(a), 400), "b": rng.choice(_leaves(b), 400), "pid": np.arange(400)})
    tables = TableSet({a.id: a, b.id: b}, (("x", (a.id, b.id)),))
    result = apply(frame, SafeStep(seed=1, time_limit=None, max_tightenings=0).with_tables(tables), 1)
    assert result.report["stopped_by"] == "max_tightenings"
    assert all(s["model"] == 2 for s in result.report["schedule"])

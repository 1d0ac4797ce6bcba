"""Controlled rounding (Handbook on SDC v2, 5.5.1): the Handbook's example, brute-force optima, steps, the release step, errors."""

from __future__ import annotations

import doctest
import itertools
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cubeguard.config import load_release
from cubeguard.cubes.tree import hierarchies
from cubeguard.errors import CubeguardError
from cubeguard.gates.additivity import check_additivity
from cubeguard.methods.cells import interior, leaf_index, summed
from cubeguard.methods.controlled_rounding import (
    METHOD,
    REPORT_ATTR,
    ControlledRoundingStep,
    Solution,
    additivity_rows,
    kernel,
    round_cube,
)
from cubeguard.methods.controlled_rounding.method import _accepted
from cubeguard.publish.manifest import public_step
from tests.conftest import TINY_CONFIG, config_problems, protect_tiny
from tests.strategies import build_cube, cubes, flat_tree

CELL_KEY = "  - {method: cell_key, D: 5, V: 3, js: 2}\n"
REPORT_KEYS = {"base", "steps", "stop", "status", "objective", "bound", "gap", "cells", "constraints", "variables",
               "seconds", "solver_seconds", "steps_used", "blocks", "merged_blocks", "held_cells", "zero_restricted"}  # fmt: skip

# Handbook on SDC v2 (Hundepool et al. 2024), 5.5, Tables 5.18 and 5.21 as printed: rows Area A,
# B, C, Total; columns Male, Female, Total. Table 5.21 is "a possible rounding solution" to base 5:
# valid (zero-restricted and additive) but with total deviation 22, where the optimum is 18.
TABLE_5_18 = [[1, 0, 1], [3, 3, 6], [12, 20, 32], [16, 23, 39]]
TABLE_5_21 = [[5, 0, 5], [0, 5, 5], [10, 20, 30], [15, 25, 40]]
# The two optimal zero-restricted roundings of Table 5.18 to base 5 (found by brute force below).
OPTIMA_5_18 = [
    [[0, 0, 0], [5, 5, 10], [10, 20, 30], [15, 25, 40]],
    [[0, 0, 0], [0, 5, 5], [15, 20, 35], [15, 25, 40]],
]
# A 3 x 2 x 2 table with no zero-restricted rounding to base 3 (found by searching random tables).
NO_ZERO_RESTRICTED = [[[2, 0], [0, 1]], [[2, 0], [1, 2]], [[0, 2], [1, 0]]]


def _step(**kwargs: object) -> ControlledRoundingStep:
    return ControlledRoundingStep(method="controlled_rounding", **kwargs)  # type: ignore[arg-type]


def _printed_order(cube: xr.Dataset) -> np.ndarray:
    """A cube's counts as the Handbook prints them: inner rows and columns first, totals last."""
    return cube["count"].sel(AREA=["A", "B", "C", "Total"], SEX=["Male", "Female", "Total"]).values


def _table_5_18(counts: list[list[int]] | None = None) -> xr.Dataset:
    dims = {"AREA": flat_tree("Total", "A", "B", "C"), "SEX": flat_tree("Total", "Male", "Female")}
    inner = np.array(counts)[:3, :2] if counts is not None else np.array([[1, 0], [3, 3], [12, 20]])
    return build_cube(dims, inner).assign_attrs(cube_id="t518")


def _three_way(counts: list[list[list[int]]]) -> xr.Dataset:
    inner = np.array(counts)
    dims = {f"D{k}": flat_tree("T", *[f"c{j}" for j in range(n)]) for k, n in enumerate(inner.shape)}
    return build_cube(dims, inner).assign_attrs(cube_id="three")


def _aggregation(cube: xr.Dataset) -> np.ndarray:
    """Matrix (all cells x interior cells): a cell is the sum of the interior cells below it."""
    shape = tuple(i.size for i in leaf_index(cube))
    eye = np.eye(math.prod(shape), dtype=np.int64)
    return np.stack([summed(cube, row.reshape(shape)).ravel() for row in eye], axis=1)


def _brute_force(cube: xr.Dataset, base: int, steps: int = 1) -> int | None:
    """The least total deviation over every rounding of the interior within ``steps``, or None if none is valid."""
    x = cube["count"].values.ravel()
    inner = interior(cube["count"].values, leaf_index(cube)).ravel()
    choices = [[a for a in range(c - c % base - steps * base, c + steps * base + 1, base)
                if a >= 0 and abs(a - c) < steps * base] for c in inner.tolist()]  # fmt: skip
    full = np.array(list(itertools.product(*choices)), dtype=np.int64) @ _aggregation(cube).T
    ok = np.all(np.abs(full - x) < steps * base, axis=1)
    return int(np.abs(full[ok] - x).sum(axis=1).min()) if ok.any() else None


def _movable(cube: xr.Dataset, base: int) -> int:
    return int(np.count_nonzero(interior(cube["count"].values, leaf_index(cube)) % base))


def _report(cube: xr.Dataset) -> dict[str, object]:
    value = cube.attrs[REPORT_ATTR]
    report: dict[str, object] = json.loads(value) if isinstance(value, str) else value
    return report


def _assert_valid(original: xr.Dataset, rounded: xr.Dataset, base: int, steps: int = 1) -> int:
    """A controlled rounding: additive, multiples of the base, within ``steps``; returns its total deviation."""
    before, after = original["count"].values, rounded["count"].values
    assert after.dtype == np.int64 and rounded["count"].dims == original["count"].dims
    assert check_additivity(rounded).additive
    inner = interior(after, leaf_index(rounded))
    np.testing.assert_array_equal(summed(rounded, inner), after)
    assert np.all(after % base == 0) and np.all(after >= 0)
    assert np.all(np.abs(after - before) < steps * base)
    np.testing.assert_array_equal(rounded["noise"].values, after - before)
    objective = int(np.abs(after - before).sum())
    assert _report(rounded)["objective"] == objective
    return objective


def test_the_handbook_example_table_5_21_is_valid_but_not_optimal() -> None:
    original = _table_5_18()
    np.testing.assert_array_equal(_printed_order(original), TABLE_5_18)  # the transcription adds up
    printed = _table_5_18(TABLE_5_21)
    np.testing.assert_array_equal(_printed_order(printed), TABLE_5_21)  # Table 5.21 is additive
    deviation = np.abs(np.array(TABLE_5_21) - np.array(TABLE_5_18))
    assert np.all(deviation < 5) and int(deviation.sum()) == 22  # zero-restricted, total deviation 22
    rounded = METHOD.prepare(_step(base=5))(original)
    assert _assert_valid(original, rounded, 5) == 18 == _brute_force(original, 5)
    assert _printed_order(rounded).tolist() in OPTIMA_5_18
    report = _report(rounded)
    assert set(report) == REPORT_KEYS
    assert report["status"] == "optimal" and report["bound"] == 18 and report["gap"] == 0
    assert (report["cells"], report["constraints"], report["variables"]) == (12, 6, 10)


@pytest.mark.parametrize("stop", ["first_feasible", "time_limit"])
def test_the_other_stop_rules_return_a_valid_rounding(stop: str) -> None:
    original = _table_5_18()
    rounded = round_cube(original, _step(base=5, stop=stop))
    objective = _assert_valid(original, rounded, 5)
    report = _report(rounded)
    assert report["stop"] == stop and report["status"] in ("optimal", "first_feasible")
    assert objective >= 18 and report["bound"] is not None


def test_the_solution_is_deterministic_and_rounding_again_changes_nothing() -> None:
    original = _three_way([[[4, 7, 1], [2, 2, 8]], [[5, 0, 3], [1, 9, 4]]])
    first = round_cube(original, _step(base=3))
    np.testing.assert_array_equal(round_cube(original, _step(base=3))["count"].values, first["count"].values)
    again = round_cube(first, _step(base=3))
    np.testing.assert_array_equal(again["count"].values, first["count"].values)
    np.testing.assert_array_equal(again["noise"].values, first["noise"].values)  # noise stays published - original
    assert _report(again)["objective"] == 0


def test_each_total_is_the_sum_of_its_childrens_cells_along_its_first_dimension_with_children() -> None:
    cube = _three_way([[[1, 2], [3, 4]], [[5, 6], [7, 8]]])
    found = hierarchies(cube)
    rows = additivity_rows([found[str(d)] for d in cube["count"].dims])
    assert rows.shape == (27 - 8, 27)  # one equation per total or subtotal cell
    assert not np.any(rows @ cube["count"].values.ravel())
    broken = cube["count"].values.copy()
    broken[0, 0, 0] += 1
    assert np.count_nonzero(rows @ broken.ravel()) == 1


def test_the_kernel_examples_run() -> None:
    outcome = doctest.testmod(kernel)
    assert outcome.attempted >= 1 and outcome.failed == 0


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(cube=cubes(max_dims=3, max_count=20).filter(lambda c: c["count"].size <= 300), base=st.integers(2, 6))
def test_a_rounded_cube_is_additive_zero_restricted_and_optimal(cube: xr.Dataset, base: int) -> None:
    tiny = _movable(cube, base) <= 12
    best = _brute_force(cube, base) if tiny else None
    try:
        rounded = round_cube(cube, _step(base=base))
    except CubeguardError as err:
        assert re.fullmatch(r"cube '\?' has no controlled rounding to base \d+ with every cell within 1 step\(s\) "
                            r"of its count; raise 'steps' of step 'controlled_rounding' \(e\.g\. to 2\)", str(err))  # fmt: skip
        assert not tiny or best is None
        return
    objective = _assert_valid(cube, rounded, base)
    assert _report(rounded)["status"] == "optimal"
    if tiny:
        assert objective == best


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(cube=cubes(max_dims=3, max_count=20).filter(lambda c: c["count"].size <= 200), base=st.integers(2, 5))
def test_more_steps_never_deviate_more(cube: xr.Dataset, base: int) -> None:
    two = round_cube(cube, _step(base=base, steps=2))
    objective = _assert_valid(cube, two, base, steps=2)
    try:
        one = round_cube(cube, _step(base=base))
    except CubeguardError:
        return
    assert objective <= _report(one)["objective"]  # type: ignore[operator]


def test_two_steps_round_a_table_that_has_no_zero_restricted_rounding() -> None:
    cube = _three_way(NO_ZERO_RESTRICTED)
    assert _brute_force(cube, 3) is None
    with pytest.raises(CubeguardError, match=re.escape(
        "cube 'three' has no controlled rounding to base 3 with every cell within 1 step(s) of its count; "
        "raise 'steps' of step 'controlled_rounding' (e.g. to 2)"
    )):  # fmt: skip
        round_cube(cube, _step(base=3))
    rounded = round_cube(cube, _step(base=3, steps=2))
    assert _assert_valid(cube, rounded, 3, steps=2) == _brute_force(cube, 3, steps=2) == 30
    assert np.any(np.abs(rounded["noise"].values) >= 3)  # some cell had to move beyond an adjacent multiple


def test_a_cube_of_multiples_of_the_base_is_published_unchanged() -> None:
    cube = _three_way([[[3, 0], [6, 9]], [[0, 3], [12, 3]]])
    rounded = round_cube(cube, _step(base=3))
    np.testing.assert_array_equal(rounded["count"].values, cube["count"].values)
    assert _report(rounded)["variables"] == 0 and _report(rounded)["objective"] == 0


@pytest.mark.parametrize(
    ("solution", "step", "expected"),
    [
        (Solution(None, "no_solution", None, 1.0, None, 12, 6, 10, 0.0, 5.0), _step(time_limit_s=5),
         "the solver found no controlled rounding of cube 'c1' within 5 s; raise 'time_limit_s' of step "
         "'controlled_rounding', or raise 'steps' to make one easier to find, or set 'fallback' to 'rapid'"),
        (Solution(np.zeros(3, dtype=np.int64), "time_limit", 20, 15.0, 0.25, 12, 6, 10, 0.0, 60.0), _step(),
         "the solver did not prove the controlled rounding of cube 'c1' optimal within 60 s (gap 25.00%); raise "
         "'time_limit_s' of step 'controlled_rounding', or set 'stop' to 'time_limit' or 'first_feasible'"),
        # HiGHS found none in time but CP-SAT's existence check found a zero-restricted rounding (no gap known)
        (Solution(np.zeros(3, dtype=np.int64), "first_feasible", 20, None, None, 12, 6, 10, 0.0, 60.0), _step(),
         "the solver did not prove the controlled rounding of cube 'c1' optimal within 60 s (only a rounding found "
         "by the existence check, with no bound on its distance from the optimum); raise 'time_limit_s' of step "
         "'controlled_rounding', or set 'stop' to 'time_limit' or 'first_feasible'"),
    ],
)  # fmt: skip
def test_a_solve_stopped_by_the_time_limit_says_what_to_raise(
    solution: Solution, step: ControlledRoundingStep, expected: str
) -> None:
    with pytest.raises(CubeguardError) as info:
        _accepted(solution, step, "c1")
    assert str(info.value) == expected


def test_time_limit_accepts_the_best_rounding_found() -> None:
    solution = Solution(np.zeros(3, dtype=np.int64), "time_limit", 20, 15.0, 0.25, 12, 6, 10, 0.0, 60.0)
    assert _accepted(solution, _step(stop="time_limit"), "c1") is solution.published


def test_a_release_rounds_every_cube_through_the_config(tmp_path: Path) -> None:
    original, protected, steps = protect_tiny(tmp_path, "  - {method: controlled_rounding, base: 3}\n")
    assert public_step(steps[0]) == {
        "method": "controlled_rounding", "name": "controlled_rounding", "cubes": "all",
        "parameters": {"base": 3, "steps": 1, "stop": "optimal", "time_limit_s": 60.0,
                       "partition_above_cells": 20000, "block_cells": 1000, "fallback": "none", "hold": []},
    }  # fmt: skip
    assert set(protected) == {"c1", "c2", "hh"}
    for cid, cube in protected.items():
        _assert_valid(original[cid], cube, 3)
        report = _report(cube)
        assert set(report) == REPORT_KEYS and report["status"] == "optimal" and report["gap"] == 0
        assert report["cells"] == cube["count"].size
        assert cube.attrs["steps"] == ["controlled_rounding"]


def test_rounding_after_the_cell_key_method_keeps_noise_the_change_from_the_original(tmp_path: Path) -> None:
    original, protected, _ = protect_tiny(tmp_path, CELL_KEY + "  - {method: controlled_rounding, steps: 2}\n")
    for cid, cube in protected.items():
        after, before = cube["count"].values, original[cid]["count"].values
        assert check_additivity(cube).additive and np.all(after % 3 == 0)
        np.testing.assert_array_equal(cube["noise"].values, after - before)
        assert cube.attrs["steps"] == ["cell_key", "controlled_rounding"]


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ("  - {method: controlled_rounding, hold: [[SEX, GEO.9]]}\n",
         r"steps\[0\]\.hold\[0\]\[1\] \(c\.yaml line \d+\): unknown breakdown 'GEO\.9'; name a breakdown id"),
        ("  - {method: controlled_rounding, hold: [[SEX]], fallback: rapid}\n",
         r"steps\[0\]\.fallback \(c\.yaml line \d+\): RAPID publishes each total as the sum of its rounded interior, "
         r"so it cannot keep the margin cells of 'hold' at the value other cubes publish; set 'fallback' to 'none'"),
        ("  - {method: controlled_rounding, base: 5}\n" + CELL_KEY,
         r"steps\[0\]\.cubes \(c\.yaml line \d+\): cube 'c1' \(and 2 more\) is protected again by steps\[1\] "
         r"\(cell_key\) after this step, so its counts would no longer all be multiples of 5 and add up; make "
         r"this step the last of each cube it protects, or restrict 'cubes'"),
    ],
)  # fmt: skip
def test_each_mistake_gives_a_located_config_error(tmp_path: Path, steps: str, expected: str) -> None:
    found = config_problems(tmp_path, steps)
    assert len(found) == 1 and re.match(expected, found[0]), found


def test_rounding_may_follow_other_steps_and_round_only_some_cubes(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    steps = "  - {method: controlled_rounding, base: 5, cubes: [c1]}\n  - {method: cell_key, name: ck2, D: 5, V: 3, cubes: [c2]}\n"
    path.write_text(TINY_CONFIG.replace(CELL_KEY, CELL_KEY.replace("js: 2", "js: 2, cubes: [c1]") + steps))
    loaded = load_release(path).config.steps
    assert [(s.method, getattr(s, "base", None)) for s in loaded] == [
        ("cell_key", None), ("controlled_rounding", 5), ("cell_key", None),
    ]  # fmt: skip

"""Controlled rounding of large tables block by block, cells held fixed, steps escalated, and the RAPID fallback (Handbook on SDC v2, 5.5.1)."""

from __future__ import annotations

import doctest
import json
import re

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cubeguard.cubes.tree import DimHierarchy, hierarchies
from cubeguard.errors import CubeguardError
from cubeguard.gates.additivity import check_additivity
from cubeguard.methods import cells
from cubeguard.methods.controlled_rounding import (
    REPORT_ATTR,
    ControlledRoundingStep,
    controlled_round,
    method,
    partition,
    round_cube,
)
from cubeguard.methods.controlled_rounding.kernel import Solution, additivity_rows
from cubeguard.methods.controlled_rounding.method import _accepted
from cubeguard.methods.controlled_rounding.partition import partitioned_round, rapid
from tests.strategies import build_cube, cubes, flat_tree, two_level_tree


def _step(**kwargs: object) -> ControlledRoundingStep:
    return ControlledRoundingStep(method="controlled_rounding", **kwargs)  # type: ignore[arg-type]


def _census(groups: int, per_group: int, seed: int, dims: int = 3) -> xr.Dataset:
    """Census-like counts (Poisson with a gamma(0.5, mean 3) mean) on ``dims`` two-level hierarchies."""
    trees = {f"V{k}": two_level_tree(f"v{k}", groups, per_group) for k in range(dims)}
    rng = np.random.default_rng(seed)
    counts = rng.poisson(rng.gamma(0.5, 6.0, (groups * per_group,) * dims))
    return build_cube(trees, counts).assign_attrs(cube_id="census")


def _flat3(n: int, seed: int) -> xr.Dataset:
    """Census-like counts on three flat variables of ``n`` categories each."""
    trees = {f"V{k}": flat_tree(f"v{k}T", *[f"v{k}{j}" for j in range(n)]) for k in range(3)}
    rng = np.random.default_rng(seed)
    return build_cube(trees, rng.poisson(rng.gamma(0.5, 6.0, (n, n, n))))


def _table(cube: xr.Dataset) -> tuple[np.ndarray, list[DimHierarchy]]:
    found = hierarchies(cube)
    return cube["count"].values.astype(np.int64), [found[str(d)] for d in cube["count"].dims]


def _report(cube: xr.Dataset) -> dict[str, object]:
    report: dict[str, object] = json.loads(cube.attrs[REPORT_ATTR])
    return report


def _assert_additive_multiples(counts: np.ndarray, hier: list[DimHierarchy], published: np.ndarray, base: int) -> None:
    assert not np.any(additivity_rows(hier) @ published.ravel())
    assert np.all(published % base == 0) and np.all(published >= 0)
    assert published.shape == counts.shape


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(cube=cubes(max_dims=3, max_count=20).filter(lambda c: 20 <= c["count"].size <= 400),
       base=st.integers(2, 5), block=st.integers(10, 60))  # fmt: skip
def test_a_partitioned_table_is_additive_and_each_cell_within_the_steps_it_reports(
    cube: xr.Dataset, base: int, block: int
) -> None:
    counts, hier = _table(cube)
    solution = partitioned_round(counts, hier, base, 3, "optimal", 60.0, block)
    if solution.published is None:  # a block held by earlier blocks may have no rounding within 3 steps
        assert solution.status == "infeasible"
        return
    _assert_additive_multiples(counts, hier, solution.published, base)
    assert solution.steps_used is not None and 1 <= solution.steps_used <= 3
    assert np.all(np.abs(solution.published - counts) < solution.steps_used * base)
    assert solution.objective == int(np.abs(solution.published - counts).sum())
    assert solution.bound is not None and solution.bound <= solution.objective


def test_a_table_within_one_block_is_rounded_whole_and_optimal() -> None:
    counts, hier = _table(_census(2, 3, seed=5, dims=2))
    whole = controlled_round(counts, hier, 3)
    block = partitioned_round(counts, hier, 3, 1, "optimal", 60.0, counts.size)
    assert block.status == whole.status == "optimal" and block.blocks == 1
    np.testing.assert_array_equal(block.published, whole.published)


def test_three_hierarchical_variables_need_two_steps_and_blocks_find_them() -> None:
    # Census-like 3-D tables with a two-level hierarchy on each variable have no zero-restricted
    # rounding (HiGHS proves it at once); two steps round them, whole and block by block.
    counts, hier = _table(_census(2, 3, seed=0))
    assert controlled_round(counts, hier, 3, steps=1).status == "infeasible"
    whole = controlled_round(counts, hier, 3, steps=2)
    assert whole.status == "optimal" and whole.steps_used == 2
    blocks = partitioned_round(counts, hier, 3, 2, "optimal", 60.0, 100)
    assert blocks.status == "partitioned" and blocks.blocks > 1 and blocks.steps_used == 2
    _assert_additive_multiples(counts, hier, blocks.published, 3)
    assert whole.objective is not None and blocks.objective is not None
    assert whole.objective <= blocks.objective  # blocks hold earlier slabs: never better than the whole


def test_blocks_give_the_same_table_whatever_the_number_of_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    counts, hier = _table(_census(3, 3, seed=1))
    two = partitioned_round(counts, hier, 3, 2, "optimal", 60.0, 150)
    monkeypatch.setattr(partition, "WORKERS", 1)
    one = partitioned_round(counts, hier, 3, 2, "optimal", 60.0, 150)
    assert two.blocks == one.blocks > 1
    np.testing.assert_array_equal(two.published, one.published)


def test_held_cells_keep_their_value_and_count_in_the_objective() -> None:
    dims = {"AREA": flat_tree("T", "a", "b", "c"), "SEX": flat_tree("T", "m", "f")}
    cube = build_cube(dims, np.array([[1, 0], [3, 3], [12, 20]]))
    counts, hier = _table(cube)
    fixed = np.full(counts.shape, -1, dtype=np.int64)
    fixed[0, 0] = 45  # the grand total, held one step above its nearest multiple (39 -> 45)
    solution = controlled_round(counts, hier, 3, steps=2, fixed=fixed)
    assert solution.published is not None and solution.published[0, 0] == 45
    _assert_additive_multiples(counts, hier, solution.published, 3)
    assert solution.objective == int(np.abs(solution.published - counts).sum())


def test_rapid_rounds_the_interior_to_the_nearest_multiple_and_sums_every_total() -> None:
    counts, hier = _table(_census(2, 3, seed=2))
    published = rapid(counts, hier, 3)
    _assert_additive_multiples(counts, hier, published, 3)
    inner = np.ix_(*[np.flatnonzero(h.is_leaf) for h in hier])
    residual = counts[inner] % 3
    np.testing.assert_array_equal(published[inner], counts[inner] - residual + np.where(residual == 2, 3, 0))


def test_the_rapid_fallback_publishes_what_no_rounding_within_the_steps_could() -> None:
    cube = _census(2, 3, seed=0).assign_attrs(cube_id="c3")
    with pytest.raises(CubeguardError, match=re.escape("cube 'c3' has no controlled rounding to base 3")):
        round_cube(cube, _step(base=3))
    rounded = round_cube(cube, _step(base=3, fallback="rapid"))
    report = _report(rounded)
    assert report["status"] == "rapid" and report["gap"] is None
    assert check_additivity(rounded).additive
    deviation = np.abs(rounded["count"].values - cube["count"].values)
    assert report["objective"] == int(deviation.sum())
    assert isinstance(report["steps_used"], int) and deviation.max() < report["steps_used"] * 3


def test_a_cube_above_the_partition_size_is_rounded_block_by_block() -> None:
    cube = _census(2, 3, seed=3)
    rounded = round_cube(cube, _step(base=3, steps=2, partition_above_cells=100, block_cells=100))
    report = _report(rounded)
    assert report["status"] == "partitioned" and report["blocks"] > 1 and report["steps_used"] == 2  # type: ignore[operator]
    assert check_additivity(rounded).additive


def test_a_block_without_a_rounding_says_what_to_raise() -> None:
    failed = Solution(None, "infeasible", None, None, None, 30_000, 10, 20, 0.0, 0.1, None, 4, whole=False)
    with pytest.raises(CubeguardError) as info:
        _accepted(failed, _step(base=3), "c4")
    assert str(info.value) == (
        "a block of cube 'c4' (rounded block by block, above partition_above_cells) has no controlled rounding to "
        "base 3 within 1 step(s) given the totals already held; raise 'steps' (e.g. to 2) or 'block_cells' of step "
        "'controlled_rounding', or set 'fallback' to 'rapid'"
    )


def test_with_hold_the_error_does_not_offer_rapid() -> None:
    failed = Solution(None, "infeasible", None, None, None, 30_000, 10, 20, 0.0, 0.1, None, 4, whole=False)
    with pytest.raises(CubeguardError) as info:
        _accepted(failed, _step(base=3, hold=[["GEO"]]), "c4")
    assert str(info.value).endswith("raise 'steps' (e.g. to 2) or 'block_cells' of step 'controlled_rounding'")


def test_when_blocks_fail_the_whole_table_is_solved_in_the_time_left() -> None:
    # Three flat variables: the whole table has a zero-restricted rounding, the blocks (faces held) do not.
    cube = _flat3(7, seed=7).assign_attrs(cube_id="flat")
    counts, hier = _table(cube)
    assert partitioned_round(counts, hier, 3, 1, "optimal", 60.0, 50).status == "infeasible"
    rounded = round_cube(cube, _step(base=3, partition_above_cells=100, block_cells=50))
    report = _report(rounded)
    assert report["status"] == "optimal" and report["blocks"] == 1 and report["steps_used"] == 1
    cube3 = _census(2, 3, seed=0).assign_attrs(cube_id="c4")  # blocks fail, and the whole is proven to fail
    with pytest.raises(CubeguardError, match=re.escape("cube 'c4' has no controlled rounding to base 3 with every")):
        round_cube(cube3, _step(base=3, partition_above_cells=100, block_cells=100))


def test_a_part_whose_block_has_no_rounding_is_solved_again_as_one_program(monkeypatch: pytest.MonkeyPatch) -> None:
    # Blocks of at most 40 free cells hold a face along every variable; one of them has no rounding
    # within two steps, the part around it (fewer faces held) has one.
    counts, hier = _table(_census(2, 3, seed=0))
    monkeypatch.setattr(partition, "MERGE_FACTOR", 0)
    assert partitioned_round(counts, hier, 3, 2, "optimal", 60.0, 40).status == "infeasible"
    monkeypatch.undo()
    merged = partitioned_round(counts, hier, 3, 2, "optimal", 60.0, 40)
    assert merged.status == "partitioned" and merged.merged >= 1 and merged.published is not None
    _assert_additive_multiples(counts, hier, merged.published, 3)
    assert np.all(np.abs(merged.published - counts) < 2 * 3)


def test_a_merged_part_stops_at_its_first_rounding(monkeypatch: pytest.MonkeyPatch) -> None:
    counts, hier = _table(_census(2, 3, seed=0))
    stops: list[str] = []
    solve_block = partition._solve_block

    def spy(*args: object) -> object:
        stops.append(args[3][2])  # type: ignore[index]
        return solve_block(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(partition, "_solve_block", spy)
    merged = partitioned_round(counts, hier, 3, 2, "optimal", 60.0, 40)
    assert merged.merged >= 1 and stops.count("first_feasible") == merged.merged
    assert stops.count("optimal") == merged.blocks - merged.merged


def test_a_table_above_the_whole_table_size_is_not_solved_whole_when_its_blocks_fail(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cube = _flat3(7, seed=7).assign_attrs(cube_id="flat")  # solved whole below the limit (test above)
    monkeypatch.setattr(method, "WHOLE_TABLE_MAX_CELLS", 100)
    with pytest.raises(CubeguardError, match=re.escape("a block of cube 'flat' (rounded block by block")):
        round_cube(cube, _step(base=3, partition_above_cells=100, block_cells=50))


@pytest.mark.parametrize("module", [partition, cells])  # cells: held_sets, shared with stochastic perturbation
def test_the_examples_run(module: object) -> None:
    outcome = doctest.testmod(module)  # type: ignore[arg-type]
    assert outcome.attempted >= 1 and outcome.failed == 0


def _programme(seed: int) -> dict[str, xr.Dataset]:
    """Three cubes of one population: GEO x SEX x AGE, and its GEO x SEX and GEO x AGE margins as cubes of their own."""
    trees = {"GEO": two_level_tree("g", 2, 3), "SEX": flat_tree("S_T", "m", "f"), "AGE": flat_tree("A_T", "y", "o")}
    rng = np.random.default_rng(seed)
    inner = rng.poisson(rng.gamma(0.5, 6.0, (6, 2, 2)))
    return {
        "gsa": build_cube(trees, inner).assign_attrs(cube_id="gsa"),
        "gs": build_cube({k: trees[k] for k in ("GEO", "SEX")}, inner.sum(axis=2)).assign_attrs(cube_id="gs"),
        "ga": build_cube({k: trees[k] for k in ("GEO", "AGE")}, inner.sum(axis=1)).assign_attrs(cube_id="ga"),
    }


def _shared_cells_agree(out: dict[str, xr.Dataset]) -> bool:
    gsa = out["gsa"]["count"]
    return bool(
        np.array_equal(gsa.sel(AGE="A_T").values, out["gs"]["count"].values)
        and np.array_equal(gsa.sel(SEX="S_T").values, out["ga"]["count"].values)
    )


@pytest.mark.parametrize("seed", range(6))
def test_held_margins_publish_a_shared_cell_the_same_in_every_cube(seed: int) -> None:
    cubes_ = _programme(seed)
    step = _step(base=3, steps=2, hold=[["GEO", "SEX"], ["GEO", "AGE"]])
    out = {cid: round_cube(cube, step) for cid, cube in cubes_.items()}
    assert _shared_cells_agree(out)
    for cube in out.values():
        assert check_additivity(cube).additive and np.all(cube["count"].values % 3 == 0)
        assert _report(cube)["held_cells"] > 0  # type: ignore[operator]


def test_without_hold_some_shared_cell_differs_between_cubes() -> None:
    step = _step(base=3, steps=2)
    differs = [not _shared_cells_agree({c: round_cube(k, step) for c, k in _programme(s).items()}) for s in range(6)]
    assert any(differs)  # so the test above is not met by chance


def test_a_held_margin_table_without_a_rounding_names_the_table() -> None:
    cube = _census(2, 3, seed=0).assign_attrs(cube_id="c5")  # three hierarchies: no zero-restricted rounding
    with pytest.raises(CubeguardError) as info:
        round_cube(cube, _step(base=3, hold=[["V0", "V1", "V2"]]))
    assert str(info.value) == (
        "cube 'c5': the margin table over V0 x V1 x V2 named in 'hold' of step 'controlled_rounding' got no proven "
        "optimal rounding within 1 step(s) and 60 s (infeasible), so other cubes could publish it differently; "
        "raise 'steps' or 'time_limit_s', or hold fewer breakdowns"
    )


def test_many_children_are_rounded_through_unpublished_groups_and_stay_additive() -> None:
    cube = _flat3(9, seed=11)
    counts, hier = _table(cube)
    solution = partitioned_round(counts, hier, 3, 2, "optimal", 60.0, 150)  # 729 free cells in the last block
    assert solution.status == "partitioned" and solution.blocks > 10 and solution.published is not None
    _assert_additive_multiples(counts, hier, solution.published, 3)
    assert np.all(np.abs(solution.published - counts) < 2 * 3)


def test_a_failed_partition_says_so_in_its_solution() -> None:
    counts, hier = _table(_census(2, 3, seed=0))
    failed = partitioned_round(counts, hier, 3, 1, "optimal", 60.0, 100)
    assert failed.published is None and failed.status == "infeasible" and not failed.whole
    assert failed.cells == counts.size and failed.blocks >= 1


def test_first_feasible_stops_at_the_first_rounding_found() -> None:
    # HiGHS stops this one at its solution limit before proving optimality (a status of its own).
    cube = _flat3(8, seed=0)
    counts, hier = _table(cube)
    first = controlled_round(counts, hier, 3, stop="first_feasible")
    best = controlled_round(counts, hier, 3)
    assert first.status == "first_feasible" and best.status == "optimal"
    assert first.published is not None and first.objective is not None and best.objective is not None
    _assert_additive_multiples(counts, hier, first.published, 3)
    assert first.objective > best.objective  # it did stop early


@pytest.mark.parametrize(
    ("status", "published", "gap"),
    [("infeasible", None, None), ("time_limit", None, None), ("time_limit", np.zeros(1, dtype=np.int64), 0.005)],
)
def test_a_large_cube_solved_whole_is_advised_to_go_block_by_block(status: str, published: object, gap: object) -> None:
    failed = Solution(published, status, None, None, gap, 4_368, 10, 20, 0.0, 60.0, None, 1, whole=True)  # type: ignore[arg-type]
    with pytest.raises(CubeguardError) as info:
        _accepted(failed, _step(base=3, steps=2 if published is not None else 1), "t4")
    assert "set 'partition_above_cells' below its 4,368 cells, e.g. to 1,092" in str(info.value)
    small = Solution(None, "infeasible", None, None, None, 900, 10, 20, 0.0, 0.1, None, 1, whole=True)
    with pytest.raises(CubeguardError) as info:
        _accepted(small, _step(base=3), "t4")
    assert "partition_above_cells" not in str(info.value)  # a small table solves whole

"""The attacks of cubeguard.attack on small hand-made cubes: each finds what it should, and only that."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import xarray as xr

from cubeguard.attack import CubeView, Limits, Link, attack_release
from cubeguard.attack.intervals import Infeasible, Relations, propagate
from cubeguard.attack.run import AttackReport
from cubeguard.attack.score import AttackFacts

X = (["T", "a", "b"], ["", "T", "T"])
Y = (["T", "m", "f"], ["", "T", "T"])
SIZE = (["T", "1", "2"], ["", "T", "T"])


def _cube(
    cube: str, dims: dict[str, tuple[list[str], list[str]]], counts: list, population: str = "total"
) -> xr.Dataset:  # type: ignore[type-arg]
    coords: dict[str, object] = {}
    for d, (codes, parents) in dims.items():
        coords[d] = codes
        coords[f"{d}.parent"] = (d, parents)
    return xr.Dataset(
        {"count": (list(dims), np.array(counts, dtype=np.int64))},
        coords=coords,
        attrs={"cube_id": cube, "population": population, "variables": {d: d.split(".")[0] for d in dims}},
    )


def _view(cube: xr.Dataset, published: list) -> CubeView:  # type: ignore[type-arg]
    return CubeView.of(cube.copy(data={"count": np.array(published, dtype=np.int64)}), cube)


def exact(published: np.ndarray, interior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return published.astype(float), published.astype(float)


def plus_minus(d: int):  # type: ignore[no-untyped-def]
    def bounds(published: np.ndarray, interior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.maximum(published - d, 0).astype(float), (published + d).astype(float)

    return bounds


def _facts(report: AttackReport, attack: str, cube: str) -> AttackFacts:
    return next(f for f in report.published if f.attack == attack and f.cube == cube)


def test_feasibility_unpicks_a_cell_from_exact_margins_and_reports_it() -> None:
    """Total exact, one child exact: the other child is their difference, though its own bound is wide."""
    cube = _cube("c", {"X": X}, [3, 1, 2])
    a, b = _view(cube, [3, 4, 2]), None
    del b

    def bounds(published: np.ndarray, interior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = published.astype(float), published.astype(float)
        lo[1], hi[1] = 0, 9  # the cell 'a' is perturbed widely; the total and 'b' are exact
        return lo, hi

    report = attack_release([a], {"c": bounds})
    found = _facts(report, "feasibility", "c")
    assert (found.targets, found.certain) == (2, 2)
    assert found.named == ("X=a", "X=b")
    assert report.recovered("c") == 2 and report.broken == []


def test_noise_of_d_leaves_nothing_certain() -> None:
    cube = _cube("c", {"X": X, "Y": Y}, [[6, 2, 4], [3, 1, 2], [3, 1, 2]])
    view = _view(cube, [[7, 0, 5], [3, 0, 4], [4, 3, 0]])
    report = attack_release([view], {"c": plus_minus(2)})
    assert report.recovered("c") == 0
    assert _facts(report, "feasibility", "c").targets == 5
    assert report.missed("c") == 0  # on the unprotected counts every small cell is found


def test_differencing_pins_a_cell_that_neither_cube_gives_away_alone() -> None:
    """Cube A (X) knows the total; cube B (X x Y) knows b's total: a = T - b, in A."""
    a_cube = _cube("A", {"X": X}, [3, 1, 2])
    b_cube = _cube("B", {"X": X, "Y": Y}, [[3, 2, 1], [1, 1, 0], [2, 1, 1]])
    a = _view(a_cube, [3, 0, 0])
    b = _view(b_cube, [[0, 0, 0], [0, 0, 0], [2, 0, 0]])

    def a_bounds(published: np.ndarray, interior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = np.zeros(3), np.full(3, 9.0)
        lo[0] = hi[0] = 3
        return lo, hi

    def b_bounds(published: np.ndarray, interior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = np.zeros((3, 3)), np.full((3, 3), np.inf)
        lo[2, 0] = hi[2, 0] = 2
        return lo, hi

    report = attack_release([a, b], {"A": a_bounds, "B": b_bounds})
    assert _facts(report, "feasibility", "A").certain == 0
    assert _facts(report, "differencing", "A").certain == 2  # a = 3 - 2 = 1, and b = 2
    assert _facts(report, "differencing", "A").named == ("X=a", "X=b")


def test_linking_persons_to_households_through_household_size() -> None:
    """Persons in households of two: 3 to 5, so 2 households; the households cube alone says 0 to 4."""
    persons = _cube("p", {"SIZE": SIZE}, [5, 1, 4], population="persons")
    homes = _cube("h", {"SIZE": SIZE}, [3, 1, 2], population="households")
    p = _view(persons, [5, 1, 4])
    h = _view(homes, [3, 1, 2])

    def wide(published: np.ndarray, interior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.maximum(published - 1, 0).astype(float), (published + 1).astype(float)

    def wider(published: np.ndarray, interior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.maximum(published - 2, 0).astype(float), (published + 2).astype(float)

    link = Link("SIZE", {"1": 1, "2": 2}, "persons", "households")
    report = attack_release([p, h], {"p": wide, "h": wider}, link=link)
    assert _facts(report, "differencing", "h").certain == 0
    found = _facts(report, "linking", "h")
    assert (found.certain, found.named) == (1, ("SIZE=2",))  # size 2: persons 3..5 -> exactly 2 households
    unlinked = attack_release([p, h], {"p": wide, "h": wider})
    assert not [f for f in unlinked.published if f.attack == "linking"]


def test_averaging_guesses_the_mean_of_a_cell_published_in_several_cubes() -> None:
    one = _cube("A", {"X": X}, [3, 1, 2])
    two = _cube("B", {"X": X, "Y": Y}, [[3, 2, 1], [1, 1, 0], [2, 1, 1]])
    a = _view(one, [4, 0, 4])
    b = _view(two, [[2, 2, 0], [2, 2, 0], [0, 0, 0]])  # 'a' read as 0 and 2: the mean, 1, is the original
    report = attack_release([a, b], {"A": plus_minus(3), "B": plus_minus(3)})
    found = _facts(report, "averaging", "A")
    assert found.targets == 2 and found.certain == 0
    assert found.guessed == 2  # 'a': (0 + 2) / 2 = 1; 'b': (4 + 0) / 2 = 2
    assert _facts(report, "averaging", "A").base_rate == 1


def test_a_bound_that_excludes_the_original_is_a_bug_not_a_finding() -> None:
    lo, hi = np.array([3, 0, 0]), np.array([3, 1, 1])
    with pytest.raises(Infeasible, match="a method's bounds are wrong"):
        propagate(lo, hi, [Relations.of([-1, 0, 0])])


def test_a_broken_attack_is_named_by_its_self_test() -> None:
    report = AttackReport(
        (
            AttackFacts("feasibility", "c", 4, 3, 3, 0, 3, 2, unprotected=True),
            AttackFacts("averaging", "c", 4, 0, 0, -1, 4, 2, unprotected=True),
        )
    )
    assert report.broken == ["feasibility"] and report.missed("c") == 1


def test_limits_keep_linear_programs_bounded() -> None:
    cube = _cube("c", {"X": X, "Y": Y}, [[6, 2, 4], [3, 1, 2], [3, 1, 2]])
    view = _view(cube, [[6, 2, 4], [3, 1, 2], [3, 1, 2]])
    report = attack_release([view], {"c": plus_minus(1)}, Limits(lp_cells=0))
    assert report.recovered("c") >= 0  # runs with no linear program at all


def test_cell_keys_are_dense_and_equal_only_for_the_same_population_and_codes() -> None:
    from cubeguard.attack.cells import CellIndex

    a = _view(_cube("A", {"X": X}, [3, 1, 2]), [3, 1, 2])
    b = _view(_cube("B", {"X": X, "Y": Y}, [[3, 2, 1], [1, 1, 0], [2, 1, 1]]), [[3, 2, 1], [1, 1, 0], [2, 1, 1]])
    h = _view(_cube("H", {"X": X}, [3, 1, 2], population="households"), [3, 1, 2])
    keys = CellIndex.of([a, b, h]).keys
    assert sorted({int(k) for ks in keys.values() for k in ks}) == list(range(3 + 6 + 3))  # 12 distinct cells
    assert list(keys["A"]) == list(keys["B"].reshape(3, 3)[:, 0])  # A's cells are B's Y totals
    assert not set(keys["H"].tolist()) & set(keys["A"].tolist())  # households are other units


def test_an_earlier_publication_of_the_same_cube_intersects_its_noise() -> None:
    """Each publication alone is within +-2; an intruder holding both intersects the ranges (issue 35)."""
    cube = _cube("c", {"X": X}, [3, 2, 1])
    now = _view(cube, [5, 4, 3])  # every cell n + 2
    then = replace(_view(cube, [1, 0, 0]), cube="c@r1")  # n - 2, floored at 0
    alone = attack_release([now], {"c": plus_minus(2)})
    both = attack_release([now, then], {"c": plus_minus(2), "c@r1": plus_minus(2)})
    assert alone.recovered("c") == 0
    assert _facts(both, "differencing", "c").certain == 2  # a: [2, 6] and [0, 2] leave 2; T = 3 exact too, so b = 1
    assert both.recovered("c") >= 1 and both.broken == []

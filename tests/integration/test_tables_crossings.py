"""Tables summed from the finest crossings tabulated when a release is served equal tables tabulated from the records."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from cubeguard.cubes.hierarchy import Breakdown
from cubeguard.cubes.margins import expand_all
from cubeguard.tables.crossings import Crossings
from cubeguard.tables.derive import Refinements
from cubeguard.tables.describe import describe_release
from cubeguard.tables.engine import TableEngine
from cubeguard.tables.query import TableQuery
from cubeguard.tables.served import open_served
from tests.integration.test_tables_engine import _random_query, served  # noqa: F401  (fixture)
from tests.tables_release import publish


def test_every_table_of_the_default_population_is_summed_from_a_crossing(served: tuple[Path, TableEngine]) -> None:  # noqa: F811
    config, _ = served
    engine = open_served(config)
    shutil.rmtree(engine.store.folder / "crossings", ignore_errors=True)  # none written by an earlier test
    assert describe_release(engine)["precomputed"] == {"ready": 0, "planned": len(engine.crossings.planned)}
    opened = engine.passes  # the consistency check on opening tabulates a few tables
    engine.build_crossings(workers=2)
    built = engine.passes - opened
    assert built == len(engine.crossings.planned) == engine.crossings.ready > 0
    assert describe_release(engine)["precomputed"]["ready"] == built
    rng = np.random.default_rng(5)
    default = engine.spec.populations[0]
    summed = 0
    for _ in range(60):
        query = _random_query(engine, rng)
        bds = [engine.offered[b] for b in query.breakdowns]
        fresh = open_served(config)  # no crossings: one pass over the records per table
        counts, key_sums = fresh._tabulated(query, bds)
        before = engine.passes
        mine, my_keys = engine._full(query, bds)
        np.testing.assert_array_equal(mine, expand_all(counts, bds))
        np.testing.assert_array_equal(my_keys, expand_all(key_sums, bds))
        if (
            query.population == default
            and not query.filters
            and len({b.classification.variable for b in bds}) == len(bds)
        ):
            assert engine.passes == before  # summed, not tabulated
            summed += 1
    assert summed >= 10


def test_answers_with_crossings_equal_answers_without(served: tuple[Path, TableEngine]) -> None:  # noqa: F811
    config, _ = served
    plain, fast = open_served(config), open_served(config)
    fast.build_crossings(workers=1)
    rng = np.random.default_rng(9)
    for _ in range(40):
        query = _random_query(rng=rng, engine=plain)
        np.testing.assert_array_equal(fast.tabulate(query)["count"].values, plain.tabulate(query)["count"].values)


def test_crossings_are_planned_smallest_first_within_the_budget(served: tuple[Path, TableEngine]) -> None:  # noqa: F811
    _, engine = served
    everything = Crossings(engine.offered, 2, 10**9, Refinements())
    sizes = [math.prod(b.n_bottom for b in c) for c in everything.planned]
    assert sizes == sorted(sizes) and len(everything.planned) == math.comb(
        len({b.classification.variable for b in engine.offered.values()}), 2
    )
    assert all(len({b.classification.variable for b in c}) == 2 for c in everything.planned)  # the finest level of each
    budget = sizes[0] + sizes[1]
    some = Crossings(engine.offered, 2, budget, Refinements())
    assert len(some.planned) == 2 and some.cells == budget
    assert Crossings(engine.offered, 2, 0, Refinements()).planned == []


def test_a_table_with_a_variable_twice_is_not_summed_from_a_crossing(served: tuple[Path, TableEngine]) -> None:  # noqa: F811
    _, engine = served
    crossings = Crossings(engine.offered, 3, 10**9, Refinements())
    assert crossings.derive([engine.offered["AGE.L"], engine.offered["AGE.M"]]) is None


def test_a_table_asked_before_its_crossing_is_ready_is_summed_from_it_after(served: tuple[Path, TableEngine]) -> None:  # noqa: F811
    """The ready crossings holding a table's variables are looked up once per variable set, until another is ready."""
    _, engine = served
    crossings = Crossings(engine.offered, 2, 10**9, Refinements())
    sex, geo = engine.offered["SEX"], engine.offered["GEO.1"]
    assert crossings.derive([sex, geo]) is None  # nothing ready: remembered as no crossing
    tabulated = []

    def tabulate(bds: list[Breakdown]) -> dict[str, np.ndarray]:
        tabulated.append([b.id for b in bds])
        query = TableQuery(breakdowns=[b.id for b in bds], population=engine.spec.populations[0])
        return dict(zip(("counts", "key_sums"), engine._tabulated(query, bds), strict=True))

    crossings.build(tabulate, workers=1)
    found = crossings.derive([sex, geo])
    assert found is not None and tabulated
    counts, _ = engine._full(TableQuery(breakdowns=["SEX", "GEO.1"]), [sex, geo])
    np.testing.assert_array_equal(found["counts"], counts)


@pytest.mark.parametrize("workers", [1, 2])
def test_building_twice_keeps_one_table_per_crossing(served: tuple[Path, TableEngine], workers: int) -> None:  # noqa: F811
    config, _ = served
    engine = open_served(config)
    engine.build_crossings(workers)
    engine.build_crossings(workers)
    assert engine.crossings.ready == len(engine.crossings.planned)


def test_a_second_engine_maps_the_crossings_the_first_wrote(served: tuple[Path, TableEngine]) -> None:  # noqa: F811
    """A restart, or another worker process, tabulates nothing: the files are mapped read-only."""
    config, _ = served
    first = open_served(config)
    first.build_crossings(workers=2)
    files = sorted(p.name for p in (first.store.folder / "crossings").glob("*.npy"))
    assert len(files) == 2 * len(first.crossings.planned)
    second = open_served(config)
    opened = second.passes
    second.build_crossings(workers=2)
    assert second.passes == opened  # nothing tabulated
    assert second.crossings.loaded == second.crossings.ready == len(second.crossings.planned)
    rng = np.random.default_rng(9)
    default = second.spec.populations[0]
    for _ in range(30):
        query = _random_query(second, rng)
        query = query.model_copy(update={"population": default, "filters": {}, "mean": None})
        mine = second._full(query, [second.offered[b] for b in query.breakdowns])
        theirs = first._full(query, [first.offered[b] for b in query.breakdowns])
        for a, b in zip(mine[:2], theirs[:2], strict=True):
            np.testing.assert_array_equal(a, b)
    assert second.passes == opened


def test_crossings_stay_in_memory_where_their_folder_cannot_be_written(
    served: tuple[Path, TableEngine],  # noqa: F811
    tmp_path: Path,
) -> None:
    config, _ = served
    engine = open_served(config)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    engine.crossings.folder = blocker / "crossings"  # cannot be made (as a read-only store: root may write anywhere)
    opened = engine.passes
    engine.build_crossings(workers=1)
    assert engine.crossings.folder is None
    assert engine.crossings.ready == len(engine.crossings.planned) == engine.passes - opened
    assert engine.crossings.loaded == 0


def test_a_crossing_file_that_does_not_fit_is_tabulated_again(served: tuple[Path, TableEngine]) -> None:  # noqa: F811
    config, _ = served
    engine = open_served(config)
    engine.build_crossings(workers=1)
    crossings = engine.crossings
    assert crossings.folder is not None
    combo = crossings.planned[0]
    counts_file = crossings._files(crossings.folder, combo)["counts"]
    np.save(counts_file, np.zeros(3, dtype=np.int64))  # another shape: say, left by an older version
    fresh = open_served(config)
    opened = fresh.passes
    fresh.build_crossings(workers=1)
    assert fresh.passes == opened + 1
    assert fresh.crossings.loaded == len(fresh.crossings.planned) - 1
    assert np.load(counts_file).shape == tuple(b.n_bottom for b in combo)


def test_means_of_a_sums_only_perturbation_are_summed_from_crossings_as_from_the_records(
    tmp_path: Path,
) -> None:
    """Type mean reads sums and key sums only: a crossing holds them, and gives the record pass's answer."""
    engine = open_served(publish(tmp_path, magnitudes="mean"))
    assert "sums.age" in engine.crossings.fields
    engine.build_crossings(workers=1)
    fresh = open_served(engine.release.path)  # its crossings not built: every mean from the records
    fresh.crossings._tables.clear()
    summed = 0
    tables = [["SEX"], ["GEO.1"], ["GEO.2", "SEX"], ["SEX", "GEO.1"], ["GEO.2"]]
    for breakdowns in tables:
        query = TableQuery(breakdowns=breakdowns, mean="age")
        before = engine.passes
        mine, theirs = engine.tabulate(query), fresh.tabulate(query)
        summed += engine.passes == before
        assert np.array_equal(mine["count"].values, theirs["count"].values)
        assert np.array_equal(mine["mean"].values, theirs["mean"].values, equal_nan=True)
    assert summed == len(tables)


def test_a_crossing_file_damaged_on_disk_is_tabulated_again_not_summed(served: tuple[Path, TableEngine]) -> None:  # noqa: F811
    config, _ = served
    engine = open_served(config)
    engine.build_crossings(workers=1)
    crossings = engine.crossings
    assert crossings.folder is not None
    combo = crossings.planned[-1]
    counts_file = crossings._files(crossings.folder, combo)["counts"]
    data = bytearray(counts_file.read_bytes())
    data[-8] ^= 0x01  # one bit of the last cell's count: the header still fits
    counts_file.write_bytes(bytes(data))
    fresh = open_served(config)
    opened = fresh.passes
    fresh.build_crossings(workers=1)
    assert fresh.passes == opened + 1  # the damaged crossing only
    query = TableQuery(breakdowns=[b.id for b in combo], population=fresh.spec.populations[0])
    bds = [fresh.offered[b.id] for b in combo]
    other = open_served(config)
    plain, _ = other._tabulated(query, [other.offered[b.id] for b in combo])
    np.testing.assert_array_equal(fresh._full(query, bds)[0], expand_all(plain, bds))  # not the damaged count


def test_a_full_disk_keeps_the_crossings_in_memory_and_leaves_no_part_file(
    served: tuple[Path, TableEngine],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config, _ = served
    engine = open_served(config)
    folder = engine.store.folder / "crossings"
    shutil.rmtree(folder, ignore_errors=True)

    def full(*_args: object, **_kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("cubeguard.tables.crossings.np.save", full)
    opened = engine.passes
    engine.build_crossings(workers=2)
    assert engine.crossings.ready == len(engine.crossings.planned) == engine.passes - opened
    assert not list(folder.glob("*.npy")) and not list(folder.glob(".*.part"))
    rng = np.random.default_rng(3)
    for _ in range(10):
        query = _random_query(engine, rng).model_copy(update={"filters": {}, "mean": None})
        query = query.model_copy(update={"population": engine.spec.populations[0]})
        bds = [engine.offered[b] for b in query.breakdowns]
        plain, _ = open_served(config)._tabulated(query, bds)
        np.testing.assert_array_equal(engine._full(query, bds)[0], expand_all(plain, bds))

"""Tables summed from the finest crossings tabulated when a release is served equal tables tabulated from the records."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from cubeguard.cubes.margins import expand_all
from cubeguard.tables.crossings import Crossings
from cubeguard.tables.derive import Refinements
from cubeguard.tables.describe import describe_release
from cubeguard.tables.engine import TableEngine
from cubeguard.tables.served import open_served
from tests.integration.test_tables_engine import _random_query, served  # noqa: F401  (fixture)


def test_every_table_of_the_default_population_is_summed_from_a_crossing(served: tuple[Path, TableEngine]) -> None:  # noqa: F811
    config, _ = served
    engine = open_served(config)
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
        counts, key_sums, _ = fresh._tabulated(query, bds)
        before = engine.passes
        mine, my_keys, _ = engine._full(query, bds)
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


@pytest.mark.parametrize("workers", [1, 2])
def test_building_twice_keeps_one_table_per_crossing(served: tuple[Path, TableEngine], workers: int) -> None:  # noqa: F811
    config, _ = served
    engine = open_served(config)
    engine.build_crossings(workers)
    engine.build_crossings(workers)
    assert engine.crossings.ready == len(engine.crossings.planned)

"""Means whose perturbation is additive (type ``mean``, as configs/demo.yaml) take the compiled serving path.

A tiny release whose cell key step perturbs age by the cell mean and whose cube c3 publishes the
sums of age. The service must publish its means through :attr:`Magnitude.sums`
(:class:`~cubeguard.ckm.magnitude.additive.AdditiveSums`), never through ``perturbed_sums``, with
the same values bit for bit as the reference path gives, from the records and from the crossings;
the cube's published sums are the service's.
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cubeguard.cubes.store import open_cube
from cubeguard.methods.base import Magnitude
from cubeguard.methods.cell_key import method
from cubeguard.tables.engine import TableEngine
from cubeguard.tables.query import TableQuery
from cubeguard.tables.served import open_served
from tests.conftest import TINY_CONFIG
from tests.tables_release import RELEASE_ID, TABLES, publish

CONFIG = TINY_CONFIG.replace(
    "  - {id: hh, population: households, breakdowns: [GEO.2]}\n",
    "  - {id: hh, population: households, breakdowns: [GEO.2]}\n  - {id: c3, breakdowns: [GEO.2, SEX], sums: [age]}\n",
)
QUERIES = [
    TableQuery(breakdowns=list(b), mean="age")
    for n in (1, 2, 3)
    for b in itertools.combinations(["GEO.2", "SEX", "AGE.M"], n)
] + [
    TableQuery(breakdowns=["SEX", "AGE.L"], filters={"GEO.2": "A2"}, mean="age"),
    TableQuery(breakdowns=["GEO.1", "AGE.L"], mean="age"),
]


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return publish(tmp_path_factory.mktemp("additive"), TABLES, config=CONFIG, magnitudes="mean")


def _counting(engine: TableEngine) -> list[int]:
    """Count the calls of the engine's serving path for age (a list, so the closure can add to it)."""
    found = engine.magnitudes["age"]
    assert found.sums is not None and found.additive
    calls = [0]
    sums = found.sums

    def counted(*args: Any) -> Any:
        calls[0] += 1
        return sums(*args)

    engine.magnitudes["age"] = dataclasses.replace(found, sums=counted)
    return calls


def _reference(engine: TableEngine) -> None:
    """Make ``engine`` publish its means as before: ``perturbed_sums`` of every cell's inputs."""
    engine.magnitudes["age"] = dataclasses.replace(engine.magnitudes["age"], sums=None)


@pytest.mark.parametrize("crossings", [False, True])
def test_mean_tables_take_the_serving_path_with_the_reference_values(
    config: Path, crossings: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, slow = open_served(config), open_served(config)
    if crossings:
        fast.build_crossings(workers=1)
        slow.build_crossings(workers=1)
    _reference(slow)
    expected = [slow.tabulate(q)["mean"].values for q in QUERIES]

    def refused(*args: object) -> None:
        raise AssertionError("a mean table took the reference perturbation (perturbed_sums)")

    monkeypatch.setattr(method, "perturbed_sums", refused)
    calls = _counting(fast)
    for query, mean in zip(QUERIES, expected, strict=True):
        got = fast.tabulate(query)["mean"].values
        np.testing.assert_array_equal(got.view(np.int64), mean.view(np.int64))
    assert calls[0] == len(QUERIES)
    with pytest.raises(AssertionError, match="reference perturbation"):
        slow.tabulate(TableQuery(breakdowns=["GEO.2"], mean="age", filters={"SEX": "1"}))  # the guard works


def test_the_cube_publishes_the_sums_the_service_publishes(config: Path) -> None:
    """c3's published ``sum.age`` is, bit for bit, the serving path's perturbed sum of the same cells."""
    engine = open_served(config)
    magnitude: Magnitude = engine.magnitudes["age"]
    assert magnitude.sums is not None
    cube = open_cube(engine.release.config.output.folder / "published" / RELEASE_ID / "store.zarr", "c3").load()
    query = TableQuery(breakdowns=["GEO.2", "SEX"], mean="age")
    cells = engine._values(query, [engine.offered[b] for b in query.breakdowns])
    scale = engine.store.key_scale
    sums = magnitude.sums(cells["counts"], cells["sums"], cells["key_sums"], cells["nz_key_sums"], scale)
    np.testing.assert_array_equal(sums.view(np.int64), cube["sum.age"].values.view(np.int64))

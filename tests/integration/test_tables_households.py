"""Persons and households tables that cannot be intersected into original counts.

The attack (issue 34, against the demo release): ask the persons table and the households table
GEO x TENURE x SIZE. A persons cell of households of size k holds k persons per household, so
an intruder who knows the cell key method's bound ``D`` intersects the persons' noise range with
k times the households' range; when one count is left, it is the original (one household, five
persons). The intruder knows the method: where the service publishes a persons count of k times
the households' count (derived, :mod:`cubeguard.tables.households`), that figure says nothing
the households figure does not, and it uses only the households' range.

Each attack runs on unprotected counts (where it must recover every cell), on the service with
the link switched off (independent noise: the leak the issue found) and on the service.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from cubeguard.errors import CubeguardError
from cubeguard.tables.engine import TableEngine
from cubeguard.tables.query import TableQuery
from cubeguard.tables.served import open_served
from tests.conftest import load_problems
from tests.tables_release import publish

D = 5  # the release's maximum deviation, known to the intruder (Handbook on SDC v2, 5.7)
AREAS = [f"A{k:02d}" for k in range(1, 41)]
SIZES = """\
  SIZE:
    column: size
    dtype: integer
    codes: [{code: T}, {code: S1, parent: T, values: [1]}, {code: S2, parent: T, values: [2]},
            {code: S3, parent: T, values: [3]}, {code: S4, parent: T, values: [4]},
            {code: S5, parent: T, values: [5]}, {code: S6P, parent: T, range: [6, 9]},
            {code: NA, parent: T, values: [0]}]
    breakdowns: {SIZE: {}}
"""
CONFIG = f"""\
schema_version: 1
name: homes
input: {{microdata: data/persons.parquet, household_columns: [area, tenure, size]}}
variables:
  GEO:
    column: area
    codes: [{{code: "0"}}, {", ".join(f"{{code: {a}, parent: '0'}}" for a in AREAS)}]
    breakdowns: {{GEO.A: {{}}}}
  TEN:
    column: tenure
    codes: [{{code: T}}, {{code: OWN, parent: T}}, {{code: RENT, parent: T}}, {{code: OTHER, parent: T}},
            {{code: NONE, parent: T}}]
    breakdowns: {{TEN: {{}}}}
{SIZES}  SEX:
    column: sex
    codes: [{{code: T}}, {{code: M, parent: T}}, {{code: F, parent: T}}]
    breakdowns: {{SEX: {{}}}}
populations:
  total: {{}}
  households: {{unit: households, where: {{kind: [P]}}}}
hypercubes:
  - {{id: persons, breakdowns: [GEO.A, SEX]}}
  - {{id: homes, population: households, breakdowns: [GEO.A, TEN, SIZE]}}
steps:
  - {{method: cell_key, D: {D}, V: 3, js: 2}}
gates: {{forbidden_values: [1, 2]}}
output: {{folder: out}}
"""
TABLES = """\
tables:
  breakdowns: [GEO.A, TEN, SIZE, SEX]
  populations: [total, households]
  max_dimensions: 4
  household_size: {variable: SIZE, population: households}
"""
QUERY = ["GEO.A", "TEN", "SIZE"]
Source = Callable[[TableQuery], xr.DataArray]
Truth = dict[tuple[str, str, int], int]


def _persons(seed: int = 5) -> pd.DataFrame:
    """4,000 private households of 1 to 9 persons in 40 areas (many small cells), and 300 persons in institutions."""
    rng = np.random.default_rng(seed)
    n_homes = 4000
    size = rng.choice(np.arange(1, 10), n_homes, p=[0.28, 0.3, 0.16, 0.13, 0.06, 0.03, 0.02, 0.01, 0.01])
    area = rng.choice(AREAS, n_homes)
    tenure = rng.choice(["OWN", "RENT", "OTHER"], n_homes, p=[0.6, 0.35, 0.05])
    hid = np.repeat(np.arange(n_homes), size)
    n_inst = 300
    n = hid.size + n_inst
    first = np.r_[True, hid[1:] != hid[:-1]]
    return pd.DataFrame(
        {
            "pid": np.arange(n, dtype=np.int64),
            "hid": np.r_[hid, n_homes + np.arange(n_inst)].astype(np.int64),
            "is_ref": np.r_[first, np.zeros(n_inst, dtype=bool)],
            "kind": pd.Categorical(np.r_[np.full(hid.size, "P"), np.full(n_inst, "I")]),
            "area": pd.Categorical(np.r_[np.repeat(area, size), rng.choice(AREAS, n_inst)]),
            "tenure": pd.Categorical(np.r_[np.repeat(tenure, size), np.full(n_inst, "NONE")]),
            "size": np.r_[np.repeat(size, size), np.zeros(n_inst, dtype=np.int64)].astype(np.int8),
            "sex": pd.Categorical(rng.choice(["M", "F"], n)),
            "rkey": rng.random(n),
        }
    )


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> TableEngine:
    return open_served(publish(tmp_path_factory.mktemp("homes"), tables=TABLES, data=_persons(), config=CONFIG))


def _plain(engine: TableEngine) -> TableEngine:
    """The same release served without noise: every count the original."""
    return TableEngine(engine.release, engine.store, lambda counts, keys, scale: counts.copy(), engine.release_id)


def _unlinked(engine: TableEngine) -> TableEngine:
    """The same release with persons and households perturbed independently (the service before the link)."""
    tables = engine.release.config.tables
    assert tables is not None
    release = dataclasses.replace(
        engine.release,
        config=engine.release.config.model_copy(update={"tables": tables.model_copy(update={"household_size": None})}),
    )
    return TableEngine(release, engine.store, engine.protect, engine.release_id)


def _source(engine: TableEngine) -> Source:
    return lambda q: engine.tabulate(q)["count"]


def _range(p: int, d: int) -> set[int]:
    """Originals a published count ``p`` may come from (zeros stay zero, so p > 0 means at least 1)."""
    return set(range(max(1, p - d), p + d + 1)) if p > 0 else set(range(0, d + 1))


def intersect(source: Source, d: int, truth: dict[tuple[str, str, int], int]) -> list[tuple[int, int]]:
    """(households recovered with certainty, their true count) per cell of exact size, as the intruder finds them."""
    persons = source(TableQuery(breakdowns=QUERY))
    homes = source(TableQuery(breakdowns=QUERY, population="households"))
    found = []
    for area, ten, k in itertools.product(AREAS, ["OWN", "RENT", "OTHER"], range(1, 6)):
        cell = {"GEO.A": area, "TEN": ten, "SIZE": f"S{k}"}
        p, h = int(persons.sel(cell)), int(homes.sel(cell))
        households = _range(h, d)
        if p != k * h:  # a published persons count that is k times the households' adds nothing to them
            households &= {x for x in households if k * x in _range(p, d)}
        if len(households) == 1:
            found.append((households.pop(), truth.get((area, ten, k), 0)))
    return found


@pytest.fixture(scope="module")
def truth() -> dict[tuple[str, str, int], int]:
    """Private households per area, tenure and size."""
    homes = _persons().query("is_ref")
    counts = homes.groupby(["area", "tenure", "size"], observed=True).size()
    return {(str(a), str(t), int(k)): int(n) for (a, t, k), n in counts.items()}


def test_the_intersection_recovers_every_cell_of_unprotected_tables(engine: TableEngine, truth: Truth) -> None:
    found = intersect(_source(_plain(engine)), 0, truth)
    assert len(found) == 40 * 3 * 5 and all(x == n for x, n in found)
    assert sum(n in (1, 2) for _, n in found) >= 100  # small cells among them


def test_independent_noise_lets_the_intersection_recover_small_cells_with_certainty(
    engine: TableEngine, truth: Truth
) -> None:
    """The leak of issue 34: what the service did before persons counts were derived."""
    found = intersect(_source(_unlinked(engine)), D, truth)
    assert found and all(x == n for x, n in found)  # certain, hence right
    assert sum(n in (1, 2) for _, n in found) >= 5


def test_the_service_leaves_the_intersection_nothing_certain(engine: TableEngine, truth: Truth) -> None:
    assert intersect(_source(engine), D, truth) == []


def test_persons_by_household_size_are_size_times_the_published_households(engine: TableEngine) -> None:
    persons = engine.tabulate(TableQuery(breakdowns=QUERY))["count"]
    homes = engine.tabulate(TableQuery(breakdowns=QUERY, population="households"))["count"]
    for k in range(1, 6):
        assert (persons.sel(SIZE=f"S{k}") == k * homes.sel(SIZE=f"S{k}")).all()
    # cells with a person-level category, and sizes that include persons outside households, are perturbed
    by_sex = engine.tabulate(TableQuery(breakdowns=[*QUERY, "SEX"]))["count"]
    assert (by_sex.sel(SEX="T") == persons).all()
    assert int((by_sex.sel(SIZE="S3", SEX="M") % 3 != 0).sum()) > 0


@pytest.mark.parametrize(
    "query",
    [
        TableQuery(breakdowns=[*QUERY, "SEX"]),
        TableQuery(breakdowns=["SIZE", "GEO.A"], filters={"TEN": "RENT"}),
        TableQuery(breakdowns=["GEO.A"], filters={"SIZE": "S6P"}),
    ],
    ids=["crossed", "size-first", "size-band-filter"],
)
def test_derived_counts_are_the_originals_when_nothing_is_perturbed(engine: TableEngine, query: TableQuery) -> None:
    """Without noise the derived persons counts (size band 6 to 9 included) are those tabulated from the records."""
    plain = _plain(engine)
    assert (plain.tabulate(query)["count"] == _unlinked(plain).tabulate(query)["count"]).all()


def test_a_size_filter_derives_the_table_from_the_households(engine: TableEngine) -> None:
    filtered = engine.tabulate(TableQuery(breakdowns=["GEO.A", "TEN"], filters={"SIZE": "S4"}))["count"]
    homes = engine.tabulate(TableQuery(breakdowns=["GEO.A", "TEN"], filters={"SIZE": "S4"}, population="households"))
    assert (filtered == 4 * homes["count"]).all()


def test_persons_in_institutions_are_perturbed_as_usual(engine: TableEngine) -> None:
    table = engine.tabulate(TableQuery(breakdowns=["GEO.A"], filters={"SIZE": "NA"}))["count"]
    plain = _plain(engine).tabulate(TableQuery(breakdowns=["GEO.A"], filters={"SIZE": "NA"}))["count"]
    assert int(table.sel({"GEO.A": "0"})) != 0 and not (table == plain).all()


def test_a_size_that_is_not_the_number_of_members_stops_serving(tmp_path: Path) -> None:
    data = _persons()
    first = data.hid == data.hid.iloc[0]
    data.loc[first, "size"] = data.loc[first, "size"] + 1  # a household's size that is not its number of members
    config = publish(tmp_path, tables=TABLES, data=data, config=CONFIG)
    with pytest.raises(
        CubeguardError, match=r"tables.household_size: population total has .* persons in households of size"
    ):
        open_served(config)


def test_config_without_household_size_is_refused(tmp_path: Path) -> None:
    problems = load_problems(
        tmp_path,
        CONFIG + TABLES.replace("  household_size: {variable: SIZE, population: households}\n", ""),
        missing_ok=True,
    )
    assert any("name it in tables.household_size, e.g. {variable: SIZE, population: households}" in p for p in problems)


@pytest.mark.parametrize(
    ("link", "message"),
    [
        (
            "{variable: SEX, population: households}",
            "'SEX' is not an offered integer variable read from a household column",
        ),
        ("{variable: SIZE, population: total}", "'total' is not an offered population of unit households"),
    ],
)
def test_a_wrong_household_size_is_refused(tmp_path: Path, link: str, message: str) -> None:
    text = CONFIG + TABLES.replace("{variable: SIZE, population: households}", link)
    assert any(message in p for p in load_problems(tmp_path, text, missing_ok=True))


def test_a_persons_cube_crossing_the_household_size_is_refused(tmp_path: Path) -> None:
    text = CONFIG.replace("[GEO.A, SEX]}", "[GEO.A, SIZE]}") + TABLES
    problems = load_problems(tmp_path, text, missing_ok=True)
    assert any("persons hypercube persons crosses SIZE" in p for p in problems)

"""Flexible tables from a published release: consistent with every published cube, protected, rules enforced.

The release is TINY_CONFIG (3 cubes, 7,585 persons, cell key method D=5, V=3, js=2) with a
``tables`` section, published by the release table itself, so the key store is the one a real
release writes.
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from cubeguard.ckm.magnitude import perturb_magnitudes, read_num_ptable, tabulate_magnitudes
from cubeguard.config import load_release
from cubeguard.cubes.margins import expand_all
from cubeguard.cubes.store import list_cubes, open_cube
from cubeguard.errors import CubeguardError
from cubeguard.methods.cell_key.model import CellKeyStep
from cubeguard.tables.engine import TableEngine
from cubeguard.tables.keystore import KeyStore
from cubeguard.tables.query import TableQuery, TableRefused
from cubeguard.tables.served import check_consistency, open_served
from tests.conftest import TINY_CONFIG, tiny_microdata
from tests.tables_release import RELEASE_ID, TABLES, publish

QUERIES = 250
ROUNDED = "{method: random_rounding, base: 3}"  # margins rounded on their own, draws from the cell keys


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TableEngine]:
    config = publish(tmp_path_factory.mktemp("tables"))
    return config, open_served(config)


def _published(engine: TableEngine) -> dict[str, xr.Dataset]:
    store = engine.release.config.output.folder / "published" / engine.release_id / "store.zarr"
    return {c: open_cube(store, c) for c in list_cubes(store)}


def _random_query(engine: TableEngine, rng: np.random.Generator) -> TableQuery:
    by_var: dict[str, list[str]] = {}
    for bid, bd in engine.offered.items():
        by_var.setdefault(bd.classification.variable, []).append(bid)
    variables = list(by_var)
    k = int(rng.integers(1, len(variables) + 1))
    chosen = [str(rng.choice(by_var[v])) for v in rng.permutation(variables)[:k]]
    filters = {}
    free = [v for v in variables if all(engine.offered[b].classification.variable != v for b in chosen)]
    if free and rng.random() < 0.4 and len(chosen) < engine.spec.max_dimensions:
        bid = str(rng.choice(by_var[str(rng.choice(free))]))
        filters[bid] = str(rng.choice(engine.offered[bid].codes))
    return TableQuery(breakdowns=chosen, population=str(rng.choice(engine.spec.populations)), filters=filters)


def _compare_random(engine: TableEngine, rng: np.random.Generator, cubes: dict[str, xr.Dataset]) -> dict[str, int]:
    """One random query, answered under the rules (none compared when refused)."""
    query = _random_query(engine, rng)
    try:
        table = engine.answer(query).table
    except TableRefused:
        return {}
    return _compare(engine, query, table, cubes)


def _compare(engine: TableEngine, query: TableQuery, table: xr.Dataset, cubes: dict[str, xr.Dataset]) -> dict[str, int]:
    """Compare every table cell that a published cube also holds; cells compared per cube."""
    var = {b: engine.release.breakdowns[b].classification.variable for b in engine.release.breakdowns}
    fixed = {var[b]: code for b, code in query.filters.items()}
    compared: dict[str, int] = {}
    for cube_id, cube in cubes.items():
        if engine.release.cube(cube_id).population != query.population:
            continue
        dims = [str(d) for d in cube["count"].dims]
        cube_vars = {var[d]: d for d in dims}
        if not {var[b] for b in query.breakdowns} | set(fixed) <= set(cube_vars):
            continue
        codes = {d: [str(c) for c in cube[d].values] for d in dims}
        n = 0
        for cell in itertools.product(*[range(table.sizes[b]) for b in query.breakdowns]):
            wanted = dict(fixed) | {
                var[b]: str(table[b].values[i]) for b, i in zip(query.breakdowns, cell, strict=True)
            }
            index = []
            for d in dims:
                code = wanted.get(var[d], codes[d][0])
                if code not in codes[d]:
                    break
                index.append(codes[d].index(code))
            else:
                assert int(table["count"].values[cell]) == int(cube["count"].values[tuple(index)]), (
                    query,
                    cube_id,
                    cell,
                )
                n += 1
        compared[cube_id] = n
    return compared


def test_every_cell_a_table_shares_with_a_published_cube_has_the_published_value(
    served: tuple[Path, TableEngine],
) -> None:
    _, engine = served
    cubes = _published(engine)
    rng = np.random.default_rng(2026)
    compared = dict.fromkeys(cubes, 0)
    for _ in range(QUERIES):
        for cube_id, n in _compare_random(engine, rng, cubes).items():
            compared[cube_id] += n
    assert all(n >= 20 for n in compared.values()), compared  # every published cube, households too


def test_served_counts_are_perturbed_never_1_or_2_and_zeros_stay_zero(served: tuple[Path, TableEngine]) -> None:
    _, engine = served
    original = open_cube(engine.release.config.output.original_store, "c1")
    table = engine.answer(TableQuery(breakdowns=["GEO.2", "SEX", "AGE.M"])).table
    counts, truth = table["count"].values, original["count"].values
    assert counts.shape == truth.shape
    assert not np.isin(counts, [1, 2]).any()
    assert (counts != truth).mean() > 0.3  # the noise is there: most cells of this table moved
    assert ((truth == 0) <= (counts == 0)).all()
    assert set(table.data_vars) == {"count"}  # no key sums, no noise, no original counts


def test_means_are_the_perturbed_sum_over_the_published_count(served: tuple[Path, TableEngine]) -> None:
    """m-hat / n-hat, m-hat as the core computes it from the cell's records (cellKey's ck_params_nums)."""
    _, engine = served
    data = tiny_microdata()
    table = engine.answer(TableQuery(breakdowns=["SEX"], filters={"GEO.2": "A2"}, mean="age")).table
    step = engine.release.config.steps[0]
    assert isinstance(step, CellKeyStep)
    spec = step.magnitudes["age"]
    codes = list(table["SEX"].values)
    rows = data[data.region == "A2"]
    inside = np.stack([np.ones(len(rows), dtype=bool), *(rows.sex.to_numpy() == c for c in codes[1:])], axis=1)
    cells = tabulate_magnitudes(np.where(inside, np.arange(len(codes)), -1), len(codes), rows.age, rows.rkey)
    expected = np.round(perturb_magnitudes(cells, spec, read_num_ptable(spec.ptable_file)).perturbed)
    n_hat = table["count"].values
    assert (n_hat > 0).all()
    assert np.array_equal(table["mean"].values, np.round(expected / n_hat, 1))  # tables.means' decimals: 1
    assert not np.array_equal(expected, cells.sums)  # the sums are perturbed


def test_a_mean_cell_has_one_value_in_every_table_that_holds_it(served: tuple[Path, TableEngine]) -> None:
    _, engine = served
    small = engine.tabulate(TableQuery(breakdowns=["SEX"], filters={"GEO.2": "A2"}, mean="age"))
    large = engine.tabulate(TableQuery(breakdowns=["GEO.2", "SEX", "AGE.L"], mean="age"))
    for sex in small["SEX"].values:
        cell = {"GEO.2": "A2", "SEX": sex, "AGE.L": "T"}
        assert float(small["mean"].sel(SEX=sex)) == float(large["mean"].sel(cell))


def test_filters_restrict_the_population_to_a_category(served: tuple[Path, TableEngine]) -> None:
    _, engine = served
    whole = engine.tabulate(TableQuery(breakdowns=["GEO.2", "SEX"]))
    only_a = engine.tabulate(TableQuery(breakdowns=["SEX"], filters={"GEO.2": "A"}))
    np.testing.assert_array_equal(only_a["count"].values, whole["count"].sel({"GEO.2": "A"}).values)


def test_the_key_store_holds_codes_and_keys_only_and_its_records(served: tuple[Path, TableEngine]) -> None:
    _, engine = served
    store = KeyStore.open(engine.release.config.output.served_store(RELEASE_ID))
    assert store.records == len(tiny_microdata())
    assert set(store.columns) == {"region", "sex", "age"}
    assert set(store.populations) == {"total", "households"}
    households = store.populations["households"]
    assert households is not None and int(households.sum()) == int(tiny_microdata().is_ref.sum())
    assert store.populations["total"] is None  # all persons: no mask to read
    assert store.keys.dtype == np.uint64 and not store.keys.flags.writeable
    assert not (engine.release.config.output.key_store).exists()  # moved to the published release


@pytest.mark.parametrize(
    ("query", "rule", "says"),
    [
        ({"breakdowns": ["GEO.3"]}, "offered_breakdowns", "breakdown 'GEO.3' is not offered; choose one of GEO.1"),
        ({"breakdowns": ["SEX"], "population": "nobody"}, "offered_populations", "population 'nobody' is not offered"),
        ({"breakdowns": ["AGE.L", "AGE.M"]}, "one_level_per_variable", "variable AGE appears twice"),
        (
            {"breakdowns": ["SEX"], "filters": {"GEO.1": "A1"}},
            "offered_filters",
            "code 'A1' is not a category of GEO.1",
        ),
        (
            {"breakdowns": ["SEX", "AGE.M"], "filters": {"GEO.1": "A"}, "population": "total"},
            None,
            None,
        ),
        ({"breakdowns": ["SEX"], "mean": "income"}, "offered_means", "no mean named 'income'; choose one of: age"),
    ],
)
def test_each_form_rule_refuses_with_its_message(
    served: tuple[Path, TableEngine], query: dict[str, object], rule: str | None, says: str | None
) -> None:
    _, engine = served
    q = TableQuery.model_validate(query)
    if rule is None:
        assert engine.answer(q).table["count"].size == 3 * 6  # 3 variables (one a filter) are allowed
        return
    with pytest.raises(TableRefused, match=says) as refused:
        engine.answer(q)
    assert refused.value.rule == rule


def _engine_with(config: Path, **rules: object) -> TableEngine:
    overrides = {f"tables.{k}": v for k, v in rules.items()}
    release = load_release(config, overrides)
    base = open_served(config)
    return TableEngine(release, base.store, base.protect, RELEASE_ID)


@pytest.mark.parametrize(
    ("rules", "query", "rule", "says"),
    [
        ({"max_dimensions": 2}, {"breakdowns": ["SEX", "AGE.M"], "filters": {"GEO.1": "A"}}, "max_dimensions",
         "the table uses 3 variables \\(filters included\\) but at most 2 may be combined"),
        ({"max_cells": 20}, {"breakdowns": ["GEO.2", "AGE.M"]}, "max_cells", "the table has 36 cells but at most 20"),
        ({"min_population": 10_000}, {"breakdowns": ["SEX"]}, "min_population", "the table's population is 7,5"),
        ({"min_average_cell_size": 2000}, {"breakdowns": ["GEO.2", "SEX"]}, "min_average_cell_size",
         "the table averages 12..\\.. per cell, below the minimum of 2000"),
        ({"small_count": 500, "max_small_cell_share": 0.1}, {"breakdowns": ["GEO.2", "SEX", "AGE.M"]},
         "max_small_cell_share", "% of the table's cells are small \\(1 to 500\\), above the maximum of 10%"),
    ],
)  # fmt: skip
def test_each_rule_of_the_config_refuses_with_its_message(
    served: tuple[Path, TableEngine], rules: dict[str, object], query: dict[str, object], rule: str, says: str
) -> None:
    config, _ = served
    q = TableQuery.model_validate(query)
    assert open_served(config).answer(q).table.sizes  # allowed without the rule
    with pytest.raises(TableRefused, match=says) as refused:
        _engine_with(config, **rules).answer(q)
    assert refused.value.rule == rule


def test_the_same_query_gives_the_same_table_and_a_refusal_is_remembered(served: tuple[Path, TableEngine]) -> None:
    config, engine = served
    q = TableQuery(breakdowns=["AGE.M", "SEX"], filters={"GEO.2": "B1"})
    fresh = open_served(config).answer(q).table
    xr.testing.assert_identical(engine.answer(q).table, fresh)
    xr.testing.assert_identical(engine.answer(q).table, fresh)  # from the cache


def test_a_changed_classification_stops_serving_but_changed_rules_do_not(served: tuple[Path, TableEngine]) -> None:
    config, engine = served
    _engine_with(config, min_population=5)  # rules may change after a release
    release = load_release(config, {"variables.SEX.codes[1].label": "Men"})
    with pytest.raises(CubeguardError, match="only its 'tables' rules may change after a release"):
        TableEngine(release, engine.store, engine.protect, RELEASE_ID)


def test_a_key_store_that_does_not_reproduce_the_published_cubes_stops_serving(
    served: tuple[Path, TableEngine],
) -> None:
    _, engine = served
    published = engine.release.config.output.folder / "published" / RELEASE_ID / "store.zarr"
    assert check_consistency(engine, published) == "c1"
    other_keys = dataclasses.replace(engine.store, keys=engine.store.keys + np.uint64(2**63))  # cell keys move by 1/2
    wrong = TableEngine(engine.release, other_keys, engine.protect, RELEASE_ID)
    with pytest.raises(CubeguardError, match="does not reproduce published cube c1"):
        check_consistency(wrong, published)


def test_a_release_rounded_at_random_on_cell_keys_is_served_consistently_too(tmp_path: Path) -> None:
    no_means = TABLES.replace("  means: {age: {column: age, label: Age in years}}\n", "")
    config = publish(tmp_path, no_means, config=TINY_CONFIG.replace("{method: cell_key, D: 5, V: 3, js: 2}", ROUNDED))
    engine = open_served(config)
    cubes = _published(engine)
    rng = np.random.default_rng(3)
    compared = dict.fromkeys(cubes, 0)
    for _ in range(80):
        for cube_id, n in _compare_random(engine, rng, cubes).items():
            compared[cube_id] += n
    assert all(n >= 10 for n in compared.values()), compared
    table = engine.answer(TableQuery(breakdowns=["GEO.2", "AGE.M"])).table
    assert (table["count"].values % 3 == 0).all() and (table["count"].values > 0).any()


def test_tables_summed_from_finer_ones_equal_tables_tabulated_from_the_records(
    served: tuple[Path, TableEngine],
) -> None:
    config, _ = served
    engine = open_served(config)
    first = engine.answer(TableQuery(breakdowns=["GEO.1", "SEX", "AGE.L"]))  # tabulated at GEO.2 x SEX x AGE.M
    assert engine.passes == 1
    rng = np.random.default_rng(11)
    for _ in range(40):
        query = _random_query(engine, rng)
        fresh = open_served(config)
        bds = [fresh.offered[b] for b in query.breakdowns]
        counts, key_sums = fresh._tabulated(query, bds)
        mine, my_keys = engine._full(query, [engine.offered[b] for b in query.breakdowns])
        np.testing.assert_array_equal(mine, expand_all(counts, bds))
        np.testing.assert_array_equal(my_keys, expand_all(key_sums, bds))
    passes = engine.passes
    for breakdowns in (["GEO.2", "AGE.M"], ["SEX"], ["AGE.L", "GEO.1"], ["SEX", "GEO.2", "AGE.M"]):
        engine.answer(TableQuery(breakdowns=breakdowns))
    assert engine.passes == passes  # all summed from the first table's finer cells
    assert first.table["count"].sizes == {"GEO.1": 3, "SEX": 3, "AGE.L": 4}


def test_a_remembered_refusal_is_raised_afresh_each_time(served: tuple[Path, TableEngine]) -> None:
    _, engine = served
    query = TableQuery(breakdowns=["AGE.L", "AGE.M"])
    raised = []
    for _ in range(3):
        with pytest.raises(TableRefused) as refused:
            engine.answer(query)
        raised.append(refused.value)
    assert len({id(r) for r in raised}) == 3 and {r.rule for r in raised} == {"one_level_per_variable"}


def test_means_are_published_to_their_decimals(served: tuple[Path, TableEngine]) -> None:
    config, engine = served
    means = engine.answer(TableQuery(breakdowns=["GEO.2", "SEX"], mean="age")).table["mean"].values
    shown = means[np.isfinite(means)]
    assert np.array_equal(shown, np.round(shown, 1)) and not np.array_equal(shown, np.round(shown))
    finer = open_served(config, None, {"tables.means.age.decimals": 3})
    more = finer.answer(TableQuery(breakdowns=["GEO.2", "SEX"], mean="age")).table["mean"].values
    assert np.array_equal(np.round(more[np.isfinite(more)], 1), shown) and not np.array_equal(more, means)


def test_a_mean_with_too_many_decimals_is_a_config_error_naming_the_key(served: tuple[Path, TableEngine]) -> None:
    config, _ = served
    with pytest.raises(CubeguardError, match=r"tables\.means\.age\.decimals.*less than or equal to 6"):
        load_release(config, {"tables.means.age.decimals": 9})

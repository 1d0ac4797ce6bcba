"""Per-area serving (issue 39): each area of a table judged on its own, the failing ones withheld.

An area is served when a table filtered to it would be, with the same published cells; an area that
breaks a rule is withheld and named with its rule. Attacked as an intruder would: the per-area
tables at two geographic levels and the table without geography, differenced together, give a
withheld area's small cells back when the service publishes exact counts (so the test can fail),
and nothing with certainty from the cell key method's.
"""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np
import pandas as pd
import pytest

from cubeguard.attack import Limits, attack_release
from cubeguard.attack.jsonstat import view_of_table, withheld_aware
from cubeguard.ckm.keys import KeyScale
from cubeguard.tables.attack import attack_tables, table_name
from cubeguard.tables.engine import TableEngine
from cubeguard.tables.formats import encode
from cubeguard.tables.query import TableQuery, TableRefused
from cubeguard.tables.served import open_served
from tests.integration.test_tables_attacks import CONFIG, _persons
from tests.tables_release import publish

RULES = "  min_population: 100\n  min_average_cell_size: 5\n  max_small_cell_share: 0.15\n"
TABLES = "tables:\n  breakdowns: [GEO.R, GEO.A, SEX, AGE.B, OCC]\n  max_dimensions: 3\n" + RULES
AREAS = TableQuery(breakdowns=["GEO.A", "SEX", "OCC"], per_area=True)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> TableEngine:
    return open_served(publish(tmp_path_factory.mktemp("areas"), tables=TABLES, data=_persons(), config=CONFIG))


def _body(engine: TableEngine, query: TableQuery) -> dict[str, Any]:
    return json.loads(encode(engine.answer(query), "json"))


def test_areas_that_break_a_rule_are_withheld_with_it_and_the_rest_served(engine: TableEngine) -> None:
    answer = engine.answer(AREAS)
    codes = answer.breakdowns[0].codes
    withheld = {codes[i]: rule for i, rule in answer.withheld}
    assert withheld and len(withheld) < len(codes)
    assert withheld["R6"] == "min_average_cell_size"  # the small area: 176 persons over 50 cells
    assert set(withheld.values()) == {"min_average_cell_size", "max_small_cell_share"}
    assert "0" not in withheld  # the whole population passes


def test_a_table_every_area_of_which_fails_is_refused_naming_the_rule(engine: TableEngine) -> None:
    with pytest.raises(TableRefused) as refused:
        engine.answer(TableQuery(breakdowns=["GEO.A", "SEX"], filters={"OCC": "O23"}, per_area=True))  # one person
    assert "every code of GEO.A breaks a rule on its own" in str(refused.value)


def test_a_served_area_is_its_filtered_table_and_a_withheld_one_breaks_the_filtered_tables_rule(
    engine: TableEngine,
) -> None:
    answer = engine.answer(AREAS)
    withheld = dict(answer.withheld)
    for index, code in enumerate(answer.breakdowns[0].codes):
        filtered = TableQuery(breakdowns=["SEX", "OCC"], filters={"GEO.A": code})
        if index in withheld:
            with pytest.raises(TableRefused) as refused:
                engine.answer(filtered)
            assert refused.value.rule == withheld[index]
            assert not answer.count[index].any()  # never the published values: 0 inside, missing outside
        else:
            np.testing.assert_array_equal(answer.count[index], engine.answer(filtered).count)


def test_a_withheld_area_is_null_in_json_empty_in_csv_and_absent_from_sdmx(engine: TableEngine) -> None:
    answer = engine.answer(AREAS)
    body = _body(engine, AREAS)
    per_area = int(np.prod(answer.count.shape[1:]))
    assert sum(v is None for v in body["value"]) == per_area * len(answer.withheld)
    named = {w["code"]: w["rule"] for w in body["extension"]["withheld"]}
    assert named == {answer.breakdowns[0].codes[i]: rule for i, rule in answer.withheld}
    rows = pd.read_csv(io.BytesIO(encode(answer, "csv")), dtype={"GEO.A": str})
    assert set(rows.loc[rows["count"].isna(), "GEO.A"]) == set(named)
    sdmx = encode(answer, "sdmx-csv").decode()
    assert len(sdmx.strip().splitlines()) - 1 == answer.count.size - per_area * len(answer.withheld)


def _unprotected(counts: np.ndarray, _keys: np.ndarray, _scale: KeyScale) -> np.ndarray:
    return counts


def _attack(engine: TableEngine, exact: bool) -> tuple[int, int]:
    """Small cells of withheld areas recovered with certainty from three tables differenced; areas withheld."""
    served = TableEngine(engine.release, engine.store, _unprotected, engine.release_id) if exact else engine
    queries = [AREAS, TableQuery(breakdowns=["GEO.R", "SEX", "OCC"], per_area=True),
               TableQuery(breakdowns=["SEX", "OCC"])]  # fmt: skip
    answers = [(q, _body(served, q)) for q in queries]
    if not exact:
        found = attack_tables(engine, answers, Limits()).report
    else:  # the service's answers with its counts exact: an intruder's bounds are the counts themselves
        variables = {b: bd.classification.variable for b, bd in engine.offered.items()}
        views = [view_of_table(body, variables, table_name(q), _original(engine, q)) for q, body in answers]

        def exact_bounds(published: np.ndarray, interior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return published.astype(float), published.astype(float)

        found = attack_release(views, dict.fromkeys((v.cube for v in views), withheld_aware(exact_bounds)))
    name = table_name(AREAS)
    recovered = max(f.certain for f in found.published if f.cube == name)  # the best attack on the area table
    if exact:  # every served small cell is known exactly: count only what the withheld areas gave away
        original, withheld = _original(engine, AREAS), [i for i, _ in served.answer(AREAS).withheld]
        shown = np.ones(original.shape[0], dtype=bool)
        shown[withheld] = False
        recovered -= int(((original[shown] >= 1) & (original[shown] <= 2)).sum())
    return recovered, len(engine.answer(AREAS).withheld)


def _original(engine: TableEngine, query: TableQuery) -> np.ndarray:
    plain = TableEngine(engine.release, engine.store, _unprotected, engine.release_id)
    return np.asarray(plain.tabulate(query)["count"].values, dtype=np.int64)


def test_differencing_the_served_areas_recovers_withheld_small_cells_only_from_exact_counts(
    engine: TableEngine,
) -> None:
    exact, withheld = _attack(engine, exact=True)
    assert withheld >= 1 and exact > 0  # region minus its served areas gives a withheld area's cells back
    protected, _ = _attack(engine, exact=False)
    assert protected == 0

"""The means attacks of issue 34, scripted against the table service.

Before, a mean was published as m / n-hat with m the exact sum, so m = mean x n-hat exactly:

* one-year ages: every person of a cell has the same age a, so n = m / a, the original count;
* age bands [lo, hi]: n lies in [m / hi, m / lo], which often holds one integer of the count's range;
* differencing: the sums of a table and of the same table for one sex are exact, so their
  difference is the other sex's sum: the age of a person alone of that sex in the cell.

The intruder knows the method and its bounds: the counts' maximum deviation ``D``, and for the
sums the percentage ``p_small``, the epsilons, the largest |v| of the numeric p-table and the
publication unit, so a published sum m-hat means an original within ``bound(x)`` of it for a
largest contribution x (at most the oldest age). Each attack runs on the service as it was (exact
sums: it must recover), on the service and, where a rule refuses the table, on the same table
with the rules bypassed, so the test shows what stops the attack.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from cubeguard.ckm.magnitude import read_num_ptable
from cubeguard.methods.base import Magnitude
from cubeguard.methods.cell_key.model import CellKeyStep
from cubeguard.tables.engine import TableEngine
from cubeguard.tables.query import TableQuery, TableRefused
from cubeguard.tables.served import open_served
from tests.tables_release import publish

D = 5
OLDEST = 94
AREAS = ["R1", "R2", "R3", "R4", "R5", "R6", "S1"]
BANDS = {f"B{lo}-{lo + 4}": (lo, lo + 4) for lo in range(0, OLDEST, 5)}  # five-year bands
YEARS = ", ".join(
    f"{{code: A{a}, parent: {band}, values: [{a}]}}" for band, (lo, hi) in BANDS.items() for a in range(lo, hi + 1)
)
CONFIG = f"""\
schema_version: 1
name: means
input: {{microdata: data/persons.parquet, household_columns: [area]}}
variables:
  GEO:
    column: area
    codes: [{{code: "0"}}, {{code: R, parent: "0"}}, {{code: S, parent: "0"}},
            {", ".join(f"{{code: {a}, parent: {a[0]}}}" for a in AREAS)}]
    breakdowns: {{GEO.A: {{}}}}
  SEX:
    column: sex
    codes: [{{code: T}}, {{code: M, parent: T}}, {{code: F, parent: T}}]
    breakdowns: {{SEX: {{}}}}
  AGE:
    column: age
    dtype: integer
    codes: [{{code: T}}, {", ".join(f"{{code: {b}, parent: T}}" for b in BANDS)}, {YEARS}]
    breakdowns: {{AGE.B: {{depth: 1}}, AGE.Y: {{}}}}
  OCC:
    column: occ
    codes: [{{code: T}}, {", ".join(f"{{code: O{k:02d}, parent: T}}" for k in range(1, 23))}]
    breakdowns: {{OCC: {{}}}}
hypercubes:
  - {{id: a, breakdowns: [GEO.A, SEX, OCC]}}
steps:
  - {{method: cell_key, D: {D}, V: 3, js: 2}}
gates: {{forbidden_values: [1, 2]}}
output: {{folder: out}}
"""
TABLES = "tables:\n  breakdowns: [GEO.A, SEX, AGE.B, AGE.Y, OCC]\n  max_dimensions: 3\n  means: {age: {column: age, decimals: 6}}\n"  # sums exact in the mean
Source = Callable[[TableQuery], xr.Dataset | None]  # None: refused


def _persons(seed: int = 3) -> pd.DataFrame:
    """6,000 persons; occupations skewed so that many area x occupation cells hold one person of a sex."""
    rng = np.random.default_rng(seed)
    n = 6000
    weights = 1.0 / np.arange(1, 23) ** 1.3
    return pd.DataFrame(
        {
            "pid": np.arange(n, dtype=np.int64),
            "hid": np.arange(n, dtype=np.int64),
            "is_ref": np.ones(n, dtype=bool),
            "area": pd.Categorical(rng.choice(AREAS, n, p=[0.2, 0.2, 0.15, 0.14, 0.14, 0.04, 0.13])),
            "sex": pd.Categorical(rng.choice(["M", "F"], n)),
            "age": rng.integers(0, OLDEST + 1, n).astype(np.int16),
            "occ": pd.Categorical([f"O{k:02d}" for k in rng.choice(np.arange(1, 23), n, p=weights / weights.sum())]),
            "rkey": rng.random(n),
        }
    )


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> TableEngine:
    return open_served(publish(tmp_path_factory.mktemp("means"), tables=TABLES, data=_persons(), config=CONFIG))


def exact_sums(engine: TableEngine) -> Source:
    """The service as it was: perturbed counts, means from the exact sums (m / n-hat)."""
    exact = Magnitude(0, lambda cells: cells.sums)
    plain = TableEngine(engine.release, engine.store, engine.protect, engine.release_id, {"age": exact})
    return plain.tabulate


def served(engine: TableEngine) -> Source:
    def answer(q: TableQuery) -> xr.Dataset | None:
        try:
            return engine.answer(q).table
        except TableRefused:
            return None

    return answer


def unruled(engine: TableEngine) -> Source:
    """The service's protection with its rules bypassed."""
    return engine.tabulate


def _counts(p: int) -> range:
    return range(max(1, p - D), p + D + 1) if p > 0 else range(0, D + 1)


def _bound(engine: TableEngine) -> float:
    """Largest |m-hat - m| for a cell whose largest contribution is at most the oldest age."""
    step = engine.release.config.steps[0]
    assert isinstance(step, CellKeyStep)
    spec = step.magnitudes["age"]
    table = read_num_ptable(spec.ptable_file)
    p = max(spec.mult.p_small, spec.mult.p_large) if spec.mult.mult == "flex" else spec.mult.p  # type: ignore[union-attr]
    return float(OLDEST * p * sum(spec.mult.epsilon) * np.abs(table.v).max() + spec.mu_c * OLDEST + spec.unit / 2)


def _sums(table: xr.Dataset) -> xr.DataArray:
    """m-hat = mean x n-hat, to the nearest 1/1000 (the product of a quotient is off in the last bits)."""
    return (table["mean"] * table["count"]).fillna(0.0).round(3)


def one_year_ages(source: Source, bound: float, truth: pd.DataFrame) -> tuple[int, int]:
    """(cells whose count is recovered with certainty and right, cells tried): n = m / a."""
    table = source(TableQuery(breakdowns=["GEO.A", "AGE.Y"], mean="age"))
    if table is None:
        return 0, 0
    recovered = tried = 0
    for area, a in itertools.product(AREAS, range(1, OLDEST + 1)):
        cell = {"GEO.A": area, "AGE.Y": f"A{a}"}
        n_hat, m_hat = int(table["count"].sel(cell)), float(_sums(table).sel(cell))
        if n_hat == 0:
            continue
        tried += 1
        fits = [n for n in _counts(n_hat) if abs(m_hat - a * n) <= bound]
        recovered += len(fits) == 1 and fits[0] == int(((truth.area == area) & (truth.age == a)).sum())
    return recovered, tried


def age_bands(source: Source, bound: float, truth: pd.DataFrame) -> tuple[int, int]:
    """n in [m / hi, m / lo] within the count's range."""
    table = source(TableQuery(breakdowns=["GEO.A", "AGE.B", "OCC"], mean="age"))
    if table is None:
        return 0, 0
    recovered = tried = 0
    for area, band, occ in itertools.product(AREAS, BANDS, [f"O{k:02d}" for k in range(1, 23)]):
        lo, hi = BANDS[band]
        cell = {"GEO.A": area, "AGE.B": band, "OCC": occ}
        n_hat, m_hat = int(table["count"].sel(cell)), float(_sums(table).sel(cell))
        if n_hat == 0:
            continue
        tried += 1
        fits = [n for n in _counts(n_hat) if lo * n - bound <= m_hat <= hi * n + bound]
        rows = truth[(truth.area == area) & (truth.occ == occ) & truth.age.between(lo, hi)]
        recovered += len(fits) == 1 and fits[0] == len(rows)
    return recovered, tried


def differencing(source: Source, bound: float, truth: pd.DataFrame) -> tuple[int, int]:
    """The age of a person alone of their sex in an area x occupation: all persons' sum minus the other sex's."""
    recovered = tried = 0
    for area in AREAS:
        table = source(TableQuery(breakdowns=["OCC", "SEX"], filters={"GEO.A": area}, mean="age"))
        assert table is not None  # no rule refuses it
        sums = _sums(table)
        rows = truth[truth.area == area]
        for (occ, sex), people in rows.groupby(["occ", "sex"], observed=True):
            if len(people) != 1:
                continue
            tried += 1
            other = "F" if sex == "M" else "M"
            diff = float(sums.sel(OCC=occ, SEX="T") - sums.sel(OCC=occ, SEX=other))
            ages = [a for a in range(OLDEST + 1) if abs(diff - a) <= 2 * bound]
            recovered += ages == [int(people.age.iloc[0])]
    return recovered, tried


@pytest.fixture(scope="module")
def bound(engine: TableEngine) -> float:
    return _bound(engine)


@pytest.mark.parametrize("attack", [one_year_ages, age_bands], ids=lambda f: f.__name__)
def test_means_in_categories_of_their_own_column_give_counts_away_and_are_refused(
    engine: TableEngine, bound: float, attack: Callable[[Source, float, pd.DataFrame], tuple[int, int]]
) -> None:
    truth = _persons()
    recovered, tried = attack(exact_sums(engine), 0.0, truth)
    assert tried >= 100 and recovered >= 0.5 * tried  # the leak of issue 34
    assert attack(served(engine), bound, truth) == (0, 0)  # refused: mean_of_a_crossed_column
    recovered, tried = attack(unruled(engine), bound, truth)
    assert tried >= 100 and recovered == 0  # and the perturbed sums alone leave nothing certain either


def test_differencing_exact_sums_gives_a_persons_age_and_perturbed_sums_do_not(
    engine: TableEngine, bound: float
) -> None:
    truth = _persons()
    recovered, tried = differencing(exact_sums(engine), 0.0, truth)
    assert tried >= 10 and recovered >= 0.5 * tried  # (the others: the other sex's count published as 0, no mean)
    assert differencing(served(engine), bound, truth) == (0, tried)


def test_a_mean_of_age_in_age_categories_is_refused_naming_the_rule(engine: TableEngine) -> None:
    for query in (
        TableQuery(breakdowns=["GEO.A", "AGE.Y"], mean="age"),
        TableQuery(breakdowns=["GEO.A"], filters={"AGE.B": "B0-4"}, mean="age"),
    ):
        with pytest.raises(TableRefused, match=r"the mean of age in categories of AGE\.[YB] bounds each cell's count"):
            engine.answer(query)

"""The attacks of Handbook on SDC v2 5.2 and 5.7, scripted against the table service.

An attacker asks for overlapping tables and works out intervals for the counts of a target: a
published count ``p`` means an original in ``[p - D, p + D]`` (at least 1 when ``p > 0``, since
the cell key method keeps zeros at zero), where ``D`` is the published maximum deviation, or
``D = 0`` when every table the attacker holds adds up exactly (unprotected counts do). A target
is recovered when its interval shrinks to a single value.

* Geographical differencing: a small area's cells from its region minus its sister areas.
* Sub-population differencing: the children's cells from all persons minus the other age groups.
* Linking: two tables sharing a variable place a person unique in it in a cell of their crossing.
* Means (Handbook Tables 5.23-5.24): with original means m / n and perturbed counts, the one
  combination of candidate counts whose magnitudes add up gives the originals away; with the
  service's m / n-hat that combination is the published counts, not the originals.

Each attack is run on the service and on unprotected counts of the same tables, where it must
succeed, so a service that leaked unprotected counts would fail these tests.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from cubeguard.tables.engine import TableEngine
from cubeguard.tables.query import TableQuery
from cubeguard.tables.served import open_served
from tests.tables_release import publish

D = 5  # the published maximum deviation of the release's p-table (the attacker knows it; Handbook 5.7)
CONFIG = f"""\
schema_version: 1
name: attack
input: {{microdata: data/persons.parquet, household_columns: [area]}}
variables:
  GEO:
    column: area
    codes: [{{code: "0"}}, {{code: R, parent: "0"}}, {{code: S, parent: "0"}},
            {", ".join(f"{{code: R{k}, parent: R}}" for k in range(1, 7))}, {{code: S1, parent: S}}]
    breakdowns: {{GEO.R: {{depth: 1}}, GEO.A: {{}}}}
  SEX:
    column: sex
    codes: [{{code: T}}, {{code: M, parent: T}}, {{code: F, parent: T}}]
    breakdowns: {{SEX: {{}}}}
  AGE:
    column: age
    dtype: integer
    codes: [{{code: T}}, {{code: Y0-15, parent: T, range: [0, 15]}}, {{code: Y16-64, parent: T, range: [16, 64]}},
            {{code: Y65-120, parent: T, range: [65, 120]}}]
    breakdowns: {{AGE.B: {{}}}}
  OCC:
    column: occ
    codes: [{{code: T}}, {", ".join(f"{{code: O{k:02d}, parent: T}}" for k in range(1, 26))}]
    breakdowns: {{OCC: {{}}}}
hypercubes:
  - {{id: a, breakdowns: [GEO.A, SEX, OCC]}}
  - {{id: b, breakdowns: [GEO.A, AGE.B, OCC]}}
steps:
  - {{method: cell_key, D: {D}, V: 3, js: 2}}
gates: {{forbidden_values: [1, 2]}}
output: {{folder: out}}
"""
TABLES = "tables:\n  breakdowns: [GEO.R, GEO.A, SEX, AGE.B, OCC]\n  max_dimensions: 3\n  means: {age: {column: age}}\n"
Source = Callable[[TableQuery], xr.DataArray]


@dataclass(frozen=True)
class Truth:
    """What the attacker is after, from the original counts."""

    cells: xr.DataArray  # GEO.A x SEX x OCC
    children: xr.DataArray  # GEO.A x OCC of persons aged 0 to 15
    people: set[tuple[str, str, str]]  # (OCC, SEX, AGE.B) of each person alone in an occupation


def _persons(seed: int = 11) -> pd.DataFrame:
    """5,000 persons; area R6 small; occupations skewed, O23-O25 held by one person each."""
    rng = np.random.default_rng(seed)
    n = 5000
    area = rng.choice(["R1", "R2", "R3", "R4", "R5", "R6", "S1"], n, p=[0.2, 0.2, 0.15, 0.14, 0.14, 0.04, 0.13])
    weights = 1.0 / np.arange(1, 23) ** 1.6
    occ = np.array([f"O{k:02d}" for k in rng.choice(np.arange(1, 23), n, p=weights / weights.sum())], dtype=object)
    occ[rng.choice(n, 3, replace=False)] = ["O23", "O24", "O25"]
    return pd.DataFrame(
        {
            "pid": np.arange(n, dtype=np.int64),
            "hid": np.arange(n, dtype=np.int64),
            "is_ref": np.ones(n, dtype=bool),
            "area": pd.Categorical(area),
            "sex": pd.Categorical(rng.choice(["M", "F"], n)),
            "age": rng.integers(0, 95, n).astype(np.int16),
            "occ": pd.Categorical(occ),
            "rkey": rng.random(n),
        }
    )


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> TableEngine:
    return open_served(publish(tmp_path_factory.mktemp("attack"), tables=TABLES, data=_persons(), config=CONFIG))


def protected(engine: TableEngine) -> Source:
    return lambda q: engine.answer(q).table["count"]


def unprotected(engine: TableEngine) -> Source:
    """The same tables with original counts: what a service without protection would return."""

    def counts(q: TableQuery) -> xr.DataArray:
        bds = [engine.offered[b] for b in q.breakdowns]
        full, _ = engine._full(q, bds)
        return engine.tabulate(q)["count"].copy(data=full)

    return counts


def _interval(p: int, d: int) -> tuple[int, int]:
    return (max(1, p - d), p + d) if p > 0 else (0, d)


def _exact(tables: list[xr.DataArray]) -> bool:
    """True when every total and subtotal of every table is the sum of its parts (no noise seen)."""
    for t in tables:
        for dim in t.dims:
            codes = [str(c) for c in t[dim].values]
            parents = [str(p) for p in t[f"{dim}.parent"].values]
            for k, code in enumerate(codes):
                kids = [j for j, p in enumerate(parents) if p == code]
                if kids and not (t.isel({dim: k}) == t.isel({dim: kids}).sum(dim)).all():
                    return False
    return True


def _recovered(targets: list[tuple[int, int, int]]) -> list[int]:
    """Targets as (lowest, highest, true count): the true small counts whose interval is one value."""
    return [n for lo, hi, n in targets if lo == hi == n and n in (1, 2)]


def geographical_differencing(source: Source, truth: Truth) -> tuple[list[int], int]:
    """R6 = R - (R1 + ... + R5), cell by cell of SEX x OCC; (recovered small counts, small targets)."""
    t = source(TableQuery(breakdowns=["GEO.A", "SEX", "OCC"]))
    d = 0 if _exact([t]) else D
    targets = []
    for s, o in itertools.product(["M", "F"], [f"O{k:02d}" for k in range(1, 26)]):
        cell = {"SEX": s, "OCC": o}
        lo, hi = _interval(int(t.sel({"GEO.A": "R", **cell})), d)
        for k in range(1, 6):
            klo, khi = _interval(int(t.sel({"GEO.A": f"R{k}", **cell})), d)
            lo, hi = lo - khi, hi - klo
        dlo, dhi = _interval(int(t.sel({"GEO.A": "R6", **cell})), d)
        targets.append((max(lo, dlo, 0), min(hi, dhi), int(truth.cells.sel({"GEO.A": "R6", **cell}))))
    return _recovered(targets), sum(n in (1, 2) for *_, n in targets)


def subpopulation_differencing(source: Source, truth: Truth) -> tuple[list[int], int]:
    """Children = all - (16 to 64) - (65 and over), cell by cell of GEO.A x OCC."""
    q = lambda age=None: TableQuery(breakdowns=["GEO.A", "OCC"], filters={"AGE.B": age} if age else {})  # noqa: E731
    everyone, adults, old, children = (source(q(a)) for a in (None, "Y16-64", "Y65-120", "Y0-15"))
    d = 0 if _exact([everyone, adults, old, children]) else D
    targets = []
    for cell in itertools.product(everyone["GEO.A"].values, everyone["OCC"].values):
        sel = {"GEO.A": cell[0], "OCC": cell[1]}
        lo, hi = _interval(int(everyone.sel(sel)), d)
        for part in (adults, old):
            plo, phi = _interval(int(part.sel(sel)), d)
            lo, hi = lo - phi, hi - plo
        clo, chi = _interval(int(children.sel(sel)), d)
        targets.append((max(lo, clo, 0), min(hi, chi), int(truth.children.sel(sel))))
    return _recovered(targets), sum(n in (1, 2) for *_, n in targets)


def linking(source: Source, truth: Truth) -> tuple[int, int]:
    """OCC x SEX and OCC x AGE.B: a person alone in an occupation is placed in OCC x SEX x AGE.B."""
    by_sex, by_age = source(TableQuery(breakdowns=["OCC", "SEX"])), source(TableQuery(breakdowns=["OCC", "AGE.B"]))
    d = 0 if _exact([by_sex, by_age]) else D
    placed = 0
    for occ in by_sex["OCC"].values[1:]:
        if _interval(int(by_sex.sel(OCC=occ, SEX="T")), d) != (1, 1):
            continue
        sexes = [s for s in ("M", "F") if _interval(int(by_sex.sel(OCC=occ, SEX=s)), d) == (1, 1)]
        ages = [
            a for a in by_age["AGE.B"].values[1:] if _interval(int(by_age.sel({"OCC": occ, "AGE.B": a})), d) == (1, 1)
        ]
        if sexes and ages and (str(occ), sexes[0], str(ages[0])) in truth.people:
            placed += 1
    return placed, len(truth.people)


@pytest.fixture(scope="module")
def truth(engine: TableEngine) -> Truth:
    plain = unprotected(engine)
    data = _persons()
    sizes = data.occ.value_counts()
    alone = data[data.occ.isin([o for o, n in sizes.items() if n == 1])]
    bands = pd.cut(alone.age, [-1, 15, 64, 120], labels=["Y0-15", "Y16-64", "Y65-120"])
    return Truth(
        plain(TableQuery(breakdowns=["GEO.A", "SEX", "OCC"])),
        plain(TableQuery(breakdowns=["GEO.A", "OCC"], filters={"AGE.B": "Y0-15"})),
        {(str(o), str(s), str(a)) for o, s, a in zip(alone.occ, alone.sex, bands, strict=True)},
    )


@pytest.mark.parametrize("attack", [geographical_differencing, subpopulation_differencing], ids=lambda f: f.__name__)
def test_differencing_recovers_small_counts_from_unprotected_tables_and_none_from_the_service(
    engine: TableEngine, truth: Truth, attack: Callable[[Source, Truth], tuple[list[int], int]]
) -> None:
    recovered, targets = attack(unprotected(engine), truth)
    assert targets >= 10 and len(recovered) == targets  # every 1 and 2 of the target, exactly
    recovered, targets = attack(protected(engine), truth)
    assert targets >= 10 and recovered == []


def test_linking_places_unique_persons_from_unprotected_tables_and_nobody_from_the_service(
    engine: TableEngine, truth: Truth
) -> None:
    placed, uniques = linking(unprotected(engine), truth)
    assert uniques >= 3 and placed == uniques
    placed, _ = linking(protected(engine), truth)
    assert placed == 0


def _means_attack(counts: list[int], means: list[float], d: int) -> tuple[int, int] | None:
    """Handbook Table 5.24: of the candidates (n1, n2) whose magnitudes add up to the margin's, the one
    nearest the published counts (multiples of the true counts add up too when ``D`` allows them).
    """
    n1s, n2s, nts = (range(max(1, p - d), p + d + 1) for p in counts)
    found = sorted(
        (abs(n1 - counts[0]) + abs(n2 - counts[1]) + abs(n1 + n2 - counts[2]), (n1, n2))
        for n1, n2 in itertools.product(n1s, n2s)
        if n1 + n2 in nts and abs(means[0] * n1 + means[1] * n2 - means[2] * (n1 + n2)) < 1e-6
    )
    if not found or (len(found) > 1 and found[0][0] == found[1][0]):
        return None
    return found[0][1]


def test_the_means_attack_succeeds_on_m_over_n_and_fails_on_m_over_n_hat(engine: TableEngine) -> None:
    """Per small area and occupation: SEX with the mean age, perturbed counts; originals sought."""
    data = _persons()
    broken = {"m/n": 0, "m/n-hat": 0}
    cases = 0
    for area, occ in itertools.product(["R6", "R5", "S1"], [f"O{k:02d}" for k in range(1, 16)]):
        table = engine.answer(TableQuery(breakdowns=["SEX"], filters={"GEO.A": area, "OCC": occ}, mean="age")).table
        published = [int(table["count"].sel(SEX=s)) for s in ("M", "F", "T")]
        rows = data[(data.area == area) & (data.occ == occ)]
        truth = (int((rows.sex == "M").sum()), int((rows.sex == "F").sum()))
        if min(truth) == 0 or (published[0], published[1]) == truth:
            continue  # nothing to find out: an empty cell, or counts published unchanged
        cases += 1
        original_means = [rows.age[rows.sex == s].mean() for s in ("M", "F")] + [rows.age.mean()]
        broken["m/n"] += _means_attack(published, original_means, D) == truth
        service_means = [float(table["mean"].sel(SEX=s)) for s in ("M", "F", "T")]
        broken["m/n-hat"] += _means_attack(published, service_means, D) == truth
    assert cases >= 20
    assert broken["m/n"] >= 0.7 * cases  # the published original means give the counts away (31 of 38)
    assert broken["m/n-hat"] == 0

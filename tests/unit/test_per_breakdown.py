"""PerBreakdown builds once per breakdown object and tells breakdowns apart by identity."""

from __future__ import annotations

import dataclasses

from cubeguard.cubes.hierarchy import Breakdown, PerBreakdown
from tests.conftest import tiny_breakdowns


def test_built_once_per_breakdown_and_afresh_past_the_limit() -> None:
    built: list[str] = []
    ids = PerBreakdown(lambda b: built.append(b.id) or b.id, kept=2)
    bds = tiny_breakdowns()
    sex, geo, age = bds["SEX"], bds["GEO.2"], bds["AGE.M"]
    assert [ids(sex), ids(sex), ids(geo), ids(sex)] == ["SEX", "SEX", "GEO.2", "SEX"]
    assert built == ["SEX", "GEO.2"]
    ids(age)  # a third: the cache starts afresh
    ids(sex)
    assert built == ["SEX", "GEO.2", "AGE.M", "SEX"]


def test_an_equal_copy_is_a_breakdown_of_its_own() -> None:
    sex = tiny_breakdowns()["SEX"]
    copy: Breakdown = dataclasses.replace(sex, id="SEX.COPY")
    ids = PerBreakdown(lambda b: b.id)
    assert (ids(sex), ids(copy)) == ("SEX", "SEX.COPY")

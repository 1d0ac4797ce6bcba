"""Microdata validation: each kind of bad input is named (column, rule, count, samples); nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cubeguard.config import load_release
from schemas.validate import MicrodataInvalid, validate_microdata
from tests.conftest import tiny_microdata


def _run(cfg: Path, frame: pd.DataFrame) -> MicrodataInvalid:
    frame.to_parquet(cfg.parent / "data" / "persons.parquet", row_group_size=1500)
    report = cfg.parent / "report.json"
    with pytest.raises(MicrodataInvalid) as info:
        validate_microdata(load_release(cfg), report, batch_size=1500)
    assert json.loads(report.read_text())["failures"] == info.value.report.failures
    assert not (cfg.parent / "out").exists()
    return info.value


def _failure(exc: MicrodataInvalid, column: str) -> dict:
    return next(f for f in exc.report.failures if f["column"] == column)


def test_good_microdata_passes(tiny_release: Path) -> None:
    rep = validate_microdata(load_release(tiny_release), None, batch_size=1000)
    assert rep.ok and rep.records == len(tiny_microdata())


def test_code_outside_classification(tiny_release: Path) -> None:
    df = tiny_microdata()
    df["sex"] = df["sex"].astype(str)
    bad_rows = [3, 1700, 5000]
    df.loc[bad_rows, "sex"] = "9"
    exc = _run(tiny_release, df)
    f = _failure(exc, "sex")
    assert f["count"] == 3 and [s["row"] for s in f["samples"]] == bad_rows
    assert f["rule"] == "value not a leaf code of SEX"
    assert str(exc).startswith("microdata failed validation: 1 rule(s) broken, first: column 'sex'")
    assert "correct the input and run again" in str(exc)


def test_integer_out_of_range_and_nulls(tiny_release: Path) -> None:
    df = tiny_microdata()
    df["age"] = df["age"].astype("float64")
    df.loc[[10, 11], "age"] = 130
    df.loc[12, "age"] = np.nan
    exc = _run(tiny_release, df)
    rules = {f["rule"]: f["count"] for f in exc.report.failures if f["column"] == "age"}
    assert rules == {"not_nullable": 1, "value not a leaf code of AGE": 2}


def test_record_keys_must_lie_in_unit_interval(tiny_release: Path) -> None:
    df = tiny_microdata()
    df.loc[[0, 4000], "rkey"] = [1.0, -0.25]
    df.loc[7, "rkey"] = np.nan
    exc = _run(tiny_release, df)
    rules = {f["rule"]: f["count"] for f in exc.report.failures if f["column"] == "rkey"}
    assert rules["record key < 1"] == 1 and rules["record key >= 0"] == 1
    assert sum(rules.values()) == 3


def test_duplicate_person_ids_across_batches(tiny_release: Path) -> None:
    df = tiny_microdata()
    df.loc[5000, "pid"] = 2
    exc = _run(tiny_release, df)
    f = _failure(exc, "pid")
    assert f["rule"] == "unique person id" and f["count"] == 1 and f["samples"][0]["row"] == 5000


def test_household_members_must_share_geography(tiny_release: Path) -> None:
    df = tiny_microdata()
    df["region"] = df["region"].astype(str)
    hid = df["hid"].value_counts().index[0]  # a household with several members
    row = df.index[df["hid"] == hid][-1]
    df.loc[row, "region"] = "B1" if df.loc[row, "region"] != "B1" else "A1"
    exc = _run(tiny_release, df)
    f = _failure(exc, "region")
    assert f["count"] == 1 and f["samples"] == [{"hid": hid}]
    assert "same value for every member of a household" in f["rule"]


def test_no_household_has_two_reference_persons(tiny_release: Path) -> None:
    df = tiny_microdata()
    sizes = df["hid"].value_counts()
    two, none = sizes.index[0], sizes.index[1]  # households with several members
    df.loc[df.index[(df["hid"] == two) & ~df["is_ref"]][0], "is_ref"] = True
    df.loc[df["hid"] == none, "is_ref"] = False  # no reference person: a unit outside private households, allowed
    exc = _run(tiny_release, df)  # batches of 1,500 rows: a household spanning two is summed across them
    f = _failure(exc, "is_ref")
    assert f["count"] == 1 and [s["hid"] for s in f["samples"]] == [two]
    assert f["rule"] == "at most one reference person in each household (hid)"


def test_missing_column_is_one_sentence(tiny_release: Path) -> None:
    from cubeguard.errors import CubeguardError

    tiny_microdata().drop(columns="sex").to_parquet(tiny_release.parent / "data" / "persons.parquet")
    with pytest.raises(CubeguardError, match="microdata has no column 'sex'"):
        validate_microdata(load_release(tiny_release), None)

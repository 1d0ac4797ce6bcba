"""k-anonymity risk per person and household, must-swap levels (Handbook on SDC v2, 5.6.1)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cubeguard.methods.targeted_swap import TargetedSwapStep
from cubeguard.swap._households import encode_households, nested_area_codes
from cubeguard.swap.common import SwapDataError
from cubeguard.swap.risk import (
    household_k_anonymity_risk,
    household_max,
    household_risk_table,
    k_anonymity_risk,
    must_swap_levels,
    risk_threshold,
)

# Two regions; region A has districts A1, A2. Persons: (hid, region, district, age).
PERSONS = pd.DataFrame(
    {
        "hid": [1, 1, 2, 3, 3, 4, 5],
        "region": ["A", "A", "A", "A", "A", "B", "B"],
        "district": ["A1", "A1", "A1", "A2", "A2", "B1", "B1"],
        "age": [30, 40, 30, 30, 50, 30, 40],
        "hsize": [2, 2, 1, 2, 2, 1, 1],
    }
)
PARAMS = TargetedSwapStep(
    household_id="hid",
    hierarchy=("region", "district"),
    similar=(("hsize",),),
    risk_variables=("age",),
    k_anonymity=2,
)


def test_person_risk_is_inverse_group_count() -> None:
    areas = nested_area_codes([PERSONS["region"].to_numpy(), PERSONS["district"].to_numpy()])
    risk_code = PERSONS["age"].rank(method="dense").astype(int).to_numpy() - 1
    risk = k_anonymity_risk(risk_code, areas)
    # age 30: 3 persons in A, 1 in B; in A1: 2, A2: 1, B1: 1.
    assert risk[:, 0].tolist() == [1 / 3, 1.0, 1 / 3, 1 / 3, 1.0, 1.0, 1.0]
    assert risk[:, 1].tolist() == [1 / 2, 1.0, 1 / 2, 1.0, 1.0, 1.0, 1.0]


def test_household_risk_is_member_maximum_and_level_is_first_above_threshold() -> None:
    table = household_risk_table(PERSONS, PARAMS)
    assert table.index.tolist() == [1, 2, 3, 4, 5]
    assert table["region"].tolist() == [1.0, 1 / 3, 1.0, 1.0, 1.0]
    assert table["district"].tolist() == [1.0, 1 / 2, 1.0, 1.0, 1.0]
    # k = 2: risk > 1/2 means a group of 1. Household 2 is safe at both levels.
    assert table["must_swap_level"].tolist() == ["region", np.nan, "region", "region", "region"]


def test_fused_and_fallback_household_risk_agree_with_person_maximum() -> None:
    rng = np.random.default_rng(5)
    n_hh = 300
    size = rng.integers(1, 4, n_hh)
    of_row = np.repeat(np.arange(n_hh), size)
    frame = pd.DataFrame({"hid": of_row, "risk": rng.integers(0, 40, len(of_row))})
    households = encode_households(frame, "hid")
    for n_areas in (3, 200):  # 200 areas x 40 risk codes exceeds the direct table size
        area_hh = rng.integers(0, n_areas, n_hh)
        areas_hh = nested_area_codes([area_hh])
        risk_code = frame["risk"].to_numpy().astype(np.int64)
        expected = household_max(k_anonymity_risk(risk_code, [(areas_hh[0][0][of_row], areas_hh[0][1])]), households)
        got = household_k_anonymity_risk(risk_code, households, areas_hh)
        np.testing.assert_array_equal(got, expected)


def test_thresholds() -> None:
    assert risk_threshold(PARAMS) == 0.5
    assert risk_threshold(PARAMS.model_copy(update={"k_anonymity": 0})) == math.inf
    user = TargetedSwapStep(
        household_id="hid",
        hierarchy=("region",),
        similar=(("hsize",),),
        risk_columns=("r",),
        risk_threshold=0.25,
    )
    assert risk_threshold(user) == 0.25


def test_must_swap_levels() -> None:
    risk = np.array([[0.1, 0.2, 0.6], [0.6, 0.1, 0.1], [0.1, 0.1, 0.1], [0.5, 0.5, 0.5]])
    assert must_swap_levels(risk, 0.5).tolist() == [2, 0, 3, 3]


def test_user_risk_columns_take_household_maximum() -> None:
    data = PERSONS.assign(r1=[0.1, 0.9, 0.0, 0.2, 0.1, 0.0, 0.0], r2=0.3)
    params = TargetedSwapStep(
        household_id="hid",
        hierarchy=("region", "district"),
        similar=(("hsize",),),
        risk_columns=("r1", "r2"),
        risk_threshold=0.25,
    )
    table = household_risk_table(data, params)
    assert table["region"].tolist() == [0.9, 0.0, 0.2, 0.0, 0.0]
    assert table["must_swap_level"].tolist() == ["region", "district", "district", "district", "district"]


def test_negative_user_risk_is_rejected() -> None:
    params = TargetedSwapStep(
        household_id="hid",
        hierarchy=("region",),
        similar=(("hsize",),),
        risk_columns=("r",),
        risk_threshold=0.25,
    )
    with pytest.raises(SwapDataError, match="risk column 'r' must hold finite numbers >= 0"):
        household_risk_table(PERSONS.assign(r=-1.0), params)


def test_geography_must_be_constant_in_household() -> None:
    data = PERSONS.copy()
    data.loc[1, "district"] = "A2"
    with pytest.raises(SwapDataError, match=r"column 'district' varies within 1 households \(e.g. 1\)"):
        household_risk_table(data, PARAMS)

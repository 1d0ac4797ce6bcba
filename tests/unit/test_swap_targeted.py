"""Targeted record swapping (Handbook on SDC v2, 5.6.1; sdcMicro recordSwap): unit behaviour."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cubeguard.methods.targeted_swap import TargetedSwapStep, targeted_swap
from cubeguard.methods.targeted_swap.kernel import NO_SIMILAR, SIMILAR_USED, distribute_draws
from cubeguard.swap.common import SwapDataError, SwapSeedError


def households(rows: list[tuple[int, str, str, int, int]]) -> pd.DataFrame:
    """One person per (hid, region, district, hsize, age) tuple."""
    return pd.DataFrame(rows, columns=["hid", "region", "district", "hsize", "age"]).assign(
        lau=lambda d: d["district"] + "x"
    )


PARAMS = TargetedSwapStep(
    household_id="hid",
    hierarchy=("region", "district"),
    similar=(("hsize",),),
    risk_variables=("age",),
    carry_along=("lau",),
    swap_rate=0.0,
    k_anonymity=2,
)


def test_unique_household_is_swapped_out_of_its_region() -> None:
    # Household 1 (age 99) is unique in region A: it must be swapped at the region level.
    data = households(
        [
            (1, "A", "A1", 1, 99),
            (2, "A", "A1", 1, 30),
            (5, "A", "A1", 1, 30),
            (3, "B", "B1", 1, 30),
            (4, "B", "B1", 1, 30),
        ]
    )
    result = targeted_swap(data, PARAMS, seed=1)
    assert result.must_swap_level[1] == "region"
    assert result.swap_level[1] == "region"
    partner = result.partner[1]
    assert partner in (3, 4)
    assert result.partner[partner] == 1
    moved = result.data.set_index("hid")
    assert moved.loc[1, "region"] == "B"
    assert moved.loc[1, "lau"] == "B1x"
    assert moved.loc[partner, ["region", "district", "lau"]].tolist() == ["A", "A1", "A1x"]
    assert result.n_households_swapped == 2
    assert result.n_persons_swapped == 2


def test_rows_keep_order_and_other_columns() -> None:
    rng = np.random.default_rng(3)
    n = 400
    data = pd.DataFrame(
        {
            "hid": np.repeat(np.arange(200), 2)[::-1],  # not sorted by hid
            "region": np.repeat(rng.choice(["A", "B", "C"], 200), 2),
            "hsize": 2,
            "age": rng.integers(0, 20, n),
        }
    )
    data["district"] = data["region"] + np.repeat(rng.choice(["1", "2"], 200), 2)
    data["lau"] = data["district"] + "x"
    data.index = pd.RangeIndex(1000, 1000 + n)
    result = targeted_swap(data, PARAMS.model_copy(update={"swap_rate": 0.3}), seed=7)
    assert result.n_households_swapped > 0
    assert result.data.index.equals(data.index)
    pd.testing.assert_frame_equal(result.data[["hid", "hsize", "age"]], data[["hid", "hsize", "age"]])
    assert (result.data["lau"] == result.data["district"] + "x").all()


def test_no_similar_household_anywhere_else() -> None:
    # Household 1 is the only household of size 3: no donor with that profile exists.
    data = households(
        [
            (1, "A", "A1", 3, 99),
            (1, "A", "A1", 3, 30),
            (1, "A", "A1", 3, 30),
            (2, "B", "B1", 1, 30),
            (3, "B", "B1", 1, 30),
        ]
    )
    result = targeted_swap(data, PARAMS, seed=1)
    assert result.no_donor.index.tolist() == [1]
    assert result.no_donor.loc[1, "level"] == "region"
    assert result.no_donor.loc[1, "reason"] == NO_SIMILAR
    assert result.n_households_swapped == 0
    pd.testing.assert_frame_equal(result.data, data)


def test_similar_households_all_used() -> None:
    # Two unique households in region A compete for the single similar household in region B.
    data = households(
        [
            (1, "A", "A1", 1, 98),
            (2, "A", "A2", 1, 99),
            (3, "B", "B1", 1, 30),
            (4, "B", "B1", 2, 30),
            (4, "B", "B1", 2, 30),
        ]
    )
    result = targeted_swap(data, PARAMS, seed=2)
    assert result.n_households_swapped == 2
    assert result.partner[3] in (1, 2)
    assert result.no_donor.index.tolist() == [({1, 2} - {result.partner[3]}).pop()]
    assert result.no_donor["reason"].tolist() == [SIMILAR_USED]


def test_second_profile_is_the_fallback() -> None:
    params = PARAMS.model_copy(update={"similar": (("hsize", "htype"), ("hsize",))})
    data = households([(1, "A", "A1", 1, 99), (2, "B", "B1", 1, 30), (3, "B", "B1", 1, 30)])
    data["htype"] = [1, 2, 2]
    result = targeted_swap(data, params, seed=1)
    assert result.matched_profile[1] == 1
    assert result.matched_profile[result.partner[1]] == 1


def test_zero_risk_households_are_never_donors() -> None:
    params = TargetedSwapStep(
        household_id="hid",
        hierarchy=("region",),
        similar=(("hsize",),),
        risk_columns=("r",),
        risk_threshold=0.5,
    )
    data = households([(1, "A", "A1", 1, 0), (2, "B", "B1", 1, 0), (3, "B", "B1", 1, 0)])
    data["r"] = [0.9, 0.0, 0.1]
    for seed in range(20):
        assert targeted_swap(data, params, seed).partner[1] == 3


@pytest.mark.slow
def test_donor_probability_is_proportional_to_risk() -> None:
    """Chi-square goodness of fit, 2 df, critical value 27.63 for a false-positive rate of 1e-6."""
    params = TargetedSwapStep(
        household_id="hid",
        hierarchy=("region",),
        similar=(("hsize",),),
        risk_columns=("r",),
        risk_threshold=0.5,
        swap_rate=0.0,
    )
    data = households([(1, "A", "A1", 1, 0), (2, "B", "B1", 1, 0), (3, "B", "B1", 1, 0), (4, "C", "C1", 1, 0)])
    data["r"] = [0.9, 0.1, 0.2, 0.3]
    n = 1500
    picks = np.array([targeted_swap(data, params, seed).partner[1] for seed in range(n)])
    observed = np.array([(picks == h).sum() for h in (2, 3, 4)])
    expected = n * np.array([1, 2, 3]) / 6
    assert ((observed - expected) ** 2 / expected).sum() < 27.63


def test_swap_rate_budget_is_met_when_donors_are_plentiful() -> None:
    rng = np.random.default_rng(11)
    n_hh = 2000
    data = pd.DataFrame(
        {
            "hid": np.arange(n_hh),
            "region": rng.choice(list("ABCD"), n_hh),
            "hsize": 1,
            "age": 0,
        }
    )
    data["district"] = data["region"] + rng.choice(list("123"), n_hh)
    data["lau"] = data["district"]
    params = PARAMS.model_copy(update={"swap_rate": 0.1, "k_anonymity": 0})
    result = targeted_swap(data, params, seed=5)
    assert result.n_households_swapped == 200
    assert result.must_swap_counts["none"] == n_hh
    assert set(result.swap_level.dropna()) == {"district"}


def test_distribute_draws_total_and_no_excess_quirk() -> None:
    rng = np.random.default_rng(0)
    sizes = np.array([10, 20, 30, 40], dtype=np.int64)
    draws = distribute_draws(sizes, 0.1, rng)  # 5 pairs, shares 0.5, 1, 1.5, 2
    assert draws.sum() == 5
    assert (draws >= np.floor(sizes / 100 * 5)).all()
    assert distribute_draws(sizes, 0.0, rng).tolist() == [0, 0, 0, 0]
    exact = distribute_draws(np.array([100, 300]), 0.2, rng)  # 40 pairs, no fractional part
    assert exact.tolist() == [10, 30]


def test_identity_without_risk_and_rate() -> None:
    data = households([(1, "A", "A1", 1, 99), (2, "B", "B1", 1, 30)])
    params = PARAMS.model_copy(update={"k_anonymity": 0, "swap_rate": 0.0})
    result = targeted_swap(data, params, seed=3)
    pd.testing.assert_frame_equal(result.data, data)
    assert (result.partner == result.partner.index).all()
    assert result.swap_level.isna().all()


def test_categorical_and_string_columns_keep_their_dtype() -> None:
    data = households([(1, "A", "A1", 1, 99), (2, "B", "B1", 1, 30), (3, "B", "B1", 1, 30)]).astype(
        {"region": "category", "lau": "string"}
    )
    result = targeted_swap(data, PARAMS, seed=1)
    assert result.n_households_swapped == 2
    assert (result.data.dtypes == data.dtypes).all()


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.drop(columns="age"), r"swap columns \['age'\] are not in the data"),
        (lambda d: d.assign(age=[np.nan, 1.0, 2.0]), "column 'age' has 1 missing values"),
        (lambda d: d.assign(hid=[1, 1, 2]), r"column 'region' varies within 1 households \(e.g. 1\)"),
        (lambda d: d.assign(hid=[1, 2, 2], lau=["a", "b", "c"]), "column 'lau' varies within"),
    ],
)
def test_data_errors(mutate: object, message: str) -> None:
    data = households([(1, "A", "A1", 1, 99), (2, "B", "B1", 1, 30), (3, "B", "B1", 1, 30)])
    with pytest.raises(SwapDataError, match=message):
        targeted_swap(mutate(data), PARAMS, seed=1)  # type: ignore[operator]


def test_all_data_problems_reported_together() -> None:
    data = households([(1, "A", "A1", 1, 99)]).drop(columns=["age", "lau"])
    with pytest.raises(SwapDataError, match=r"\['lau', 'age'\] are not in the data"):
        targeted_swap(data, PARAMS, seed=1)


def test_empty_data() -> None:
    data = households([]).astype({"hid": int, "hsize": int, "age": int})
    result = targeted_swap(data, PARAMS, seed=1)
    assert result.n_households_swapped == 0
    assert len(result.data) == 0


@pytest.mark.parametrize("seed", [-17, 1.5, "7", True])
def test_seed_must_be_a_non_negative_integer(seed: object) -> None:
    data = households([(1, "A", "A1", 1, 99), (2, "B", "B1", 1, 30)])
    with pytest.raises(SwapSeedError, match="seed must be a non-negative integer, got") as info:
        targeted_swap(data, PARAMS, seed)  # type: ignore[arg-type]
    assert str(seed) not in str(info.value)  # a seed is secret: never echoed

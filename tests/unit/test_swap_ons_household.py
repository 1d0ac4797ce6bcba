"""ONS targeted household swapping (Frend et al. 2011, seed 003, section 2)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from cubeguard.methods.ons_household_swap import OnsHouseholdSwapStep, ons_household_swap
from cubeguard.swap.common import SwapDataError

BASE = {
    "household_id": "hid",
    "hierarchy": ("msoa", "oa"),
    "household_size": "hsize",
    "risk_variables": ("age", "sex"),
    "risk_thresholds": (0.5, 0.9),
}


def town(n_households: int = 600, seed: int = 0) -> pd.DataFrame:
    """Households in 4 MSOAs x 5 OAs, two delivery groups, some imputed."""
    rng = np.random.default_rng(seed)
    size = rng.integers(1, 4, n_households)
    hid = np.repeat(np.arange(n_households), size)
    msoa = rng.integers(0, 4, n_households)
    frame = pd.DataFrame(
        {
            "hid": hid,
            "msoa": msoa[hid],
            "oa": (msoa * 10 + rng.integers(0, 5, n_households))[hid],
            "hsize": size[hid],
            "tenure": rng.integers(0, 3, n_households)[hid],
            "dg": (msoa // 2)[hid],
            "imputed": (rng.random(n_households) < 0.1)[hid],
            "age": rng.integers(0, 20, len(hid)),
            "sex": rng.integers(0, 2, len(hid)),
        }
    )
    return frame


def test_risk_score_is_mean_reciprocal_univariate_count() -> None:
    data = pd.DataFrame(
        {"hid": [1, 2, 3, 4], "msoa": 0, "oa": [0, 0, 0, 1], "hsize": 1, "age": [5, 5, 7, 5], "sex": [0, 1, 1, 1]}
    )
    result = ons_household_swap(data, OnsHouseholdSwapStep(**BASE, swap_rate=0.0), seed=0)
    # msoa: age counts 3,3,1,3; sex counts 1,3,3,3 -> scores (1/3+1)/2, (1/3+1/3)/2, (1+1/3)/2, ...
    np.testing.assert_allclose(result.household_risk["msoa"], [2 / 3, 1 / 3, 2 / 3, 1 / 3])
    # oa 0: age counts 2,2,1; sex counts 1,2,2; oa 1: age 1, sex 1.
    np.testing.assert_allclose(result.household_risk["oa"], [0.75, 0.5, 0.75, 1.0])
    assert result.high_risk.tolist() == [True, False, True, True]
    assert result.unique_level.tolist() == ["msoa", np.nan, "msoa", "oa"]


def test_partners_match_and_stay_in_delivery_group() -> None:
    data = town()
    params = OnsHouseholdSwapStep(
        **BASE, matching=(("tenure",), ()), swap_rate=0.1, delivery_group="dg", imputed="imputed"
    )
    result = ons_household_swap(data, params, seed=4)
    first = data.groupby("hid").first()
    swapped = result.partner[result.partner != result.partner.index]
    assert result.n_households_swapped == len(swapped) > 0
    assert (swapped.loc[swapped.to_numpy()].to_numpy() == swapped.index).all()
    for column in ("hsize", "dg"):
        assert (first.loc[swapped.index, column].to_numpy() == first.loc[swapped, column].to_numpy()).all()
    assert not first.loc[swapped.index, "imputed"].any()
    assert not result.sampled[first["imputed"]].any()
    # Every pair differs at its swap level and shares the areas above it.
    for hid, partner in swapped.items():
        depth = ["msoa", "oa"].index(result.swap_level[hid])
        assert first.loc[hid, "oa"] != first.loc[partner, "oa"]
        assert depth == 0 or first.loc[hid, "msoa"] == first.loc[partner, "msoa"]
        if result.matched_profile[hid] == 0:
            assert first.loc[hid, "tenure"] == first.loc[partner, "tenure"]
    moved = result.data.groupby("hid")[["msoa", "oa"]].first()
    expected = first.loc[result.partner.to_numpy(), ["msoa", "oa"]].to_numpy()
    np.testing.assert_array_equal(moved.to_numpy(), expected)


def test_unique_households_leave_their_unique_area() -> None:
    data = town(seed=2)
    data["age"] = np.random.default_rng(2).integers(0, 400, len(data))  # many uniques per MSOA
    params = OnsHouseholdSwapStep(**BASE, swap_rate=0.3)
    result = ons_household_swap(data, params, seed=1)
    first = data.groupby("hid").first()
    unique_msoa = result.unique_level.eq("msoa") & result.sampled & (result.partner != result.partner.index)
    assert unique_msoa.any()
    partners = result.partner[unique_msoa]
    assert (first.loc[partners.index, "msoa"].to_numpy() != first.loc[partners, "msoa"].to_numpy()).all()


def test_sample_size_and_area_cap() -> None:
    data = town(seed=3)
    params = OnsHouseholdSwapStep(**BASE, swap_rate=0.2, max_area_share=0.25, imputed="imputed")
    result = ons_household_swap(data, params, seed=2)
    first = data.groupby("hid").first()
    eligible = ~first["imputed"]
    assert abs(result.sampled.sum() - 0.2 * eligible.sum()) <= 1
    per_area = result.sampled.groupby(first["oa"]).sum()
    cap = np.ceil(eligible.groupby(first["oa"]).sum() * 0.25)
    assert (per_area <= cap).all()


def test_high_risk_weight_sets_selection_probability() -> None:
    """One of two households is sampled: P(high risk) = w / (w + 1); 5 sd bound (FPR ~ 6e-7)."""
    data = pd.DataFrame({"hid": [1, 2, 2], "msoa": 0, "oa": [0, 1, 1], "hsize": [1, 2, 2], "age": [9, 1, 1], "sex": 0})
    params = OnsHouseholdSwapStep(**BASE, swap_rate=0.5, high_risk_weight=4.0, max_area_share=1.0)
    n = 1500
    picked = [ons_household_swap(data, params, seed).sampled[1] for seed in range(n)]
    p = 4 / 5
    assert abs(np.mean(picked) - p) <= 5 * np.sqrt(p * (1 - p) / n)


def test_rate_zero_is_identity_and_seed_is_deterministic() -> None:
    data = town(200)
    params = OnsHouseholdSwapStep(**BASE, swap_rate=0.0)
    result = ons_household_swap(data, params, seed=3)
    pd.testing.assert_frame_equal(result.data, data)
    busy = params.model_copy(update={"swap_rate": 0.3})
    first = ons_household_swap(data, busy, seed=9)
    again = ons_household_swap(data, busy, seed=9)
    pd.testing.assert_series_equal(first.partner, again.partner)
    assert first.n_households_swapped > 0


def test_counts_per_area_are_kept() -> None:
    data = town(seed=6)
    params = OnsHouseholdSwapStep(**BASE, swap_rate=0.3, delivery_group="dg")
    result = ons_household_swap(data, params, seed=5)
    for keys in (["msoa"], ["msoa", "oa"]):
        pd.testing.assert_series_equal(result.data.groupby(keys).size(), data.groupby(keys).size())


def test_invalid_params_and_data() -> None:
    with pytest.raises(ValidationError, match="risk_thresholds has 1 values but hierarchy has 2 levels"):
        OnsHouseholdSwapStep(**{**BASE, "risk_thresholds": (0.5,)})
    with pytest.raises(ValidationError, match=r"household_size and matching use swapped columns \['oa'\]"):
        OnsHouseholdSwapStep(**BASE, matching=(("oa",),))
    data = town(50)
    big = data["hid"].value_counts().idxmax()
    data.loc[data.index[data["hid"] == big][0], "hsize"] = 9
    with pytest.raises(SwapDataError, match=f"column 'hsize' varies within 1 households \\(e.g. {big}\\)"):
        ons_household_swap(data, OnsHouseholdSwapStep(**BASE), seed=0)
    with pytest.raises(SwapDataError, match=r"ONS swap columns \['sex'\] are not in the data"):
        ons_household_swap(town(50).drop(columns="sex"), OnsHouseholdSwapStep(**BASE), seed=0)


def test_carry_along_columns_move_with_the_geography() -> None:
    data = town(seed=2)
    data["oa_class"] = data["oa"] % 3  # a function of the lowest level, as a locality size class
    params = OnsHouseholdSwapStep(**BASE, swap_rate=0.3, carry_along=("oa_class",))
    result = ons_household_swap(data, params, seed=4)
    moved = (result.data["oa"] != data["oa"]).to_numpy()
    assert moved.sum() > 50
    np.testing.assert_array_equal(result.data["oa_class"], result.data["oa"] % 3)
    unchanged = [c for c in data.columns if c not in ("msoa", "oa", "oa_class")]
    pd.testing.assert_frame_equal(result.data[unchanged], data[unchanged])
    with pytest.raises(ValidationError, match=r"columns \['oa'\] appear more than once in household_id, hierarchy"):
        OnsHouseholdSwapStep(**BASE, carry_along=("oa",))
    big = data["hid"].value_counts().idxmax()
    data.loc[data.index[data["hid"] == big][0], "oa_class"] = 7
    with pytest.raises(SwapDataError, match="column 'oa_class' varies within 1 households"):
        ons_household_swap(data, params, seed=0)

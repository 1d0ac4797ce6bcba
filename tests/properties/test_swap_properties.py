"""Properties of targeted record swapping on small random household data (Hypothesis)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.methods.targeted_swap import TargetedSwapStep, targeted_swap

HIERARCHY = ("region", "district", "block")


@st.composite
def household_data(draw: st.DrawFn) -> pd.DataFrame:
    """Persons in households; geography and htype per household, age and sex per person."""
    n_households = draw(st.integers(1, 40))
    per_household = st.tuples(
        st.integers(1, 3),  # hsize
        st.integers(0, 2),  # region
        st.integers(0, 2),  # district (within region: prefix areas)
        st.integers(0, 1),  # block
        st.integers(0, 1),  # htype
    )
    rows = []
    for hid, (hsize, region, district, block, htype) in enumerate(
        draw(st.lists(per_household, min_size=n_households, max_size=n_households))
    ):
        for _ in range(hsize):
            age = draw(st.integers(0, 3))
            rows.append((hid * 7 + 3, region, district, block, htype, hsize, age, draw(st.integers(0, 1))))
    data = pd.DataFrame(rows, columns=["hid", "region", "district", "block", "htype", "hsize", "age", "sex"])
    data["lau"] = data["region"] * 100 + data["district"] * 10 + data["block"]
    return data.sample(frac=1.0, random_state=draw(st.integers(0, 9))).reset_index(drop=True)


@st.composite
def swap_params(draw: st.DrawFn) -> TargetedSwapStep:
    """Parameters whose similarity profiles all contain the household size."""
    return TargetedSwapStep(
        household_id="hid",
        hierarchy=HIERARCHY[: draw(st.integers(1, 3))],
        similar=draw(st.sampled_from([(("hsize",),), (("hsize", "htype"), ("hsize",))])),
        risk_variables=draw(st.sampled_from([("age",), ("age", "sex"), ()])),
        carry_along=("lau",),
        swap_rate=draw(st.sampled_from([0.0, 0.1, 0.3, 0.6, 1.0])),
        k_anonymity=draw(st.integers(0, 4)),
    )


def first_values(data: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    return data.groupby("hid")[columns].first()


@settings(max_examples=150, deadline=None)
@given(household_data(), swap_params(), st.integers(0, 2**32 - 1))
def test_pairs_match_profile_and_differ_at_swap_level(data: pd.DataFrame, params: TargetedSwapStep, seed: int) -> None:
    result = targeted_swap(data, params, seed)
    levels = list(params.hierarchy)
    before = first_values(data, [*levels, "hsize", "htype"])
    swapped = result.partner[result.partner != result.partner.index]
    for hid, partner in swapped.items():
        profile = params.similar[int(result.matched_profile[hid])]
        assert (before.loc[hid, list(profile)] == before.loc[partner, list(profile)]).all()
        depth = levels.index(result.swap_level[hid]) + 1
        assert tuple(before.loc[hid, levels[:depth]]) != tuple(before.loc[partner, levels[:depth]])
        assert result.swap_level[hid] == result.swap_level[partner]
    after = first_values(result.data, [*levels, "lau"])
    expected = first_values(data, [*levels, "lau"]).loc[result.partner.to_numpy()]
    np.testing.assert_array_equal(after.to_numpy(), expected.to_numpy())


@settings(max_examples=150, deadline=None)
@given(household_data(), swap_params(), st.integers(0, 2**32 - 1))
def test_no_household_is_swapped_twice(data: pd.DataFrame, params: TargetedSwapStep, seed: int) -> None:
    result = targeted_swap(data, params, seed)
    partner = result.partner
    assert (partner.loc[partner.to_numpy()].to_numpy() == partner.index).all()  # an involution
    assert partner.is_unique
    swapped = partner != partner.index
    assert result.n_households_swapped == int(swapped.sum())
    assert result.swap_level.notna().equals(swapped)
    # Every must-swap household left its risky area or is reported without donor.
    must = result.must_swap_level.notna()
    handled = swapped | partner.index.isin(result.no_donor.index)
    assert handled[must].all()


@settings(max_examples=150, deadline=None)
@given(household_data(), swap_params(), st.integers(0, 2**32 - 1))
def test_counts_per_area_unchanged_when_household_size_is_matched(
    data: pd.DataFrame, params: TargetedSwapStep, seed: int
) -> None:
    result = targeted_swap(data, params, seed)
    for depth in range(1, len(params.hierarchy) + 1):
        keys = list(params.hierarchy[:depth])
        pd.testing.assert_series_equal(result.data.groupby(keys).size(), data.groupby(keys).size())
        pd.testing.assert_series_equal(result.data.groupby(keys)["hid"].nunique(), data.groupby(keys)["hid"].nunique())


@settings(max_examples=100, deadline=None)
@given(household_data(), swap_params(), st.integers(0, 2**32 - 1))
def test_rate_zero_without_risk_rule_returns_data_unchanged(
    data: pd.DataFrame, params: TargetedSwapStep, seed: int
) -> None:
    quiet = params.model_copy(update={"swap_rate": 0.0, "k_anonymity": 0})
    result = targeted_swap(data, quiet, seed)
    pd.testing.assert_frame_equal(result.data, data)
    assert result.n_households_swapped == 0
    assert len(result.no_donor) == 0


@settings(max_examples=100, deadline=None)
@given(household_data(), swap_params(), st.integers(0, 2**32 - 1))
def test_same_seed_gives_same_swaps(data: pd.DataFrame, params: TargetedSwapStep, seed: int) -> None:
    first = targeted_swap(data, params, seed)
    again = targeted_swap(data.copy(), params, seed)
    pd.testing.assert_series_equal(first.partner, again.partner)
    pd.testing.assert_frame_equal(first.data, again.data)
    pd.testing.assert_frame_equal(first.no_donor, again.no_donor)

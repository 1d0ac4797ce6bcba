"""Random record swapping within strata (Shlomo 2009, section 3.1)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cubeguard.methods.random_swap import RandomSwapStep, random_swap
from cubeguard.swap.common import SwapDataError


def persons(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"nuts2": rng.choice(["N1", "N2"], n), "age": rng.integers(0, 9, n)})
    frame["lau2"] = frame["nuts2"] + rng.choice(["a", "b", "c", "d"], n)
    return frame


def test_pairs_stay_in_stratum_and_differ_in_swapped_columns() -> None:
    data = persons()
    params = RandomSwapStep(unit="records", swap_columns=("lau2",), strata=("nuts2",), swap_rate=0.05)
    result = random_swap(data, params, seed=1)
    partner = result.partner.to_numpy()
    swapped = np.flatnonzero(partner != np.arange(len(data)))
    assert (partner[partner] == np.arange(len(data))).all()
    assert (data["nuts2"].to_numpy()[swapped] == data["nuts2"].to_numpy()[partner[swapped]]).all()
    assert (data["lau2"].to_numpy()[swapped] != data["lau2"].to_numpy()[partner[swapped]]).all()
    np.testing.assert_array_equal(result.data["lau2"].to_numpy()[swapped], data["lau2"].to_numpy()[partner[swapped]])
    pd.testing.assert_frame_equal(result.data[["nuts2", "age"]], data[["nuts2", "age"]])
    assert result.n_units_swapped == len(swapped)
    assert len(result.no_partner) == 0


def test_sample_size_is_rate_per_stratum() -> None:
    data = persons(4000)
    params = RandomSwapStep(unit="records", swap_columns=("lau2",), strata=("nuts2",), swap_rate=0.1)
    n_strata = data["nuts2"].value_counts()
    result = random_swap(data, params, seed=2)
    expected = 2 * (n_strata * 0.1)
    assert abs(result.n_units_swapped - expected.sum()) <= 2 * len(n_strata)


def test_partner_is_uniform_among_eligible_units() -> None:
    """Chi-square over the 9 possible pairs, 8 df, critical value 42.70 (false positives 1e-6)."""
    lau2 = np.array(["a", "b", "b", "c", "d"])
    data = pd.DataFrame({"lau2": lau2})
    params = RandomSwapStep(unit="records", swap_columns=("lau2",), swap_rate=0.2)  # one unit sampled
    n = 1500
    counts: dict[tuple[int, int], int] = {}
    for seed in range(n):
        partner = random_swap(data, params, seed).partner.to_numpy()
        pair = tuple(u for u in range(5) if partner[u] != u)
        counts[pair] = counts.get(pair, 0) + 1  # type: ignore[index]
    eligible = (lau2[:, None] != lau2[None, :]).sum(axis=1)
    pairs = [(i, j) for i in range(5) for j in range(i + 1, 5) if lau2[i] != lau2[j]]
    assert set(counts) <= set(pairs)
    # The sampled unit is uniform over 5, its partner uniform over its eligible units.
    expected = np.array([n / 5 * (1 / eligible[i] + 1 / eligible[j]) for i, j in pairs])
    observed = np.array([counts.get(p, 0) for p in pairs])
    assert ((observed - expected) ** 2 / expected).sum() < 42.70


def test_households_move_whole() -> None:
    rng = np.random.default_rng(5)
    hid = np.repeat(np.arange(500), rng.integers(1, 4, 500))
    area = rng.choice(list("abcdef"), 500)
    data = pd.DataFrame({"hid": hid, "lau2": area[hid], "hsize": np.bincount(hid)[hid]})
    params = RandomSwapStep(household_id="hid", swap_columns=("lau2",), strata=("hsize",), swap_rate=0.1)
    result = random_swap(data, params, seed=3)
    assert result.data.groupby("hid")["lau2"].nunique().max() == 1
    before = data.groupby("lau2").size()
    after = result.data.groupby("lau2").size()
    pd.testing.assert_series_equal(before, after)  # equal household sizes keep area counts
    assert result.n_rows_swapped == data["hid"].isin(result.partner[result.partner != result.partner.index].index).sum()


def test_rate_zero_is_identity_and_seed_is_deterministic() -> None:
    data = persons(500)
    zero = random_swap(data, RandomSwapStep(unit="records", swap_columns=("lau2",), swap_rate=0.0), seed=1)
    pd.testing.assert_frame_equal(zero.data, data)
    params = RandomSwapStep(unit="records", swap_columns=("lau2",), swap_rate=0.2)
    first = random_swap(data, params, seed=9)
    again = random_swap(data, params, seed=9)
    pd.testing.assert_series_equal(first.partner, again.partner)


def test_no_partner_when_stratum_has_one_value() -> None:
    data = pd.DataFrame({"lau2": ["a", "a", "a", "b"], "s": [1, 1, 1, 2]})
    params = RandomSwapStep(unit="records", swap_columns=("lau2",), strata=("s",), swap_rate=0.5)
    result = random_swap(data, params, seed=0)
    assert result.n_units_swapped == 0
    assert 1 <= len(result.no_partner) <= 2


def test_missing_column_and_household_level_errors() -> None:
    params = RandomSwapStep(household_id="hid", swap_columns=("lau2",), strata=("s",))
    with pytest.raises(SwapDataError, match=r"random swap columns \['s'\] are not in the data"):
        random_swap(pd.DataFrame({"hid": [1], "lau2": ["a"]}), params, seed=0)
    data = pd.DataFrame({"hid": [1, 1], "lau2": ["a", "b"], "s": [1, 1]})
    with pytest.raises(SwapDataError, match="column 'lau2' varies within 1 households"):
        random_swap(data, params, seed=0)

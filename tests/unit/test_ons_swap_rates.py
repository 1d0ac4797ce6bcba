"""ONS household swap rates per delivery group, inverse to imputation (Frend et al. 2011, section 2)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from cubeguard.methods.ons_household_swap import OnsHouseholdSwapStep, ons_household_swap
from cubeguard.methods.ons_household_swap.rates import group_rates
from tests.unit.test_swap_ons_household import BASE


def test_group_rates_by_hand() -> None:
    """Groups of 100, 200 and 100 households with 0, 100 and 100 imputed: E = 100, 100, 0.

    1 - imp = 1, 0.5, 0; overall sample 0.06 * 200 = 12; c = 12 / (1 * 100 + 0.5 * 100) = 0.08;
    rates 0.08, 0.04, 0 -> samples 8 + 4 + 0 = 12 = 0.06 of the eligible households.
    """
    np.testing.assert_allclose(group_rates([100, 200, 100], [100, 100, 0], 0.06), [0.08, 0.04, 0.0])


def test_group_rates_without_imputation_are_the_swap_rate_and_at_most_one() -> None:
    np.testing.assert_allclose(group_rates([50, 70], [50, 70], 0.05), [0.05, 0.05])
    # 0.9 * 200 / (100 + 0.5 * 100) = 1.2 -> cut to 1; the other group 0.6
    np.testing.assert_allclose(group_rates([100, 200], [100, 100], 0.9), [1.0, 0.6])
    np.testing.assert_allclose(group_rates([10], [0], 0.5), [0.0])


def _groups() -> pd.DataFrame:
    """Group 0: 100 one-person households, none imputed; group 1: 200, every other one imputed."""
    rng = np.random.default_rng(1)
    hid = np.arange(300)
    group = (hid >= 100).astype(int)
    return pd.DataFrame(
        {
            "hid": hid,
            "msoa": group,
            "oa": group * 10 + hid % 5,
            "hsize": 1,
            "dg": group,
            "imputed": (group == 1) & (hid % 2 == 1),
            "age": rng.integers(0, 20, 300),
            "sex": rng.integers(0, 2, 300),
        }
    )


def test_swap_samples_each_delivery_group_at_its_rate() -> None:
    """The rates of :func:`test_group_rates_by_hand`: 8 of group 0's and 4 of group 1's households.

    Both samples are whole numbers, so random rounding leaves them; the area cap is 1.
    """
    data = _groups()
    options = {"swap_rate": 0.06, "delivery_group": "dg", "imputed": "imputed", "max_area_share": 1.0}
    adjusted = ons_household_swap(data, OnsHouseholdSwapStep(**BASE, **options, rate_by_imputation=True), seed=5)
    assert adjusted.sampled.groupby(data["dg"].to_numpy()).sum().tolist() == [8, 4]
    plain = ons_household_swap(data, OnsHouseholdSwapStep(**BASE, **options), seed=5)
    assert plain.sampled.groupby(data["dg"].to_numpy()).sum().tolist() == [6, 6]


def test_rate_by_imputation_needs_groups_and_imputation() -> None:
    with pytest.raises(ValidationError, match="rate_by_imputation needs the delivery_group and imputed columns"):
        OnsHouseholdSwapStep(**BASE, delivery_group="dg", rate_by_imputation=True)

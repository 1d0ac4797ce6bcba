"""Parameter validation of record swapping: every user-facing message is matched here."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from cubeguard.errors import CubeguardError
from cubeguard.methods.random_swap import RandomSwapStep
from cubeguard.methods.targeted_swap import TargetedSwapStep
from cubeguard.swap.common import SwapDataError

BASE = {
    "household_id": "hid",
    "hierarchy": ("nuts1", "nuts2"),
    "similar": (("hsize",),),
    "risk_variables": ("age",),
}


def test_defaults_and_similarity_columns() -> None:
    params = TargetedSwapStep(**BASE, carry_along=("lau2",))
    assert params.swap_rate == 0.05
    assert params.k_anonymity == 3
    multi = TargetedSwapStep(**{**BASE, "similar": (("hsize", "htype"), ("hsize",))})
    assert multi.similarity_columns == ("hsize", "htype")


def test_params_are_frozen() -> None:
    params = TargetedSwapStep(**BASE)
    with pytest.raises(ValidationError, match="frozen"):
        params.swap_rate = 0.5  # type: ignore[misc]


def test_unknown_field_is_forbidden() -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        TargetedSwapStep(**BASE, swaprate=0.1)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"swap_rate": 1.5}, "less than or equal to 1"),
        ({"k_anonymity": -1}, "greater than or equal to 0"),
        ({"hierarchy": ()}, "at least 1 item"),
        ({"similar": ()}, "at least 1 item"),
        ({"similar": ((),)}, "at least 1 item"),
        (
            {"risk_columns": ("r1",), "risk_threshold": 0.5, "risk_variables": ()},
            r"risk_columns has 1 columns but hierarchy has 2 levels; give one risk column per level",
        ),
        ({"risk_columns": ("r1", "r2"), "risk_variables": ()}, "risk_columns needs a risk_threshold"),
        ({"risk_columns": ("r1", "r2"), "risk_threshold": 0.5}, "give either risk_columns or risk_variables, not both"),
        ({"risk_threshold": 0.5}, "risk_threshold is only used with risk_columns"),
        ({"carry_along": ("nuts2",)}, r"columns \['nuts2'\] appear more than once"),
        ({"similar": (("hid",),)}, r"similarity profile \['hid'\] uses the household id"),
    ],
)
def test_invalid_targeted_params(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        TargetedSwapStep(**{**BASE, **changes})


def test_all_problems_reported_at_once() -> None:
    with pytest.raises(ValidationError) as info:
        TargetedSwapStep(**{**BASE, "risk_columns": ("r",), "carry_along": ("hid",)})
    text = str(info.value)
    assert "give one risk column per level" in text
    assert "risk_columns needs a risk_threshold" in text
    assert "appear more than once" in text


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"swap_columns": ()}, "at least 1 item"),
        ({"swap_columns": ("lau2",), "swap_rate": 0.6}, "less than or equal to 0.5"),
        ({"swap_columns": ("lau2",), "carry_along": ("lau2",)}, r"columns \['lau2'\] appear more"),
        ({"swap_columns": ("lau2",), "strata": ("lau2",)}, r"strata use swapped columns \['lau2'\]"),
    ],
)
def test_invalid_random_params(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        RandomSwapStep(**kwargs)


def test_data_error_is_a_cubeguard_error() -> None:
    assert issubclass(SwapDataError, CubeguardError)

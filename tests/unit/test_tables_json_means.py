"""Published means written by the compiled JSON writer are orjson's bytes, or left to orjson: never other bytes."""

from __future__ import annotations

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from cubeguard.tables.json_means import means_json
from cubeguard.tables.means import published_means


def _orjson(values: np.ndarray) -> bytes:
    return orjson.dumps(values, option=orjson.OPT_SERIALIZE_NUMPY)


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 60),
    decimals=st.integers(0, 6),
    magnitude=st.sampled_from([1.0, 100.0, 1e5, 1e8]),
)
def test_rounded_means_are_written_as_orjson_writes_them(seed: int, n: int, decimals: int, magnitude: float) -> None:
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 40, n)  # zeros: NaN, written null
    sums = np.round(counts * rng.uniform(0.0, magnitude, n)) + rng.integers(0, 9, n)
    means = published_means(sums, counts, decimals)
    means[np.abs(means) < 1e-4] = 0.0  # below the writer's range (tested apart)
    written = means_json(means, decimals)
    assert written is not None  # the fast path is taken for means in range
    assert written == _orjson(means)


@settings(max_examples=300, deadline=None)
@given(values=arrays(np.float64, st.integers(0, 30)), decimals=st.integers(0, 6))
def test_any_double_is_written_as_orjson_writes_it_or_left_to_orjson(values: np.ndarray, decimals: int) -> None:
    written = means_json(values, decimals)
    assert written is None or written == _orjson(values)


@pytest.mark.parametrize(
    ("values", "decimals"),
    [([1.5, -0.0], 1), ([1e-5], 6), ([1.25], 1), ([1e9 + 0.5], 6), ([123456789012345.6], 1)],
    ids=["negative zero", "below 1e-4", "not rounded to 1 decimal", "16 digits", "16 digits at 1 decimal"],
)
def test_values_out_of_range_are_left_to_orjson(values: list[float], decimals: int) -> None:
    assert means_json(np.array(values), decimals) is None


def test_trailing_zeros_are_cut_to_one_and_nan_is_null() -> None:
    means = np.array([2.0, 0.0, 12.5, np.nan, -3.25, 0.0001, 40.1])
    assert means_json(means, 4) == b"[2.0,0.0,12.5,null,-3.25,0.0001,40.1]" == _orjson(means)


@pytest.mark.parametrize("decimals", [-1, 7])
def test_decimals_outside_the_config_range_are_refused(decimals: int) -> None:
    with pytest.raises(ValueError, match="decimals must be 0 to 6"):
        means_json(np.ones(2), decimals)

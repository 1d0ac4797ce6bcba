"""A table's margins in the calling thread equal the cubes' parallel margins, bit for bit."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.cubes.margins import expand_all
from cubeguard.tables.engine import margins
from tests.conftest import tiny_breakdowns

BREAKDOWNS = tiny_breakdowns()


@settings(max_examples=60, deadline=None)
@given(
    names=st.lists(st.sampled_from(["GEO.1", "GEO.2", "SEX", "AGE.L", "AGE.M"]), min_size=1, max_size=3, unique=True),
    seed=st.integers(0, 2**32 - 1),
    kind=st.sampled_from(["count", "key", "value"]),
)
def test_margins_equal_the_cube_margins(names: list[str], seed: int, kind: str) -> None:
    bds = [BREAKDOWNS[n] for n in names]
    rng = np.random.default_rng(seed)
    shape = tuple(b.n_bottom for b in bds)
    if kind == "count":
        bottom = rng.integers(0, 50, shape).astype(np.int64)
    elif kind == "key":
        bottom = rng.integers(0, 2**64, shape, dtype=np.uint64)  # sums wrap modulo 2**64
    else:
        bottom = rng.integers(0, 100, shape).astype(np.float64)  # whole numbers: sums exact in float64
    mine, theirs = margins(bottom, bds), expand_all(bottom, bds)
    assert mine.dtype == theirs.dtype and mine.shape == theirs.shape
    np.testing.assert_array_equal(mine, theirs)

"""A table's margins in the calling thread equal the cubes' parallel margins, bit for bit; ranges sum exactly."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.cubes.margins import expand_all
from cubeguard.tables.expand import gather, margins
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


@st.composite
def _gathers(draw: st.DrawFn) -> tuple[np.ndarray, list[tuple[int, tuple[np.ndarray, np.ndarray]]]]:
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
    named = draw(st.permutations(range(len(shape))))[: draw(st.integers(1, len(shape)))]
    axes = []
    for a in named:
        pairs = draw(st.lists(st.tuples(st.integers(0, shape[a]), st.integers(0, shape[a])), min_size=1, max_size=6))
        lo = np.array([min(p) for p in pairs], dtype=np.int64)
        hi = np.array([max(p) for p in pairs], dtype=np.int64)
        axes.append((a, (lo, hi)))
    seed = draw(st.integers(0, 2**32 - 1))
    source = np.random.default_rng(seed).integers(0, 2**64, shape, dtype=np.uint64)
    return source, axes


@settings(max_examples=200, deadline=None)
@given(case=_gathers(), signed=st.booleans())
def test_gather_equals_the_sum_of_each_range(
    case: tuple[np.ndarray, list[tuple[int, tuple[np.ndarray, np.ndarray]]]], signed: bool
) -> None:
    """Every output cell is the sum (mod 2**64) of its ranges; unnamed axes summed whole; axes in the asked order."""
    source, axes = case
    if signed:
        source = source.view(np.int64)
    out = gather(source, axes)
    assert out.dtype == source.dtype
    assert out.shape == tuple(lo.size for _, (lo, _) in axes)
    for cell in itertools.product(*(range(n) for n in out.shape)):
        index: list[slice] = [slice(None)] * source.ndim
        for (a, (lo, hi)), k in zip(axes, cell, strict=True):
            index[a] = slice(int(lo[k]), int(hi[k]))
        expected = source[tuple(index)].sum(dtype=source.dtype)  # numpy's integer sums wrap alike
        assert out[cell] == expected

"""The compiled IPF of the log-linear measure (``cubeguard.measures.loglinear``) against IPF written
plainly in numpy (Bishop, Fienberg and Holland 1975, section 3.5), on tables with zeros and on
generating classes other than the default."""

from __future__ import annotations

import hypothesis.extra.numpy as hnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.measures.loglinear import fitted_frequencies

SETTINGS = settings(max_examples=80, deadline=None)


def _plain_ipf(
    t: np.ndarray, keep: list[tuple[int, ...]], tolerance: float = 1e-10, max_cycles: int = 1000
) -> np.ndarray:
    fit = np.full(t.shape, t.sum() / t.size)
    for _ in range(max_cycles):
        gap = 0.0
        for m in keep:
            other = tuple(a for a in range(t.ndim) if a not in m)
            want, have = t.sum(axis=other, keepdims=True), fit.sum(axis=other, keepdims=True)
            gap = max(gap, float(np.abs(want - have).max(initial=0.0)))
            fit *= np.divide(want, have, out=np.zeros_like(have), where=have > 0)
        if gap <= tolerance * max(float(t.sum()), 1.0):
            break
    return fit


@st.composite
def _tables(draw: st.DrawFn) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    shape = draw(hnp.array_shapes(min_dims=2, max_dims=4, min_side=1, max_side=5))
    table = draw(hnp.arrays(np.int64, shape, elements=st.integers(0, 30)))
    axes = range(len(shape))
    keep = draw(
        st.lists(st.sets(st.sampled_from(axes), min_size=1).map(lambda s: tuple(sorted(s))), min_size=1, max_size=4)
    )
    return table, keep


@SETTINGS
@given(_tables())
def test_the_compiled_ipf_is_numpy_ipf(case: tuple[np.ndarray, list[tuple[int, ...]]]) -> None:
    table, keep = case
    got = fitted_frequencies(table, keep)
    want = _plain_ipf(table.astype(np.float64), keep)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * max(float(table.sum()), 1.0))


@SETTINGS
@given(
    hnp.arrays(np.int64, hnp.array_shapes(min_dims=2, max_dims=4, min_side=2, max_side=5), elements=st.integers(1, 30))
)
def test_a_table_without_zeros_gets_every_margin_of_the_default_model(table: np.ndarray) -> None:
    fit = fitted_frequencies(table)  # no highest-order interaction: an MLE exists, IPF converges
    for axis in range(table.ndim):
        np.testing.assert_allclose(fit.sum(axis=axis), table.sum(axis=axis), atol=1e-8 * table.sum())

"""Properties of the cell key noise lookup (Handbook on SDC v2, 5.4; cellKey) and a statistical
check that uniform cell keys give each p-table row's noise distribution."""

from __future__ import annotations

import functools

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from cubeguard.ckm.lookup import lookup_noise, lookup_rows
from cubeguard.ckm.ptable import PTable, PTableParams, create_cnt_ptable, identity_ptable
from cubeguard.ckm.ptable_modify import modify_cnt_ptable

SETTINGS = settings(max_examples=60, deadline=None)


PARAMS = {
    "D5V3js2": PTableParams(D=5, V=3, js=2),
    "D8V3js2": PTableParams(D=8, V=3, js=2),
    "D3V2js0": PTableParams(D=3, V=2),
}


@functools.cache
def _table(name: str) -> PTable:
    if name == "identity":
        return identity_ptable()
    if name == "D5V3js2-modified":
        return modify_cnt_ptable(_table("D5V3js2"), 0.2, rng=np.random.default_rng(3))
    return create_cnt_ptable(PARAMS[name])


BLOCKING = ["D5V3js2", "D8V3js2", "D5V3js2-modified"]
ALL = [*BLOCKING, "D3V2js0", "identity"]


@st.composite
def cells(draw: st.DrawFn, table: PTable) -> tuple[np.ndarray, np.ndarray]:
    """Counts (many small ones, some huge) and cell keys, some of them exactly on a bound."""
    n = draw(st.integers(0, 200))
    small = st.integers(0, 3 * table.max_i + 3)
    counts = draw(hnp.arrays(np.int64, n, elements=small | st.integers(0, 10**12)))
    bounds = sorted(set(table.p_int_ub.tolist()) - {1.0}) or [0.0]
    key = st.floats(0.0, 1.0, exclude_max=True) | st.sampled_from(bounds)
    return counts, draw(hnp.arrays(np.float64, n, elements=key))


def _reference(counts: np.ndarray, keys: np.ndarray, table: PTable) -> np.ndarray:
    """cellKey's rule written out cell by cell: ``v[which.max(ck < ub)]``, 0 for count 0."""
    out = np.zeros(counts.size, dtype=np.int64)
    for n, (count, key) in enumerate(zip(counts, keys, strict=True)):
        if count > 0:
            rows = table.block(int(count))
            out[n] = table.v[rows][np.argmax(key < table.p_int_ub[rows])]
    return out


@pytest.mark.parametrize("name", ALL)
@SETTINGS
@given(data=st.data())
def test_lookup_follows_cellkey_and_keeps_zeros(name: str, data: st.DataObject) -> None:
    table = _table(name)
    counts, keys = data.draw(cells(table))
    noise = lookup_noise(counts, keys, table)
    np.testing.assert_array_equal(noise, _reference(counts, keys, table))
    assert np.all(noise[counts == 0] == 0)
    assert np.all(np.abs(noise) <= table.max_noise) and np.all(counts + noise >= 0)
    rows = lookup_rows(counts, keys, table)
    assert np.all((rows == -1) == (counts == 0))


@pytest.mark.parametrize("name", BLOCKING)
@SETTINGS
@given(data=st.data())
def test_js_2_never_publishes_1_or_2(name: str, data: st.DataObject) -> None:
    table = _table(name)
    counts, keys = data.draw(cells(table))
    published = counts + lookup_noise(counts, keys, table)
    assert not np.isin(published, [1, 2]).any()


@SETTINGS
@given(data=st.data())
def test_identity_ptable_adds_no_noise(data: st.DataObject) -> None:
    table = create_cnt_ptable(PTableParams(D=0, V=1.0))
    counts, keys = data.draw(cells(table))
    np.testing.assert_array_equal(lookup_noise(counts, keys, table), 0)


# Statistical test of the noise moments. For each p-table row block i we draw N uniform cell keys
# (fixed seed) and compare the sample mean with 0 and the sample variance with the row's variance
# s2 by z-scores: mean z = m / sqrt(s2 / N); variance z = (v - s2) / sqrt((mu4 - s2^2) / N), where
# mu4 is the row's fourth central moment (asymptotic variance of the sample variance; N is large
# enough for the normal approximation). Every |z| is compared with the two-sided normal critical
# value for alpha = 1e-6 / (number of z-tests) (Bonferroni), so the whole test fails by chance with
# probability at most 1e-6: 5.59 for the 44 z-tests here (a single test at 1e-6 would use 4.89).
# Power: at N = 200,000 a bias of about 0.02 in the mean or a few per cent in the variance fails.
N = 200_000
TESTED = list(PARAMS)
N_TESTS = 2 * sum(PARAMS[name].ncat for name in TESTED)
Z_CRIT = float(norm.isf(1e-6 / N_TESTS / 2))


@pytest.mark.parametrize("name", TESTED)
def test_noise_moments_with_uniform_keys(name: str) -> None:
    table = _table(name)
    _, mean, variance = table.row_moments()
    rng = np.random.default_rng(20240501)
    for count in range(1, table.max_i + 1):
        assert abs(mean[count]) < 1e-7  # ptable's zero-mean constraint, up to 8-digit rounding
        rows = table.block(count)
        v, p = table.v[rows].astype(np.float64), table.p[rows]
        mu4 = float(np.sum(p * (v - mean[count]) ** 4))
        size = count if count < table.max_i else 10 * count  # the last block serves all >= max_i
        noise = lookup_noise(np.full(N, size), rng.random(N), table).astype(np.float64)
        z_mean = noise.mean() / np.sqrt(variance[count] / N)
        z_var = (noise.var(ddof=1) - variance[count]) / np.sqrt((mu4 - variance[count] ** 2) / N)
        assert abs(z_mean) < Z_CRIT, (count, z_mean)
        assert abs(z_var) < Z_CRIT, (count, z_var)


def test_critical_value_is_what_the_comment_says() -> None:
    assert N_TESTS == 44
    assert round(Z_CRIT, 2) == 5.59
    assert round(float(norm.isf(1e-6 / 2)), 2) == 4.89

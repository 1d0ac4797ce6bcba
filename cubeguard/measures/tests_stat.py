"""Statistical tests of a protection's realisation: exact binomial and Wilcoxon signed-rank.

Handbook on SDC v2, 5.8: "An exact Binomial Hypothesis Test can be used to check if the realization
of a random stochastic perturbation scheme, such as random rounding, follows the expected
probabilities (i.e. the parameters of the method). For other SDC methods, a non-parametric signed
rank test can be used to check whether the location of the empirical distribution has changed".

The probabilities of a perturbation are stated per original value ``i`` as probabilities of each
noise ``d = protected - original`` (a row of a p-table, or Shlomo 2009, 3.2.2's transition matrix
``p_ij`` with ``d = j - i``); values at or above ``cap`` share the row ``cap``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Literal, NamedTuple

import numpy as np
import pandas as pd
from scipy import stats

from cubeguard.measures._arrays import Counts, pair
from cubeguard.measures._ranks import average_ranks, tie_sizes
from cubeguard.measures.errors import MeasureConfigError

Alternative = Literal["two-sided", "less", "greater"]
_COLUMNS = ["original", "noise", "trials", "successes", "expected_p", "observed_p", "p_value"]


class SignedRankResult(NamedTuple):
    """A test statistic, its p-value and the number of observations used."""

    statistic: float
    p_value: float
    n: int


def transition_binomial_tests(
    original: Counts,
    protected: Counts,
    probabilities: Mapping[int, Mapping[int, float]],
    *,
    cap: int | None = None,
    alternative: Alternative = "two-sided",
) -> pd.DataFrame:
    """Exact binomial test of every stated transition probability (``scipy.stats.binomtest``).

    For original value ``i`` and noise ``d`` with stated probability ``p``: ``trials`` is the number of
    cells with original value ``i`` (or ``>= cap`` when ``i == cap``), ``successes`` the number of
    those published as ``i + d``; the p-value tests ``successes ~ Binomial(trials, p)``.

    Returns:
        One row per stated ``(original, noise)``: columns ``original, noise, trials, successes,
        expected_p, observed_p, p_value`` (``nan`` p-value when no cell has that original value).

    Raises:
        MeasureConfigError: if a probability is outside ``[0, 1]``.
    """
    bad = [(i, d, q) for i, row in probabilities.items() for d, q in row.items() if not 0.0 <= q <= 1.0]
    if bad:
        raise MeasureConfigError(f"transition probabilities must lie in [0, 1]; got (value, noise, p) = {bad[:3]}")
    o, p = pair(original, protected)
    o, noise = o.ravel(), (p - o).ravel()
    cls = np.minimum(o, cap) if cap is not None else o
    rows = []
    for i, row in sorted(probabilities.items()):
        got = noise[cls == i]
        for d, q in sorted(row.items()):
            k = int((got == d).sum())
            pv = stats.binomtest(k, got.size, q, alternative=alternative).pvalue if got.size else math.nan
            rows.append((i, d, got.size, k, q, k / got.size if got.size else math.nan, float(pv)))
    return pd.DataFrame(rows, columns=_COLUMNS)


def random_rounding_binomial_tests(
    original: Counts, protected: Counts, base: int, *, alternative: Alternative = "two-sided"
) -> pd.DataFrame:
    """Exact binomial tests that unbiased random rounding to ``base`` rounded up with ``res / base``.

    Shlomo (2009), 3.2.1: an entry ``x`` with residual ``res = x mod base > 0`` is rounded up with
    probability ``res / base``. One row per residual ``1 .. base - 1``: ``trials`` cells with that
    residual, ``successes`` rounded up; ``off_grid`` counts cells of that residual published at
    neither neighbouring multiple of ``base`` (0 for a genuine rounding).

    Raises:
        MeasureConfigError: if ``base < 2``.
    """
    if base < 2:
        raise MeasureConfigError(f"the rounding base must be at least 2, got {base}")
    o, p = pair(original, protected)
    o, p = o.ravel(), p.ravel()
    res = np.mod(o, base)
    rows = []
    for r in range(1, base):
        sel = res == r
        down, pub = o[sel] - r, p[sel]
        k, n = int((pub == down + base).sum()), int(sel.sum())
        off = int(((pub != down) & (pub != down + base)).sum())
        pv = stats.binomtest(k, n, r / base, alternative=alternative).pvalue if n else math.nan
        rows.append((r, n, k, r / base, k / n if n else math.nan, float(pv), off))
    cols = ["residual", "trials", "successes", "expected_p", "observed_p", "p_value", "off_grid"]
    return pd.DataFrame(rows, columns=cols)


def wilcoxon_signed_rank(original: Counts, protected: Counts, *, scipy_below: int = 5000) -> SignedRankResult:
    """Wilcoxon signed-rank test that the deviations ``protected - original`` are centred on 0.

    Handbook on SDC v2, 5.8 (location shift). Zero deviations are dropped (Wilcoxon's convention,
    ``zero_method="wilcox"``). Up to ``scipy_below`` non-zero deviations, ``scipy.stats.wilcoxon``
    decides between its exact and normal methods; above, the normal approximation with tie correction
    (equal to scipy's ``method="approx"``) is computed from histogram ranks, so millions of cells
    need no sort. The statistic is ``min(W+, W-)``. No non-zero deviation: statistic 0, p-value 1.
    """
    o, p = pair(original, protected)
    d = (p - o).ravel()
    d = d[d != 0]
    n = int(d.size)
    if n == 0:
        return SignedRankResult(0.0, 1.0, 0)
    if n < scipy_below:
        res = stats.wilcoxon(d)
        return SignedRankResult(float(res.statistic), float(res.pvalue), n)
    ranks = average_ranks(np.abs(d))
    r_plus = float(ranks[d > 0].sum())
    r_minus = n * (n + 1) / 2.0 - r_plus
    t = tie_sizes(np.abs(d)).astype(np.float64)
    var = n * (n + 1) * (2 * n + 1) / 24.0 - float((t**3 - t).sum()) / 48.0
    if var <= 0:
        return SignedRankResult(min(r_plus, r_minus), 1.0, n)
    z = (r_plus - n * (n + 1) / 4.0) / math.sqrt(var)
    return SignedRankResult(min(r_plus, r_minus), float(2.0 * stats.norm.sf(abs(z))), n)

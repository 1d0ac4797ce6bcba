"""Swap rates of the delivery groups, inversely related to their imputation rates.

Frend et al. (2011), section 2: "In areas where there are high levels of uncertainty gained
through imputation, there is less of a need for SDC [...]. Therefore, the percentage of households
selected to be swapped within the delivery group will have an inverse relationship to the
imputation rate." The paper gives no formula and does not say what stays fixed; the rule here,
a documented choice, keeps the configured ``swap_rate`` as the overall share of eligible
(non-imputed) households sampled and lets a group's rate fall linearly with its imputation rate::

    rate_g = c (1 - imp_g),   imp_g = imputed households of g / households of g,
    c = swap_rate * sum_g E_g / sum_g (1 - imp_g) E_g,   E_g = eligible households of g,

so ``sum_g rate_g E_g = swap_rate * sum_g E_g``. A rate above 1 is cut to 1 (the overall rate then
falls short; that needs a swap rate near 1). Without imputation every group gets ``swap_rate``.

Examples:
    >>> group_rates([100, 200], [100, 100], 0.06).round(6).tolist()
    [0.08, 0.04]
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


def group_rates(households: npt.ArrayLike, eligible: npt.ArrayLike, swap_rate: float) -> FloatArray:
    """Swap rate of each delivery group from its households and eligible (non-imputed) households.

    See the module docstring for the rule (Frend et al. 2011, section 2).
    """
    h = np.asarray(households, dtype=np.float64)
    e = np.asarray(eligible, dtype=np.float64)
    kept = np.divide(e, h, out=np.zeros_like(h), where=h > 0)  # 1 - imputation rate
    weighted = float((kept * e).sum())
    if weighted <= 0:
        return np.zeros_like(h)
    rates: FloatArray = np.minimum(1.0, swap_rate * float(e.sum()) / weighted * kept)
    return rates

"""Information loss of published sums and of the means a reader divides them into (Handbook on SDC v2, 5.8).

A cube that publishes the sums ``m`` of a column beside its counts ``n`` is read as means m-hat /
n-hat. Per column, over every cell of the cube (totals and subtotals included):

* the relative deviation of the sums, ``|m-hat - m| / |m|``, over the cells with ``m != 0``: its mean
  and its largest value;
* the relative deviation of the means, ``|m-hat/n-hat - m/n| / |m/n|``, over the cells with ``n >= 1``,
  ``n-hat >= 1`` and ``m != 0``: its mean, its largest value and the share of those cells whose mean
  moved by more than :data:`MOVED` (5 %).

The keys are ``<measure>@sum.<column>`` (see :data:`KEYS`); a measure without a cell to average
over is NaN.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

MOVED = 0.05
KEYS = (
    "sum_mean_rel_dev",
    "sum_max_rel_dev",
    "mean_mean_rel_dev",
    "mean_max_rel_dev",
    "mean_moved_share",
    "mean_cells",
)

FloatArray = npt.NDArray[np.float64]


def _mean_max(dev: FloatArray) -> tuple[float, float]:
    return (float(dev.mean()), float(dev.max())) if dev.size else (float("nan"), float("nan"))


def mean_deviations(
    n: npt.ArrayLike, m: npt.ArrayLike, n_hat: npt.ArrayLike, m_hat: npt.ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """Per cell, the relative deviation of the mean and whether it is defined (``n, n-hat >= 1`` and ``m != 0``)."""
    n_, m_ = np.asarray(n, dtype=np.float64).ravel(), np.asarray(m, dtype=np.float64).ravel()
    nh, mh = np.asarray(n_hat, dtype=np.float64).ravel(), np.asarray(m_hat, dtype=np.float64).ravel()
    defined = (n_ >= 1) & (nh >= 1) & (m_ != 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean, mean_hat = m_ / n_, mh / nh
        dev = np.where(defined, np.abs(mean_hat - mean) / np.abs(mean), np.nan)
    return dev, defined.astype(np.float64)


def sum_losses(n: npt.ArrayLike, m: npt.ArrayLike, n_hat: npt.ArrayLike, m_hat: npt.ArrayLike) -> dict[str, float]:
    """The loss measures of one column's sums and means (module docstring), by :data:`KEYS` name.

    >>> out = sum_losses([2, 1, 0], [10.0, 4.0, 0.0], [3, 1, 0], [12.0, 4.0, 0.0])
    >>> round(out["sum_mean_rel_dev"], 3), round(out["mean_max_rel_dev"], 3), out["mean_moved_share"]
    (0.1, 0.2, 0.5)
    """
    m_ = np.asarray(m, dtype=np.float64).ravel()
    mh = np.asarray(m_hat, dtype=np.float64).ravel()
    nonzero = m_ != 0
    sums = np.abs(mh[nonzero] - m_[nonzero]) / np.abs(m_[nonzero])
    dev, defined = mean_deviations(n, m, n_hat, m_hat)
    means = dev[defined > 0]
    sum_mean, sum_max = _mean_max(sums)
    mean_mean, mean_max = _mean_max(means)
    moved = float(np.mean(means > MOVED)) if means.size else float("nan")
    return dict(
        zip(KEYS, (sum_mean, sum_max, mean_mean, mean_max, moved, float(means.size)), strict=True),
    )

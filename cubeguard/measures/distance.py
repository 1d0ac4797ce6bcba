"""Distance metrics between original and protected cell counts.

Handbook on SDC v2, 5.8 ("information loss measures that measure distortion of distributions are
based on distance metrics between the original and perturbed cells ... calculated for internal cells
of a table ... also for totals or sub-totals"). Every function takes two arrays of the same cells —
the whole cube, its interior or a margin, see :mod:`cubeguard.measures.select` — as numpy arrays,
DataArrays or cubes (their ``count``), and returns a float; an empty selection gives ``nan``.
:class:`CellPair` computes the deviations once when several distances are wanted.

Examples:
    >>> relative_absolute_distance([3, 0, 1, 2, 5, 0], [3, 1, 0, 3, 4, 0])
    0.425
    >>> absolute_distance([3, 0, 1], [3, 1, 0])
    2.0
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np

from cubeguard.measures._arrays import Counts, NumArray, check_nonnegative, pair


class CellPair:
    """Original and protected counts of the same cells, with their deviations computed once."""

    def __init__(self, original: Counts, protected: Counts) -> None:
        """Align ``original`` and ``protected`` (raises ``CubeMismatchError`` if their cells differ)."""
        o, p = pair(original, protected)
        self.original: NumArray = o.ravel()
        self.protected: NumArray = p.ravel()

    @cached_property
    def abs_dev(self) -> NumArray:
        """``|protected - original|`` per cell."""
        d: NumArray = np.abs(self.protected - self.original)
        return d

    @cached_property
    def _relative(self) -> NumArray:
        nz = self.original != 0
        r: NumArray = self.abs_dev[nz] / np.abs(self.original[nz])
        return r

    def absolute_distance(self) -> float:
        """See :func:`absolute_distance`."""
        return float(self.abs_dev.sum())

    def average_absolute_distance(self) -> float:
        """See :func:`average_absolute_distance`."""
        n = self.abs_dev.size
        return float(self.abs_dev.sum() / n) if n else math.nan

    def max_absolute_deviation(self) -> float:
        """See :func:`max_absolute_deviation`."""
        return float(self.abs_dev.max()) if self.abs_dev.size else math.nan

    def relative_absolute_distance(self) -> float:
        """See :func:`relative_absolute_distance`."""
        r = self._relative
        return float(r.sum() / r.size) if r.size else math.nan

    def relative_absolute_distance_sum(self) -> float:
        """See :func:`relative_absolute_distance_sum`."""
        return float(self._relative.sum())

    def _nonnegative(self) -> None:
        check_nonnegative(self.original, "the Hellinger distance")
        check_nonnegative(self.protected, "the Hellinger distance")

    def hellinger_distance(self) -> float:
        """See :func:`hellinger_distance`."""
        self._nonnegative()
        so, sp = float(self.original.sum()), float(self.protected.sum())
        if so == 0 or sp == 0:
            return 0.0 if so == sp else 1.0
        diff = np.sqrt(self.original / so) - np.sqrt(self.protected / sp)
        return min(1.0, math.sqrt(float(np.dot(diff, diff)) / 2.0))

    def hellinger_distance_counts(self) -> float:
        """See :func:`hellinger_distance_counts`."""
        self._nonnegative()
        diff = np.sqrt(self.protected.astype(np.float64)) - np.sqrt(self.original.astype(np.float64))
        return math.sqrt(float(np.dot(diff, diff)) / 2.0)


def absolute_distance(original: Counts, protected: Counts) -> float:
    """Sum over cells of ``|protected - original|`` (Handbook on SDC v2, 5.8)."""
    return CellPair(original, protected).absolute_distance()


def average_absolute_distance(original: Counts, protected: Counts) -> float:
    """Average absolute distance per cell, ``sum |protected - original| / number of cells``.

    Shlomo, Tudor and Groom (2010), the utility measure named in Frend et al. (2011), section 4.
    """
    return CellPair(original, protected).average_absolute_distance()


def max_absolute_deviation(original: Counts, protected: Counts) -> float:
    """Largest ``|protected - original|`` over the cells (Höhne 2011, SAFE, section 2.1)."""
    return CellPair(original, protected).max_absolute_deviation()


def relative_absolute_distance(original: Counts, protected: Counts) -> float:
    """RAD: mean of ``|protected - original| / original`` over cells with a non-zero original.

    Shlomo (2009), section 4.2: "RAD = |D(c_pert) - D(c_orig)| / D(c_orig) across the non-zero
    cells of the original table". ``nan`` when every original cell is zero.
    """
    return CellPair(original, protected).relative_absolute_distance()


def relative_absolute_distance_sum(original: Counts, protected: Counts) -> float:
    """The summed RAD variant, ``sum |protected - original| / original`` over non-zero originals.

    Shlomo (2009), section 4.2; the magnitudes of its Table 2 (up to 18.3 for base-3 rounding,
    whose per-cell RAD is at most 2) are consistent with this sum, not with the mean.
    """
    return CellPair(original, protected).relative_absolute_distance_sum()


def hellinger_distance(original: Counts, protected: Counts) -> float:
    """Hellinger distance between the two tables' cell distributions, in ``[0, 1]``.

    ``HD = sqrt(1/2 * sum_c (sqrt(p_c) - sqrt(q_c))**2)`` with ``p_c`` and ``q_c`` the shares of
    cell ``c`` in the original and protected totals. This is the Hellinger distance of Shlomo and
    Young (2005) behind the Handbook on SDC v2, 5.8 distance metrics, applied to proportions instead
    of counts so that it lies in ``[0, 1]`` whatever the table size; see
    :func:`hellinger_distance_counts` for the count form. 0 when both tables are all zero, 1 when
    exactly one is.

    Raises:
        NegativeCountError: if a count is negative.
    """
    return CellPair(original, protected).hellinger_distance()


def hellinger_distance_counts(original: Counts, protected: Counts) -> float:
    """Hellinger distance on counts, ``sqrt(1/2 * sum_c (sqrt(D_pert(c)) - sqrt(D_orig(c)))**2)``.

    Shlomo and Young (2005), Information loss measures for frequency tables; it grows with the table
    total, so compare it only between tables of similar size.

    Raises:
        NegativeCountError: if a count is negative.
    """
    return CellPair(original, protected).hellinger_distance_counts()

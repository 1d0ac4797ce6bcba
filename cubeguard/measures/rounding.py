"""What rounding to a public base did to a cube, and what a user who knows the base can infer.

Hundepool et al. (2024), Handbook on SDC v2, 5.5 (rounding) and 5.5.1.2 (what a user of a table
rounded to base ``b`` knows). Every function takes the original and the published counts of the
same cells (for a cube: every cell, totals and subtotals included) as numpy arrays, and the public
parameters of the rounding, :class:`RoundingParams`; nothing secret enters. An empty array gives
``nan``.

* :func:`moved_beyond_nearest_share`: cells not published as a nearest multiple of the base
  (conventional rounding moves none; random, controlled and summed margins move some further);
* :func:`beyond_one_base_share`: cells published a whole base or more from their count;
* :func:`existence_intervals`: the counts a user can infer from a published value (5.5.1.2), with
  their mean width (:func:`existence_interval_mean_width`) and the share of cells whose count lies
  inside (:func:`existence_interval_contains_share`; 1 when every published value keeps its
  promise, e.g. controlled rounding's ``|published - count| < steps * base``).

Examples:
    >>> params = RoundingParams(base=3)
    >>> rounding_measures([4, 5, 0], [3, 6, 3], params)  # doctest: +NORMALIZE_WHITESPACE
    RoundingMeasures(moved_beyond_nearest_share=0.3333333333333333,
        beyond_one_base_share=0.3333333333333333, existence_interval_mean_width=4.0,
        existence_interval_contains_share=0.6666666666666666)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from cubeguard.measures.errors import CubeMismatchError, MeasureConfigError

NumArray = npt.NDArray[Any]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class RoundingParams:
    """The public parameters a user reads a rounded cube with (Handbook on SDC v2, 5.5.1.2).

    Attributes:
        base: every published count is meant to be a multiple of it.
        steps: every published count lies less than ``steps * base`` from its count: 1 for
            conventional, random and semi-controlled rounding and small cell adjustment (the two
            adjacent multiples), a controlled rounding step's ``steps`` (the Handbook's K steps
            beyond the adjacent multiples, 5.5.1, is ``steps = K + 1``).
    """

    base: int
    steps: int = 1

    def __post_init__(self) -> None:
        """Refuse a base or steps below 1 (no rounding has them)."""
        if self.base < 1 or self.steps < 1:
            raise MeasureConfigError(
                f"rounding measures need a base and steps of at least 1, got base {self.base} and steps "
                f"{self.steps}; pass the rounding step's public base and steps"
            )

    @property
    def reach(self) -> int:
        """``steps * base``: every published count is less than this far from its count."""
        return self.steps * self.base


class RoundingMeasures(NamedTuple):
    """The rounding measures of one set of cells (see the module docstring)."""

    moved_beyond_nearest_share: float
    beyond_one_base_share: float
    existence_interval_mean_width: float
    existence_interval_contains_share: float


def _pair(original: npt.ArrayLike, published: npt.ArrayLike) -> tuple[NumArray, NumArray]:
    o, p = np.asarray(original).ravel(), np.asarray(published).ravel()
    if o.shape != p.shape:
        raise CubeMismatchError(
            f"original has {o.size} cells but published has {p.size}; compare counts of the same cells"
        )
    return o, p


def _share(flags: BoolArray) -> float:
    return float(flags.mean()) if flags.size else math.nan


def is_nearest_multiple(original: npt.ArrayLike, published: npt.ArrayLike, base: int) -> BoolArray:
    """Per cell: is the published value a multiple of ``base`` nearest to the count (Handbook on SDC v2, 5.5)?

    A count halfway between two multiples (even bases) has both as nearest. Computed from the
    residual ``count mod base``, so no product of large counts is formed.

    >>> is_nearest_multiple([4, 5, 0, 6, 6], [3, 6, 3, 4, 8], 3).tolist()
    [True, True, False, False, False]
    >>> is_nearest_multiple([3, 3], [2, 4], 2).tolist()  # a tie: either multiple
    [True, True]
    """
    o, p = _pair(original, published)
    residual = o % base
    step = p - (o - residual)  # published minus the multiple at or below the count
    down_ok = (step == 0) & (2 * residual <= base)
    up_ok = (step == base) & (2 * residual >= base)  # never for residual 0: base >= 1
    near: BoolArray = down_ok | up_ok
    return near


def moved_beyond_nearest_share(original: npt.ArrayLike, published: npt.ArrayLike, base: int) -> float:
    """Share of cells not published as a nearest multiple of ``base`` to their count (Handbook on SDC v2, 5.5).

    0 for conventional rounding; random rounding moves a cell to the farther adjacent multiple
    with probability ``1 - residual / base``, controlled rounding where additivity needs it, and a
    margin published as the sum of rounded cells may land several bases away. A published value
    that is no multiple of the base (small cell adjustment publishes counts of at least the base
    unchanged) is counted as moved.

    >>> moved_beyond_nearest_share([4, 5, 0], [3, 6, 3], 3)
    0.3333333333333333
    """
    return _share(~is_nearest_multiple(original, published, base))


def beyond_one_base_share(original: npt.ArrayLike, published: npt.ArrayLike, base: int) -> float:
    """Share of cells with ``|published - count| >= base`` (Handbook on SDC v2, 5.5).

    0 for every zero-restricted rounding (each cell to one of its two adjacent multiples); above 0
    for margins summed from rounded cells and for controlled rounding with ``steps`` above 1.

    >>> beyond_one_base_share([4, 5, 0, 10], [3, 6, 3, 6], 3)
    0.5
    """
    o, p = _pair(original, published)
    return _share(np.abs(p - o) >= base)


def existence_intervals(published: npt.ArrayLike, params: RoundingParams) -> tuple[NumArray, NumArray]:
    """Per cell, the lowest and highest count a user infers from its published value (Handbook on SDC v2, 5.5.1.2).

    Knowing that every count ``x >= 0`` lies less than ``R = steps * base`` from its published
    value ``a``, a user infers ``x`` in ``[max(0, a - R + 1), a + R - 1]``: ``[0, R - 1]`` for
    ``a = 0`` and ``[a - R + 1, a + R - 1]`` for ``a >= R``. With ``steps`` above 1 a published
    ``0 < a < R`` gives ``[0, a + R - 1]``: controlled rounding may publish a count of ``R + 1``
    as ``a = base``, so ``[0, R - 1]`` would not hold it.

    >>> low, high = existence_intervals([0, 3, 6], RoundingParams(base=3))
    >>> low.tolist(), high.tolist()
    ([0, 1, 4], [2, 5, 8])
    >>> low, high = existence_intervals([0, 3, 6], RoundingParams(base=3, steps=2))
    >>> low.tolist(), high.tolist()
    ([0, 0, 1], [5, 8, 11])
    """
    a = np.asarray(published).ravel()
    reach = params.reach
    low: NumArray = np.maximum(a - reach + 1, 0)
    high: NumArray = a + reach - 1
    return low, high


def existence_interval_mean_width(published: npt.ArrayLike, params: RoundingParams) -> float:
    """Mean of ``high - low`` of the :func:`existence_intervals` over all cells (Handbook on SDC v2, 5.5.1.2).

    ``2 * steps * base - 2`` for a published value of at least ``steps * base``, less near zero.

    >>> existence_interval_mean_width([0, 3, 6], RoundingParams(base=3))
    3.3333333333333335
    """
    low, high = existence_intervals(published, params)
    return float((high - low).mean()) if low.size else math.nan


def existence_interval_contains_share(
    original: npt.ArrayLike, published: npt.ArrayLike, params: RoundingParams
) -> float:
    """Share of cells whose count lies inside its :func:`existence_intervals` (Handbook on SDC v2, 5.5.1.2).

    1 when every cell keeps the promise ``|published - count| < steps * base`` (controlled rounding,
    and conventional and random rounding of each cell on its own); below 1 when some published
    value misleads a user who trusts it, e.g. a margin summed from randomly rounded cells.

    >>> existence_interval_contains_share([4, 5, 0], [3, 6, 3], RoundingParams(base=3))
    0.6666666666666666
    """
    o, p = _pair(original, published)
    low, high = existence_intervals(p, params)
    return _share((low <= o) & (o <= high))


def rounding_measures(original: npt.ArrayLike, published: npt.ArrayLike, params: RoundingParams) -> RoundingMeasures:
    """Every rounding measure of these cells (Handbook on SDC v2, 5.5 and 5.5.1.2).

    Raises:
        CubeMismatchError: if the two arrays have different numbers of cells.
    """
    o, p = _pair(original, published)
    return RoundingMeasures(
        moved_beyond_nearest_share=moved_beyond_nearest_share(o, p, params.base),
        beyond_one_base_share=beyond_one_base_share(o, p, params.base),
        existence_interval_mean_width=existence_interval_mean_width(p, params),
        existence_interval_contains_share=existence_interval_contains_share(o, p, params),
    )

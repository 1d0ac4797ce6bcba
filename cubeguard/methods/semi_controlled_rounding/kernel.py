"""Semi-controlled random rounding of the interior cells of control groups, vectorised and exact.

Shlomo (2009), 3.2.1: "the expected number of entries of a given res(x) that are to be rounded
up is predetermined ... a random sample of entries is selected (without replacement) and rounded
up". For a group, with ``n_r`` cells of residual ``r``, the expected number is
``E_r = n_r * r / b = q_r + f_r / b`` (integers ``q_r``, ``0 <= f_r < b``). Each residual class
rounds ``q_r`` or ``q_r + 1`` cells up, the extra one chosen by systematic sampling over the
classes with inclusion probabilities ``f_r / b`` and the group's start ``u_g`` (Madow 1949): so
``E[k_r] = E_r`` (zero bias) and the group's number of up-rounds is ``floor`` or ``ceil`` of
``sum E_r``, which makes the rounded interior add up to the group total rounded to a multiple of
``b`` next to it, up with probability ``(total mod b) / b``. Within a class the cells with the
smallest draws go up: a uniformly random subset of the required size.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def semi_controlled_round(counts: IntArray, base: int, u: FloatArray, group: IntArray, group_u: FloatArray) -> IntArray:
    """Round ``counts`` (flat interior cells) to multiples of ``base``, controlled within each ``group``.

    Args:
        counts: non-negative counts, one per cell.
        base: the rounding base (>= 1).
        u: one draw in [0, 1) per cell (orders the cells of a residual class).
        group: the control group of each cell, 0 .. G-1.
        group_u: one draw in [0, 1) per group (the start of its systematic sample).

    >>> semi_controlled_round(np.array([1, 1, 1, 2]), 3, np.array([.5, .1, .9, .3]), np.zeros(4, np.int64), np.array([.2]))
    array([0, 3, 0, 0])
    """
    residual = counts % base
    rounded = counts - residual
    active = np.flatnonzero(residual > 0)
    if active.size == 0:
        return rounded
    res, grp = residual[active], group[active]
    # classes (group, residual): n_r cells each, in group-major, residual-minor order
    cls = grp * base + res
    keys, n = np.unique(cls, return_counts=True)
    cls_group, cls_res = keys // base, keys % base
    quota, rest = np.divmod((n * cls_res).astype(np.int64), base)  # E_r = quota + rest / base
    up_count = np.asarray(quota + _systematic_extra(rest, cls_group, group_u, base), dtype=np.int64)
    # rank the cells within their class by their draw; the first up_count go up
    order = np.lexsort((u[active], cls))
    position = np.empty(active.size, dtype=np.int64)
    class_of = np.searchsorted(keys, cls[order])
    start = np.asarray(np.searchsorted(cls[order], keys), dtype=np.int64)  # first sorted position of each class
    position[order] = np.arange(active.size) - start[class_of]
    goes_up = position < up_count[np.searchsorted(keys, cls)]
    rounded[active[goes_up]] += base
    return rounded


def _systematic_extra(rest: IntArray, cls_group: IntArray, group_u: FloatArray, base: int) -> IntArray:
    """0 or 1 per class: systematic sampling within each group with inclusion probabilities ``rest / base``.

    With cumulative ``C_k`` (in units of ``1/base``) over a group's classes and start ``u``, class
    ``k`` is chosen when ``floor(C_k / base + u)`` exceeds ``floor(C_{k-1} / base + u)``.
    """
    cum = np.cumsum(rest)
    first = np.r_[True, cls_group[1:] != cls_group[:-1]]
    offset = np.maximum.accumulate(np.where(first, cum - rest, 0))  # cum before each group's first class
    within = cum - offset
    shift = group_u[cls_group] * base
    upto = np.floor((within + shift) / base).astype(np.int64)
    before = np.floor((within - rest + shift) / base).astype(np.int64)
    extra: IntArray = upto - before
    return extra

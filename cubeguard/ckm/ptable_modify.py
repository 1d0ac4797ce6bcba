"""The "modified" p-table of ``ptable::modify_cnt_ptable`` (ptable 1.0.0, ``R/modify_cnt_ptable.R``).

Large probabilities are split into pieces and the intervals of each original count shuffled, so
that the noise no longer grows with the cell key; the noise distribution stays the same.
"""

from __future__ import annotations

import math

import numpy as np

from cubeguard.ckm.ptable import FloatArray, IntArray, PTable
from cubeguard.errors import CubeguardError


def modify_cnt_ptable(ptable: PTable, threshold: float = 0.2, *, rng: np.random.Generator) -> PTable:
    """Split and shuffle the intervals, as ``ptable::modify_cnt_ptable`` (ptable 1.0.0).

    Every probability ``p >= threshold`` (except ``p = 1``) is split into pieces of ``threshold``
    plus the rest; the pieces of each ``i`` are put in random order and the bounds recomputed
    (8 digits). The noise distribution is unchanged, but the noise no longer grows with the cell
    key, which ptable documents as higher protection. Differences to R: the order comes from
    ``rng`` (not R's ``set.seed``, so R's tables are not reproduced), and empty rest pieces
    (``p`` a multiple of ``threshold``) are dropped instead of kept as zero-width intervals.

    Raises:
        CubeguardError: ``threshold`` is not in ``(0, 1]``.
    """
    if not 0.0 < threshold <= 1.0:
        raise CubeguardError("threshold of modify_cnt_ptable must be in (0, 1]; e.g. 0.2.")
    blocks = []
    for count in range(ptable.max_i + 1):
        rows = ptable.block(count)
        pieces = [_split(p, v, threshold) for p, v in zip(ptable.p[rows], ptable.v[rows], strict=True)]
        p = np.concatenate([piece[0] for piece in pieces])
        v = np.concatenate([piece[1] for piece in pieces])
        order = rng.permutation(p.size)
        blocks.append((v[order] + count, p[order]))
    return PTable.from_distributions(blocks, ptable.params, "modified")


def _split(p: float, v: int, threshold: float) -> tuple[FloatArray, IntArray]:
    if p < threshold or p == 1.0:
        return np.array([p]), np.array([v])
    times = math.floor(p / threshold)
    rest = p - math.fsum([threshold] * times)
    sizes = [threshold] * times + ([rest] if rest > 0 else [])
    return np.array(sizes), np.full(len(sizes), v)


def adjacent_equal_noise(ptable: PTable) -> int:
    """Count neighbouring intervals with the same noise.

    ptable warns about them after :func:`modify_cnt_ptable`; try another generator seed if the
    count is large.
    """
    same_i = ptable.i[1:] == ptable.i[:-1]
    return int(np.sum(same_i & (ptable.v[1:] == ptable.v[:-1])))

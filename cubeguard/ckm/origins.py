"""Which original counts can be published as a given count under a p-table (the intruder's view of the cell key method).

Handbook on SDC v2, 5.4; Wilak et al. (2024), steps 3-4: a cell with original count ``i`` is
published as ``j = i + v`` for the ``v`` of the row its cell key falls in. An intruder who knows the
p-table (D, V, js and pstay are secret; we assume the worst, that they leak) learns that the
original of a published ``j`` is one of the ``i`` whose distribution reaches ``j``. Here that
support is read exactly as :mod:`cubeguard.ckm.lookup` selects rows: a row is reachable when some
cell key falls in its interval ``[previous p_int_ub, p_int_ub)`` (a row of probability 0 never is);
count 0 is never perturbed; counts ``>= max_i`` take the noises of the last block (ptable's
"i>=ncat (symmetry)"), so the originals of a large ``j`` are ``j - v`` for those noises.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from cubeguard.ckm.ptable import PTable

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def reachable_rows(ptable: PTable) -> npt.NDArray[np.bool_]:
    """Whether some cell key selects each row: its ``p_int_ub`` exceeds the previous row's of the same ``i`` (or 0)."""
    ub = np.asarray(ptable.p_int_ub)
    first = np.r_[True, ptable.i[1:] != ptable.i[:-1]]
    before = np.where(first, 0.0, np.r_[0.0, ub[:-1]])
    reached: npt.NDArray[np.bool_] = ub > before
    return reached


def origin_tables(ptable: PTable) -> tuple[FloatArray, FloatArray, tuple[int, int]]:
    """Least and greatest original of each published count ``j < size`` (``nan``: never published), and past that.

    Returns ``(lo_of, hi_of, beyond)`` as :func:`cubeguard.methods.bounds.by_value` reads them: a
    published ``j >= lo_of.size`` comes from originals ``j - beyond[0] .. j + beyond[1]``, where
    ``beyond[0]`` is the largest noise of the last block and ``-beyond[1]`` its least (every such
    original is ``> max_i``).
    """
    reached = reachable_rows(ptable)
    last = reached & (ptable.i == ptable.max_i)
    noises = np.asarray(ptable.v)[last]
    listed = reached & (ptable.i > 0) & (ptable.i < ptable.max_i)  # count 0 is never looked up
    i, j = np.asarray(ptable.i)[listed], np.asarray(ptable.j)[listed]
    size = int(max(j.max(initial=0), ptable.max_i + noises.max())) + 1
    lo_of, hi_of = np.full(size, np.inf), np.full(size, -np.inf)
    lo_of[0] = hi_of[0] = 0.0  # a zero stays zero
    np.minimum.at(lo_of, j, i)
    np.maximum.at(hi_of, j, i)
    published = np.arange(size)
    for v in noises.tolist():  # originals >= max_i, shifted by the last block's noises
        origin = published - v
        ok = origin >= ptable.max_i
        lo_of = np.where(ok, np.minimum(lo_of, origin), lo_of)
        hi_of = np.where(ok, np.maximum(hi_of, origin), hi_of)
    never = np.isinf(lo_of)
    lo_of[never], hi_of[never] = np.nan, np.nan
    return lo_of, hi_of, (int(noises.max()), -int(noises.min()))

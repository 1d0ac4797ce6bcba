"""Invariant transition matrices over cell values, and their realisation as exact counts.

Gouweleeuw, Kooiman, Willenborg and De Wolf (1998), Post randomisation for statistical disclosure
control, Journal of Official Statistics 14(4), section 5: given a transition matrix ``P`` and the
distribution ``t`` of the values, ``R = P Q`` with the backward matrix
``Q[k, j] = P[j, k] t[j] / (t P)[k]`` is stochastic and invariant, ``t R = t``. Shlomo and Young
(2008) apply it to the cell values of census tables; Shlomo (2009), 3.2.2, to the Eurostat
hypercube with the number of cells moved from each value to each other fixed to its expectation
("without replacement"), which :func:`transition_counts` makes integral.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy.optimize import Bounds, LinearConstraint, milp

from cubeguard.errors import InternalError

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def base_matrix(states: int, diagonal: float, band: int) -> FloatArray:
    """A diagonal-heavy transition matrix: stay with ``diagonal``, else move to a value at most ``band`` away.

    The mass ``1 - diagonal`` is shared equally by the other states within ``band`` of a state's
    own (fewer at the ends of the range, so every row sums to one).

    >>> base_matrix(3, 0.5, 1).tolist()
    [[0.5, 0.5, 0.0], [0.25, 0.5, 0.25], [0.0, 0.5, 0.5]]

    Raises:
        InternalError: fewer than two states, a diagonal outside (0, 1] or a band below 1 (the
            config forbids them).
    """
    if states < 2 or not 0.0 < diagonal <= 1.0 or band < 1:
        raise InternalError(
            f"stochastic perturbation got {states} states, a diagonal outside (0, 1] or a band below 1; "
            "this is a bug in cubeguard"
        )
    distance = np.abs(np.subtract.outer(np.arange(states), np.arange(states)))
    near = (distance > 0) & (distance <= band)
    p = np.where(near, (1.0 - diagonal) / near.sum(axis=1, keepdims=True), 0.0)
    np.fill_diagonal(p, diagonal)
    return p


def invariant_matrix(p: FloatArray, t: FloatArray) -> FloatArray:
    """``R = P Q``, stochastic with ``t R = t`` (Gouweleeuw et al. 1998, section 5).

    A value no state moves to (``(t P)[k] == 0``) gets an identity row in ``Q``; it is never
    reached, so it changes nothing.

    >>> r = invariant_matrix(base_matrix(3, 0.5, 1), np.array([6.0, 3.0, 1.0]))
    >>> np.allclose(np.array([6.0, 3.0, 1.0]) @ r, [6.0, 3.0, 1.0]), np.allclose(r.sum(axis=1), 1.0)
    (True, True)
    """
    reach = t @ p  # (t P)[k]
    safe = np.where(reach > 0, reach, 1.0)
    q = np.where(reach[:, None] > 0, p.T * t[None, :] / safe[:, None], np.eye(p.shape[0]))
    r: FloatArray = p @ q
    return r


def transition_counts(t: IntArray, r: FloatArray) -> IntArray:
    """How many cells of each value move to each value: ``t[i] R[i, j]`` made integral, margins kept.

    Each count is the floor or the ceiling of its expectation, every row adds up to ``t[i]`` (each
    cell moves once) and every column to ``t[j]`` (the distribution of values is kept exactly), and
    the sum of absolute differences from the expectations is least. Such a matrix exists because
    the expectations have these integral margins (an invariant ``R``) and the constraints are a
    transportation problem, whose matrix is totally unimodular (Cox 1987); HiGHS finds it.

    >>> transition_counts(np.array([3, 1]), invariant_matrix(base_matrix(2, 0.5, 1), np.array([3.0, 1.0]))).tolist()
    [[2, 1], [1, 0]]

    Raises:
        InternalError: HiGHS finds no such matrix (it exists whenever ``t R = t``).
    """
    expected = t[:, None] * r
    low = np.floor(expected + 1e-9)
    fraction = np.clip(expected - low, 0.0, 1.0)
    free = fraction > 1e-9
    n = int(free.sum())
    if n == 0:
        return low.astype(np.int64)
    rows, cols = np.nonzero(free)
    states = t.size
    a = np.zeros((2 * states, n))
    a[rows, np.arange(n)] = 1.0
    a[states + cols, np.arange(n)] = 1.0
    need = np.rint(np.concatenate([t - low.sum(axis=1), t - low.sum(axis=0)]))
    result = milp(
        c=1.0 - 2.0 * fraction[rows, cols],
        constraints=LinearConstraint(a, need, need),
        integrality=np.ones(n),
        bounds=Bounds(0.0, 1.0),
    )
    if result.x is None:
        raise InternalError(
            "stochastic perturbation found no integral transition counts for an invariant matrix; this is a bug"
        )
    counts = low.copy()
    counts[rows, cols] += np.rint(result.x)
    return counts.astype(np.int64)

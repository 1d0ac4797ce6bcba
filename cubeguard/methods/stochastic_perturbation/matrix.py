"""Invariant transition matrices over cell values, and their realisation as exact counts.

Gouweleeuw, Kooiman, Willenborg and De Wolf (1998), Post randomisation for statistical disclosure
control, Journal of Official Statistics 14(4), section 5: given a transition matrix ``P`` and the
distribution ``t`` of the values, ``R = P Q`` with the backward matrix
``Q[k, j] = P[j, k] t[j] / (t P)[k]`` is stochastic and invariant, ``t R = t``. Shlomo and Young
(2008) apply it to the cell values of census tables; Shlomo (2009), 3.2.2, to the Eurostat
hypercube with the number of cells moved from each value to each other fixed to its expectation
("without replacement"), which :func:`transition_counts` makes integral without bias.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

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


def transition_counts(t: IntArray, r: FloatArray, u: float) -> IntArray:
    """How many cells of each value move to each value: ``t[i] R[i, j]`` made integral, unbiased, margins kept.

    Each count is the floor or the ceiling of its expectation, the ceiling with probability the
    expectation's fraction (so the expected count is ``t[i] R[i, j]`` and the perturbation stays
    unbiased), every row adds up to ``t[i]`` (each cell moves once) and every column to ``t[j]``
    (the distribution of values is kept exactly). The fractions form a bipartite graph (from-values,
    to-values) whose every vertex has an integral sum, because ``R`` is stochastic and invariant;
    dependent rounding (Gandhi, Khuller, Parthasarathy and Srinivasan 2006, section 2) moves the
    fractions around one cycle at a time, each step keeping every sum and each fraction's
    expectation, until all are 0 or 1. ``u`` (one draw in [0, 1) per group) seeds its choices.

    >>> transition_counts(np.array([3, 1]), invariant_matrix(base_matrix(2, 0.5, 1), np.array([3.0, 1.0])), 0.25).tolist()
    [[3, 0], [0, 1]]

    Raises:
        InternalError: the fractions do not close into cycles (``t R`` is not ``t``).
    """
    expected = t[:, None] * r
    low = np.floor(expected + 1e-9)
    x = np.clip(expected - low, 0.0, 1.0)
    x[x < 1e-9] = 0.0
    x[x > 1 - 1e-9] = 1.0
    rng = np.random.default_rng(int(u * 2.0**53))
    while True:
        cycle = _fractional_cycle(x)
        if cycle is None:
            break
        _shift(x, cycle, rng)
    counts = (low + np.rint(x)).astype(np.int64)
    if np.any(counts.sum(axis=1) != t) or np.any(counts.sum(axis=0) != t):
        raise InternalError(
            "stochastic perturbation lost a margin of its transition counts; this is a bug in cubeguard"
        )
    return counts


def _fractional_cycle(x: FloatArray) -> list[tuple[int, int]] | None:
    """A cycle of fractional entries of ``x``, alternating along a row and a column; None when none is left.

    Every row and column with a fractional entry has at least two (its sum is an integer), so a walk
    that never takes the edge it came by meets a vertex again; the edges since its first visit are a
    simple cycle of even length, each of its vertices on one even and one odd edge.
    """
    frac = (x > 0.0) & (x < 1.0)
    first = np.argwhere(frac)
    if first.size == 0:
        return None
    seen: dict[tuple[str, int], int] = {}
    path: list[tuple[int, int]] = []
    vertex, came = ("r", int(first[0][0])), (-1, -1)
    while vertex not in seen:
        seen[vertex] = len(path)
        side, k = vertex
        ends = np.flatnonzero(frac[k] if side == "r" else frac[:, k]).tolist()
        edges = [e for e in ([(k, j) for j in ends] if side == "r" else [(i, k) for i in ends]) if e != came]
        if not edges:
            raise InternalError("stochastic perturbation found a lone fraction in its transition counts; this is a bug")
        came = edges[0]
        path.append(came)
        vertex = ("c", came[1]) if side == "r" else ("r", came[0])
    return path[seen[vertex] :]


def _shift(x: FloatArray, cycle: list[tuple[int, int]], rng: np.random.Generator) -> None:
    """Add ``+a`` and ``-a`` alternately around ``cycle``, ``a`` chosen so each entry keeps its expectation."""
    plus, minus = cycle[0::2], cycle[1::2]
    xp = np.array([x[e] for e in plus])
    xm = np.array([x[e] for e in minus])
    up = min(float((1.0 - xp).min()), float(xm.min()))  # the largest step with + on plus
    down = min(float(xp.min()), float((1.0 - xm).min()))  # the largest step with - on plus
    step = up if rng.random() < down / (up + down) else -down
    for e in plus:
        x[e] = min(max(x[e] + step, 0.0), 1.0)
    for e in minus:
        x[e] = min(max(x[e] - step, 0.0), 1.0)
    for e in cycle:  # entries within rounding error of 0 or 1 are integral
        if x[e] < 1e-9:
            x[e] = 0.0
        elif x[e] > 1 - 1e-9:
            x[e] = 1.0

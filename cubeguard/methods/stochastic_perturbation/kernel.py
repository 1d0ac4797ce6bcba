"""Invariant stochastic perturbation of cell values, the moves fixed to their expectations per control group.

Shlomo (2009), 3.2.2, after Shlomo and Young (2008): the cells whose values lie in the perturbed
range move among the values of that range by an invariant transition matrix ``R`` of the group's
own distribution of values ``t`` (:mod:`~cubeguard.methods.stochastic_perturbation.matrix`).
"Without replacement": for each value ``i`` exactly ``N[i, j]`` of its cells move to ``j``, where
``N`` is ``t[i] R[i, j]`` made integral without bias and with its margins kept, so the group keeps
its distribution of values exactly, hence its total. Which cells move where is decided by one uniform draw per
cell (its cell key, or a seeded stream): within a value, the cells in increasing order of their
draws fill ``N[i, 0]``, then ``N[i, 1]``, ... (a uniformly random assignment of the fixed sizes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cubeguard.methods.stochastic_perturbation.matrix import base_matrix, invariant_matrix, transition_counts

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Perturbation:
    """What a perturbation needs besides the cells: the perturbed range and the base matrix's shape.

    Attributes:
        low: the smallest perturbed value (0 or 1).
        cap: the largest perturbed value; cells outside ``low .. cap`` are left alone.
        diagonal: the base matrix's probability of keeping a value (secret).
        band: how far the base matrix moves a value at most (secret).
    """

    low: int
    cap: int
    diagonal: float
    band: int

    @property
    def states(self) -> int:
        """The number of perturbed values."""
        return self.cap - self.low + 1


def perturb(values: IntArray, u: FloatArray, group: IntArray, group_u: FloatArray, spec: Perturbation) -> IntArray:
    """``values`` (flat cells) perturbed within each control group (see the module docstring).

    Args:
        values: non-negative counts, one per cell.
        u: one draw in [0, 1) per cell.
        group: each cell's control group, 0 .. G-1.
        group_u: one draw in [0, 1) per group (seeds the rounding of its move counts).
        spec: the perturbed range and the base matrix.

    >>> spec = Perturbation(low=1, cap=3, diagonal=0.5, band=1)
    >>> values, u = np.array([1, 1, 2, 3, 9, 0]), np.array([.1, .6, .3, .8, .5, .2])
    >>> out = perturb(values, u, np.zeros(6, np.int64), np.array([.4]), spec)
    >>> sorted(out[:4].tolist()), out[4:].tolist()
    ([1, 1, 2, 3], [9, 0])
    """
    out = values.astype(np.int64).copy()
    active = np.flatnonzero((values >= spec.low) & (values <= spec.cap))
    if active.size == 0:
        return out
    p = base_matrix(spec.states, spec.diagonal, spec.band)
    state, grp = values[active] - spec.low, group[active]
    order = np.lexsort((u[active], state, grp))  # by group, then value, then draw
    starts = np.flatnonzero(np.diff(grp[order], prepend=-1))  # where each group begins in ``order``
    for mine in np.split(order, starts[1:]):  # one group's cells, by value then draw
        t = np.bincount(state[mine], minlength=spec.states)
        moves = transition_counts(t, invariant_matrix(p, t.astype(np.float64)), float(group_u[grp[mine[0]]]))
        rank = np.arange(mine.size) - np.repeat(np.cumsum(t) - t, t)  # position within its value
        bounds = np.cumsum(moves, axis=1)  # cells of value i with rank below bounds[i, j] go to j or less
        value = state[mine]
        target = np.empty(mine.size, dtype=np.int64)
        for i in np.flatnonzero(t):
            at = value == i
            target[at] = np.searchsorted(bounds[i], rank[at], side="right")
        out[active[mine]] = target + spec.low
    return out

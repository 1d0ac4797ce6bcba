"""Unit transitions between the cells of a table, for the entropy risk ``r#`` of record swapping.

Handbook on SDC v2, 5.9 (after Antal, Shlomo and Elliot 2014): ``F#_ij`` "is the number of units
which belong to ``C_i`` before and to ``C_j`` after perturbation". Record swapping moves persons
between cells, so ``F#`` is read off the microdata before and after the swap; it is stored sparse,
as aligned arrays over the pairs of cells that occur, since a table may have millions of cells.

Examples:
    >>> t = Transitions.of([0, 0, 1], [0, 1, 0], [2, 1, 1])
    >>> check_transitions(t, [3, 1], [3, 1])
    >>> t.persons.tolist()
    [2, 1, 1]
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from cubeguard.measures._arrays import NumArray
from cubeguard.measures.errors import MeasureConfigError

IntArray = npt.NDArray[np.int64]


class Transitions(NamedTuple):
    """``persons[n]`` units were in cell ``before[n]`` and are in cell ``after[n]`` (flat positions).

    Cells are positions in the flattened table (C order); a pair may appear once or several
    times (its persons are added up).
    """

    before: IntArray
    after: IntArray
    persons: IntArray

    @classmethod
    def of(cls, before: npt.ArrayLike, after: npt.ArrayLike, persons: npt.ArrayLike) -> Transitions:
        """Transitions from three aligned sequences (converted to int64)."""
        return cls(*(np.asarray(a, dtype=np.int64).ravel() for a in (before, after, persons)))

    @classmethod
    def from_matrix(cls, matrix: npt.ArrayLike) -> Transitions:
        """Transitions from a dense matrix ``F[i, j]`` (small tables only)."""
        f = np.asarray(matrix)
        i, j = np.nonzero(f)
        return cls.of(i, j, f[i, j])


def check_transitions(transitions: Transitions, original: npt.ArrayLike, protected: npt.ArrayLike) -> None:
    """Raise unless ``transitions`` move the units of ``original`` into the cells of ``protected``.

    Every unit of the table is in one cell before and one after, so the persons leaving cell ``i``
    add up to its original count and those arriving in cell ``j`` to its protected count.

    Raises:
        MeasureConfigError: for arrays of different lengths, cells outside the table, negative
            persons, or sums that do not give the two tables.
    """
    o: NumArray = np.asarray(original).ravel()
    p: NumArray = np.asarray(protected).ravel()
    i, j, f = transitions
    k = o.size
    if not (i.shape == j.shape == f.shape and i.ndim == 1):
        raise MeasureConfigError("transitions need three aligned one-dimensional arrays: before, after and persons")
    if i.size and (min(int(i.min()), int(j.min())) < 0 or max(int(i.max()), int(j.max())) >= k or f.min() < 0):
        raise MeasureConfigError(f"transitions must name cells 0 to {k - 1} and non-negative persons")
    leaving = np.bincount(i, weights=f, minlength=k)
    arriving = np.bincount(j, weights=f, minlength=k)
    if not (np.array_equal(leaving, o) and np.array_equal(arriving, p)):
        raise MeasureConfigError(
            "transitions must move the original table into the protected one: the persons leaving each "
            "cell must add up to its original count and those arriving to its protected count"
        )


def with_stayers(moved: Transitions, original: npt.ArrayLike) -> Transitions:
    """``F#`` from the units that moved alone: every other unit of ``original`` stays in its cell.

    A pre-tabular step moves few units, so only they are listed; each cell ``i`` adds the pair
    ``(i, i)`` with its original count less the units that left it. More units leaving a cell than
    it held gives a negative count, which :func:`check_transitions` refuses.

    Examples:
        >>> with_stayers(Transitions.of([0], [1], [1]), [3, 1]).persons.tolist()
        [1, 2, 1]
    """
    o = np.asarray(original).ravel().astype(np.int64)
    i, j, f = moved
    if i.size and (int(i.min()) < 0 or int(i.max()) >= o.size):
        return moved  # cells outside the table: left for check_transitions to name
    stay = o - np.bincount(i, weights=f, minlength=o.size).astype(np.int64)
    cells = np.flatnonzero(stay).astype(np.int64)
    return Transitions(np.concatenate([i, cells]), np.concatenate([j, cells]), np.concatenate([f, stay[cells]]))


def merged(transitions: Transitions, cells: int) -> Transitions:
    """The same transitions with each pair of cells once, persons added up, zero pairs dropped.

    Entropies need one count per pair: ``F log F`` does not add up over parts of a pair.
    """
    i, j, f = transitions
    keys, where = np.unique(i * np.int64(cells) + j, return_inverse=True)
    persons = np.bincount(where.ravel(), weights=f, minlength=keys.size).astype(np.int64)
    kept = persons > 0
    return Transitions(keys[kept] // cells, keys[kept] % cells, persons[kept])

"""Disclosure risk left in a protected table: small cells, zeros and entropy.

* Shlomo (2009), section 4.1: "A measure to quantify disclosure risk in frequency tables is the
  number of small cells of size 1 and 2 that are not changed by the SDC method" — here as the share
  of original small cells (any set of values) published unchanged, and likewise for zeros.
* Handbook on SDC v2, 5.9 (after Antal, Shlomo and Elliot 2014): the entropy-based risk ``r`` of a
  population table and ``r#`` of its perturbed version, see :func:`entropy_risk` and
  :func:`entropy_risk_protected`.

Directly disclosive cells and the record-swapping success measures are in
:mod:`cubeguard.measures.disclosive`.

Examples:
    >>> small_cells_unchanged([1, 2, 2, 5], [1, 0, 3, 5])
    0.3333333333333333
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from cubeguard.measures._arrays import Counts, NumArray, check_nonnegative, count_array, numeric, pair
from cubeguard.measures.errors import MeasureConfigError
from cubeguard.measures.transitions import Transitions, check_transitions, merged

Weights = tuple[float, float, float]
EQUAL_WEIGHTS: Weights = (1 / 3, 1 / 3, 1 / 3)
_DENSE = 1 << 10


def small_cells_unchanged(original: Counts, protected: Counts, small: Iterable[int] = (1, 2)) -> float:
    """Share of cells with an original value in ``small`` that are published unchanged.

    Shlomo (2009), section 4.1 (small cells of size 1 and 2 not changed). ``nan`` when no cell has
    an original value in ``small``.
    """
    n, unchanged = small_cells_tally(original, protected, small)
    return unchanged / n if n else math.nan


def small_cells_tally(original: Counts, protected: Counts, small: Iterable[int] = (1, 2)) -> tuple[int, int]:
    """The counts behind :func:`small_cells_unchanged`: small cells, and those published unchanged.

    Cells with an original value in ``small``, and how many of them are published unchanged (Shlomo 2009, 4.1).

    Counts add up over parts of a table, so a large cube can be tallied slab by slab.

    Examples:
        >>> small_cells_tally([1, 2, 2, 5], [1, 0, 3, 5])
        (3, 1)
    """
    o, p = pair(original, protected)
    values = np.fromiter(small, dtype=np.int64)
    is_small = np.isin(o, values, kind="table" if o.dtype.kind == "i" and values.size else None)
    return int(is_small.sum()), int((p[is_small] == o[is_small]).sum())


def zeros_kept(original: Counts, protected: Counts) -> float:
    """Share of original zero cells that are published as zero; ``nan`` when there is none.

    Handbook on SDC v2, 5.2: protection against group attribute disclosure needs "ambiguity in the
    zeros"; a share of 1 means every published zero is a true zero.
    """
    o, p = pair(original, protected)
    z = o == 0
    n = int(z.sum())
    return float((p[z] == 0).sum() / n) if n else math.nan


def _check_weights(weights: Weights) -> None:
    if len(weights) != 3 or min(weights) < 0 or not math.isclose(sum(weights), 1.0, abs_tol=1e-9):
        raise MeasureConfigError(f"entropy risk weights must be three non-negative numbers summing to 1, got {weights}")


def _size_term(n: float) -> float:
    """``-(1/sqrt(N)) log(1/(e sqrt(N)))``, in ``(0, 1]`` for ``N >= 1``."""
    return (1.0 + 0.5 * math.log(n)) / math.sqrt(n)


def _concentration(x: NumArray) -> float:
    """``1 - H / log k`` for the cell shares of ``x`` (1 for a one-cell table)."""
    k = x.size
    if k < 2:
        return 1.0
    f = x[x > 0].astype(np.float64)
    n = f.sum()
    h = float(math.log(n) - (f * np.log(f)).sum() / n)
    return min(1.0, max(0.0, 1.0 - h / math.log(k)))


def _table_parts(original: NumArray) -> tuple[int, float]:
    check_nonnegative(original, "the entropy risk")
    n = float(original.sum())
    if n <= 0:
        raise MeasureConfigError("the entropy risk needs a table with a positive total; pick a non-empty table")
    return original.size, n


def entropy_risk(table: Counts, weights: Weights = EQUAL_WEIGHTS) -> float:
    """Entropy-based disclosure risk ``r`` of a population table, in ``[0, 1]``.

    Handbook on SDC v2, 5.9 (Antal, Shlomo and Elliot 2014)::

        r = w1 |D|/k + w2 (1 - H / log k) - w3 (1/sqrt(N)) log(1 / (e sqrt(N)))

    with ``k`` cells, ``D`` the zero cells, ``N`` the total and ``H`` the entropy of the cell shares.
    Apply it to a table (the interior of a cube or a margin), not to a cube with its subtotals,
    which would count every person several times. ``1 - H/log k`` is taken as 1 for a one-cell table.

    Raises:
        MeasureConfigError: for bad weights or a table whose total is not positive.
    """
    _check_weights(weights)
    x = numeric(count_array(table)).ravel()
    k, n = _table_parts(x)
    zeros = int((x == 0).sum())
    return _combine(weights, zeros / k, _concentration(x), _size_term(n))


def _combine(weights: Weights, zeros: float, concentration: float, size: float) -> float:
    """``w1 * zeros + w2 * concentration + w3 * size`` (one expression for ``r`` and ``r#``)."""
    w1, w2, w3 = weights
    return w1 * zeros + w2 * concentration + w3 * size


def value_transitions(original: Counts, protected: Counts) -> tuple[NumArray, NumArray, npt.NDArray[np.int64]]:
    """Transition counts ``F_ij``: how many cells have original value ``i`` and protected value ``j``.

    Returns:
        Three aligned flat arrays ``(i, j, F_ij)`` over the pairs that occur, sorted by ``(i, j)``.
    """
    o, p = pair(original, protected)
    o, p = o.ravel(), p.ravel()
    if o.dtype.kind == "i" and p.dtype.kind == "i" and o.size:
        lo = min(int(o.min()), int(p.min()))
        a, b = o - lo, p - lo
        dense = (a < _DENSE) & (b < _DENSE)
        f = np.bincount(a[dense] * _DENSE + b[dense], minlength=1)
        key = np.flatnonzero(f)
        i, j, n = key // _DENSE + lo, key % _DENSE + lo, f[key].astype(np.int64)
        if not dense.all():
            pairs, m = np.unique(np.stack([o[~dense], p[~dense]], axis=1), axis=0, return_counts=True)
            i, j, n = np.concatenate([i, pairs[:, 0]]), np.concatenate([j, pairs[:, 1]]), np.concatenate([n, m])
            order = np.lexsort((j, i))
            i, j, n = i[order], j[order], n[order]
        return i, j, n
    pairs, m = np.unique(np.stack([o, p], axis=1), axis=0, return_counts=True)
    return pairs[:, 0], pairs[:, 1], m.astype(np.int64)


def _entropies(i: NumArray, j: NumArray, f: npt.NDArray[np.float64]) -> tuple[float, float]:
    """``H(X)`` and ``H(X | Y)`` of the joint counts ``f`` of ``(X, Y) = (i, j)``."""
    total = float(f.sum())
    _, xi = np.unique(i, return_inverse=True)
    _, yj = np.unique(j, return_inverse=True)
    fx = np.bincount(xi, weights=f)
    fy = np.bincount(yj, weights=f)
    h_x = float((fx * np.log(total / fx)).sum() / total)
    h_x_given_y = float((f * np.log(fy[yj] / f)).sum() / total)
    return h_x, max(0.0, h_x_given_y)


def entropy_risk_protected(
    original: Counts,
    protected: Counts,
    weights: Weights = EQUAL_WEIGHTS,
    transitions: Transitions | npt.ArrayLike | None = None,
) -> float:
    """Entropy-based disclosure risk ``r#`` of a protected table; ``r# <= r`` always.

    Handbook on SDC v2, 5.9 (Antal, Shlomo and Elliot 2014)::

        r# = w1 (|D|/k) ** (|D u Q| / |D n Q|) + w2 (1 - H/log k)(1 - H#/H) - w3 (1/sqrt(N)) log(1/(e sqrt(N)))

    with ``Q`` the zero cells of the protected table and ``H#`` the conditional entropy of the
    original given the protected values, from transition counts ``F_ij``. By default ``F_ij`` counts
    cells with original value ``i`` and protected value ``j`` (:func:`value_transitions`), which any
    post-tabular method yields. For record swapping, which moves persons between cells, pass the
    Handbook's unit transitions: a :class:`~cubeguard.measures.transitions.Transitions` (sparse:
    persons in cell ``i`` before and cell ``j`` after, cells as flat positions of the table) or,
    for small tables, a dense matrix ``F[i, j]``. ``H#/H`` is ``H(X|Y) / H(X)`` with ``X`` the
    row variable of ``F`` (for unit transitions ``H(X)`` is the table entropy ``H``); it lies in
    ``[0, 1]``, so ``r# <= r``. The first term is 0 when no original zero stays zero, and ``H#/H``
    is 0 when ``H(X) = 0``.

    Raises:
        MeasureConfigError: for bad weights, a table whose total is not positive, a transition
            matrix that is not square with one row per cell, or transitions that do not move the
            original table into the protected one.
    """
    _check_weights(weights)
    o, p = pair(original, protected)
    o, p = o.ravel(), p.ravel()
    k, n = _table_parts(o)
    d, q = o == 0, p == 0
    both, either = int((d & q).sum()), int((d | q).sum())
    term1 = (int(d.sum()) / k) ** (either / both) if both else 0.0
    i, j, f = value_transitions(o, p) if transitions is None else _unit_transitions(transitions, o, p)
    h_x, h_x_y = _entropies(i, j, f.astype(np.float64))
    kept = 1.0 - min(1.0, h_x_y / h_x) if h_x > 0 else 1.0
    return _combine(weights, term1, _concentration(o) * kept, _size_term(n))


def _unit_transitions(transitions: Transitions | npt.ArrayLike, o: NumArray, p: NumArray) -> Transitions:
    """Checked unit transitions, from a :class:`Transitions` or a dense ``k x k`` matrix."""
    if not isinstance(transitions, Transitions):
        t = np.asarray(transitions, dtype=np.float64)
        k = o.size
        if t.ndim != 2 or t.shape[0] != t.shape[1] or t.shape[0] != k or t.min() < 0:
            raise MeasureConfigError(
                f"transitions must be a non-negative {k} x {k} matrix of persons moving between cells, got shape {t.shape}"
            )
        transitions = Transitions.from_matrix(t)
    check_transitions(transitions, o, p)
    return merged(transitions, o.size)

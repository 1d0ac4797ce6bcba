"""Whether a table has a zero-restricted controlled rounding at all, decided by a constraint solver.

Handbook on SDC v2, 5.5.1: a table of three or more dimensions need not have a zero-restricted
controlled rounding (every cell at the multiple of the base just below or just above its count),
and the Handbook asks the user to allow more steps then. Zero-restricted, each cell with a
residual ``r > 0`` is a 0/1 choice ``t`` (``a = x - r + b t``) and every other cell is fixed, so
additivity is a system of small 0/1 equations ``sum(t_children) - t_total = k``. HiGHS, a
branch-and-bound solver, proves such systems infeasible slowly (the 151,875-cell census table of
``benchmarks/rounding.py`` was undecided after 120 s); OR-Tools' CP-SAT (Perron and Didier, Google)
learns clauses from conflicts and decides it in seconds (none exists: 15 s). The answer is a
proof either way: a rounding that satisfies every equation, or a certificate of infeasibility.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from cubeguard.cubes.tree import DimHierarchy
from cubeguard.methods.controlled_rounding.kernel import IntArray


@dataclass(frozen=True)
class Existence:
    """What the constraint solver found about zero-restricted roundings of one table.

    Attributes:
        answer: ``exists``, ``none`` (proven) or ``undecided`` (the time limit came first).
        published: a zero-restricted rounding (every cell) when one exists, not optimised.
        seconds: the solver's wall time.
    """

    answer: str
    published: IntArray | None
    seconds: float


def zero_restricted(
    counts: IntArray, hier: Sequence[DimHierarchy], base: int, time_limit_s: float, fixed: IntArray | None = None
) -> Existence:
    """Whether ``counts`` (every cell of the table) has a zero-restricted rounding to ``base``, cells ``fixed`` (>= 0) held.

    >>> from cubeguard.cubes.tree import DimHierarchy
    >>> flat = DimHierarchy("V", ("T", "a", "b"), np.array([-1, 0, 0]), np.array([0, 1, 1]))
    >>> zero_restricted(np.array([2, 1, 1]), [flat], 3, 10.0).answer  # 3 = 3 + 0 or 0 + 3
    'exists'
    >>> zero_restricted(np.array([2, 1, 1]), [flat], 3, 10.0, np.array([9, -1, -1])).answer  # 9 from two of 0 or 3
    'none'
    """
    x = np.asarray(counts, dtype=np.int64).ravel()
    held = np.zeros(x.size, dtype=bool) if fixed is None else np.asarray(fixed).ravel() >= 0
    low = np.where(held, 0 if fixed is None else np.asarray(fixed).ravel(), x - x % base)
    free = np.flatnonzero(~held & (x % base > 0))
    rows = every_equation(hier)
    rhs = -np.asarray(rows @ low, dtype=np.int64)  # sum(coef * b * t) over the free cells must equal this
    if np.any(rhs % base):
        return Existence("none", None, 0.0)  # held cells off the base: no rounding at all
    on_free = sp.csr_array(rows[:, free])
    if np.any((np.diff(on_free.indptr) == 0) & (rhs != 0)):
        return Existence("none", None, 0.0)  # an equation of fixed cells only, not satisfied
    return _solve(on_free, rhs // base, low, free, base, time_limit_s)


def every_equation(hier: Sequence[DimHierarchy]) -> sp.csr_array:
    """One row per code with children and every combination of the other dimensions' codes: +1 at it, -1 at its children.

    Redundant (the MIP's :func:`~cubeguard.methods.controlled_rounding.kernel.additivity_rows` span
    the same set with one row per cell), but CP-SAT propagates through each line of the table:
    on the 151,875-cell census table the spanning rows left it undecided after 120 s and these
    decide it in 15 s.
    """
    shape = tuple(len(h.codes) for h in hier)
    ids = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    rows, cols, vals, n_rows = [], [], [], 0
    for d, h in enumerate(hier):
        for node in np.flatnonzero(~h.is_leaf):
            total = np.take(ids, node, axis=d).ravel()
            kids = np.flatnonzero(h.parent == node)
            row = n_rows + np.arange(total.size, dtype=np.int64)
            rows += [row, np.tile(row, kids.size)]
            cols += [total, np.concatenate([np.take(ids, k, axis=d).ravel() for k in kids])]
            vals += [np.ones(total.size, dtype=np.int64), -np.ones(total.size * kids.size, dtype=np.int64)]
            n_rows += total.size
    data = (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols)))
    return sp.csr_array(data, shape=(n_rows, ids.size))


def _solve(a: sp.csr_array, rhs: IntArray, low: IntArray, free: IntArray, base: int, time_limit_s: float) -> Existence:
    """CP-SAT on ``a t = rhs`` with 0/1 ``t``; the published table when it finds one."""
    from ortools.sat.python import cp_model  # imported here: a second or so, needed only for large tables

    model = cp_model.CpModel()
    t = [model.new_bool_var("") for _ in range(free.size)]
    coef = a.data.astype(np.int64).tolist()
    col = a.indices.tolist()
    for r in np.flatnonzero(np.diff(a.indptr)):
        lo, hi = int(a.indptr[r]), int(a.indptr[r + 1])
        model.add(sum(coef[k] * t[col[k]] for k in range(lo, hi)) == int(rhs[r]))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit_s
    solver.parameters.num_workers = 2
    solver.parameters.random_seed = 0
    status = solver.solve(model)
    seconds = float(solver.wall_time)
    if status == cp_model.INFEASIBLE:
        return Existence("none", None, seconds)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Existence("undecided", None, seconds)
    published = low.copy()
    published[free] += base * np.array([solver.value(v) for v in t], dtype=np.int64)
    return Existence("exists", published, seconds)

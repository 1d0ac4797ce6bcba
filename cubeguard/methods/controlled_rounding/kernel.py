"""Controlled rounding of a hierarchical table as an integer program solved by HiGHS.

Hundepool et al. (2024), Handbook on SDC v2, 5.5.1; Salazar-González, Bycroft and Staggemeier
(2005), solved by HiGHS through highspy. Write each count as ``x = b * u + r`` with ``0 <= r < b`` and its published value as
``a = b * u + b * t`` with an integer ``t``. A cell with ``steps = K`` may take ``t`` in
``[-(K - 1), K]`` when ``r > 0`` and ``[-(K - 1), K - 1]`` when ``r == 0``, never below zero (so
``|a - x| < K * b``; ``K = 1`` is zero-restricted rounding). The deviation ``|a - x|`` is convex and
piecewise linear in ``t`` with its kink between 0 and 1, so ``t = up1 + up - down`` with a binary
``up1`` costing ``b - 2r`` (the deviation ``r + (b - 2r) * up1`` of zero-restricted rounding) and
integers ``up`` and ``down`` costing ``b`` each makes the objective linear; the sum of ``r`` over
all cells is its constant.

Additivity is one equation per total or subtotal cell ``m``: along the first dimension where
``m``'s code has children, ``a_m`` equals the sum of the cells of its children (the other codes
fixed). Each child is an interior cell or a cell with fewer codes above a leaf, so by induction
every margin equals the sum of the interior cells below it (the Cartesian product of the leaf sets
under its codes). These equations span the same affine set as the equations over all interior
cells below each margin, so the feasible set and the LP relaxation are the same, but a row holds
a code's children and the code (a few entries) instead of every interior cell below it.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import highspy
import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from cubeguard.cubes.tree import DimHierarchy
from cubeguard.errors import InternalError

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Program:
    """The integer program of one table (see the module docstring).

    Attributes:
        rows: additivity equations over the cells' ``t`` (rows: margin cells; columns: all cells, flat).
        floor: each cell's count rounded down to a multiple of the base (flat).
        cost: the objective coefficient of each variable.
        upper: each variable's upper bound (lower bounds are 0).
        cell: the flat cell each variable moves.
        sign: +1 for an up variable, -1 for a down variable.
        offset: the objective's constant, the sum of the residuals ``r``.
        rhs: the right-hand side of the equations, ``A t = rhs``.
    """

    rows: sp.csc_array
    floor: IntArray
    cost: FloatArray
    upper: FloatArray
    cell: IntArray
    sign: IntArray
    offset: int
    rhs: IntArray


@dataclass(frozen=True)
class Solution:
    """The outcome of one rounding: the published table (when found) and public facts about the solve.

    Attributes:
        published: the rounded table, every cell (``None`` when no rounding was found).
        status: ``optimal``, ``first_feasible`` (stopped at the first solution), ``time_limit`` (best
            found when the limit was reached), ``infeasible`` or ``no_solution`` (limit reached first).
        objective: sum over all cells of ``|published - count|`` (``None`` without a solution).
        bound: the solver's lower bound on the least possible objective.
        gap: ``(objective - bound) / objective`` (0 when the objective is 0).
        cells: cells of the table, totals included.
        constraints: additivity equations (one per total or subtotal cell).
        variables: integer variables of the program.
        build_seconds: time to build the program(s); with blocks, the wall time less ``solve_seconds``.
        solve_seconds: time HiGHS took (with blocks on two threads, summed over the threads).
        steps_used: the fewest steps that admitted a rounding (1: zero-restricted; ``None``
            without a solution): every published cell is less than that many bases from its count.
        blocks: the tables solved one after another (1 unless the table was partitioned).
        merged: parts solved again as one program because a block of theirs had no rounding.
        whole: whether the table was solved as one program (so ``infeasible`` is proven for it).
        zero_restricted: whether the whole table has a zero-restricted rounding, when
            :mod:`~cubeguard.methods.controlled_rounding.existence` was asked: ``exists``, ``none``
            or ``undecided``.
    """

    published: IntArray | None
    status: str
    objective: int | None
    bound: float | None
    gap: float | None
    cells: int
    constraints: int
    variables: int
    build_seconds: float
    solve_seconds: float
    steps_used: int | None = None
    blocks: int = 1
    whole: bool = True
    merged: int = 0
    zero_restricted: str | None = None

    def report(self) -> dict[str, object]:
        """The public facts of the solve (no count of the table), JSON-ready."""
        return {
            "status": self.status,
            "objective": self.objective,
            "bound": self.bound,
            "gap": self.gap,
            "cells": self.cells,
            "constraints": self.constraints,
            "variables": self.variables,
            "seconds": round(self.build_seconds + self.solve_seconds, 3),
            "solver_seconds": round(self.solve_seconds, 3),
            "steps_used": self.steps_used,
            "blocks": self.blocks,
            "merged_blocks": self.merged,
            "zero_restricted": self.zero_restricted,
        }


def additivity_rows(hier: Sequence[DimHierarchy]) -> sp.csc_array:
    """One row per total or subtotal cell: +1 at the cell, -1 at its children along its first dimension with children.

    Columns are the cells of the full table in C order (shape: the number of codes per dimension).
    A table ``a`` is additive exactly when ``rows @ a.ravel() == 0``.
    """
    shape = tuple(len(h.codes) for h in hier)
    ids = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    rows: list[IntArray] = []
    cols: list[IntArray] = []
    vals: list[IntArray] = []
    n_rows = 0
    for d, h in enumerate(hier):
        # cells with a leaf on every dimension before d: those whose first non-leaf dimension may be d
        sub = ids[np.ix_(*[hier[e].leaves if e < d else np.arange(shape[e]) for e in range(len(hier))])]
        parents = np.flatnonzero(~h.is_leaf)
        cells = np.take(sub, parents, axis=d)
        row_ids = n_rows + np.arange(cells.size, dtype=np.int64).reshape(cells.shape)
        place = np.full(len(h.codes), -1, dtype=np.int64)
        place[parents] = np.arange(parents.size)
        children = np.flatnonzero(h.parent >= 0)
        rows += [row_ids.ravel(), np.take(row_ids, place[h.parent[children]], axis=d).ravel()]
        cols += [cells.ravel(), np.take(sub, children, axis=d).ravel()]
        vals += [np.ones(cells.size, dtype=np.int64), np.full(rows[-1].size, -1, dtype=np.int64)]
        n_rows += cells.size
    data = (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols)))
    return sp.csc_array(data, shape=(n_rows, ids.size))


def build_program(
    counts: IntArray, hier: Sequence[DimHierarchy], base: int, steps: int, fixed: IntArray | None = None
) -> Program:
    """The integer program rounding ``counts`` (every cell of the table) to ``base`` within ``steps``.

    ``fixed`` (same shape, optional) holds the published value of cells already decided (a
    multiple of the base; -1 for a free cell): such a cell gets no variable, its value enters the
    equations' right-hand side and its deviation the objective's constant.

    Raises:
        InternalError: negative or non-integer counts, a base below 2, steps below 1, or a fixed
            value that is not a non-negative multiple of the base (the config, the cube
            convention and the callers forbid them).
    """
    if counts.dtype.kind not in "iu" or base < 2 or steps < 1 or (counts.size and counts.min() < 0):
        raise InternalError(
            f"controlled rounding got {counts.dtype} counts, base {base} and steps {steps}; this is a bug in cubeguard"
        )
    x = counts.astype(np.int64).ravel()
    held = np.zeros(x.size, dtype=bool) if fixed is None else fixed.ravel() >= 0
    if fixed is not None and np.any(fixed.ravel()[held] % base):
        raise InternalError("controlled rounding was asked to hold a cell off the base; this is a bug in cubeguard")
    residual = np.where(held, 0, x % base)
    floor = np.where(held, -1 if fixed is None else fixed.ravel(), x - residual)
    free = ~held
    first = np.flatnonzero(free & (residual > 0)) if steps == 1 else np.flatnonzero(free)  # up1: t from 0 to 1
    ups = np.where(free, np.where(residual > 0, steps, steps - 1) - 1, 0)  # more steps up after up1
    downs = np.where(free, np.minimum(steps - 1, floor // base), 0)  # steps down, never below zero
    more, less = np.flatnonzero(ups > 0), np.flatnonzero(downs > 0)
    cell = np.concatenate([first, more, less])
    sign = np.concatenate([np.ones(first.size + more.size, dtype=np.int64), -np.ones(less.size, dtype=np.int64)])
    cost = np.concatenate([base - 2 * residual[first], np.full(more.size + less.size, base)]).astype(np.float64)
    upper = np.concatenate([np.ones(first.size, dtype=np.int64), ups[more], downs[less]]).astype(np.float64)
    rows = additivity_rows(hier)
    imbalance = np.asarray(rows @ floor, dtype=np.int64)
    if np.any(imbalance % base):
        raise InternalError("controlled rounding built non-integral equations; this is a bug in cubeguard")
    offset = int(residual.sum() + np.abs(floor - x)[held].sum())
    return Program(rows, floor, cost, upper, cell, sign, offset, -imbalance // base)


def solve(program: Program, stop: str, time_limit_s: float) -> tuple[IntArray | None, str, float | None]:
    """HiGHS on the program: each cell's ``t`` (``None`` without a solution), the status, the bound of the MIP part."""
    rows, n_vars = program.rows, program.cost.size
    if n_vars == 0:  # nothing can move: feasible exactly when the table of floors is additive
        if program.rhs.any():
            return None, "infeasible", None
        return np.zeros(rows.shape[1], dtype=np.int64), "optimal", 0.0
    highs = _highs(program, stop, time_limit_s)
    highs.run()
    model_status, info = highs.getModelStatus(), highs.getInfo()
    bound = float(info.mip_dual_bound) if math.isfinite(info.mip_dual_bound) else None
    if model_status == highspy.HighsModelStatus.kInfeasible:
        return None, "infeasible", bound
    stopped = (highspy.HighsModelStatus.kTimeLimit, highspy.HighsModelStatus.kSolutionLimit)
    if model_status != highspy.HighsModelStatus.kOptimal and model_status not in stopped:
        raise InternalError(
            f"HiGHS stopped with {highs.modelStatusToString(model_status)!r} on a controlled rounding; "
            "this is a bug in cubeguard"
        )
    if info.primal_solution_status != _FEASIBLE:
        return None, "no_solution", bound
    x = np.rint(np.asarray(highs.getSolution().col_value)).astype(np.int64)
    t = np.zeros(rows.shape[1], dtype=np.int64)
    np.add.at(t, program.cell, program.sign * x)
    if model_status == highspy.HighsModelStatus.kTimeLimit:
        return t, "time_limit", bound
    return t, "first_feasible" if stop == "first_feasible" else "optimal", bound


#: HiGHS's value of ``primal_solution_status`` for a feasible solution.
_FEASIBLE = 2


def _highs(program: Program, stop: str, time_limit_s: float) -> highspy.Highs:
    """A quiet, single-threaded, deterministic HiGHS holding the program; ``first_feasible`` stops at the first solution."""
    matrix = (program.rows[:, program.cell] @ sp.diags_array(program.sign.astype(np.float64))).tocsc()
    n_vars = program.cost.size
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n_vars, matrix.shape[0]
    lp.col_cost_, lp.col_lower_, lp.col_upper_ = program.cost, np.zeros(n_vars), program.upper
    lp.row_lower_ = lp.row_upper_ = program.rhs.astype(np.float64)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = matrix.indptr, matrix.indices, matrix.data
    lp.integrality_ = [highspy.HighsVarType.kInteger] * n_vars
    _swallow_banner()
    highs = highspy.Highs()  # type: ignore[no-untyped-call]
    for option, value in {
        "output_flag": False,
        "threads": 1,
        "random_seed": 0,
        "time_limit": max(time_limit_s, 1e-3),
        "mip_rel_gap": 0.0,
        "mip_max_improving_sols": 1 if stop == "first_feasible" else _NO_LIMIT,
    }.items():
        highs.setOptionValue(option, value)
    highs.passModel(lp)
    return highs


def _swallow_banner() -> None:
    """Make the process's first HiGHS with standard output closed: it prints its banner there, once per process."""
    with _BANNER_LOCK:
        _closed_stdout_highs()


_BANNER_LOCK = threading.Lock()


@functools.cache
def _closed_stdout_highs() -> None:
    """One HiGHS made while file descriptor 1 points to the null device (see :func:`_swallow_banner`)."""
    sys.stdout.flush()
    saved, devnull = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    try:
        highspy.Highs()  # type: ignore[no-untyped-call]
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


#: HiGHS's default for ``mip_max_improving_sols`` (no limit).
_NO_LIMIT = 2_147_483_647


def controlled_round(
    counts: IntArray,
    hier: Sequence[DimHierarchy],
    base: int,
    steps: int = 1,
    stop: str = "optimal",
    time_limit_s: float = 60.0,
    fixed: IntArray | None = None,
    least: int = 1,
) -> Solution:
    """Controlled rounding of a table (every cell, totals included, in ``hier``'s code order).

    Hundepool et al. (2024), Handbook on SDC v2, 5.5.1: the published table is additive, each cell
    a multiple of ``base`` less than ``k`` bases from its count for the least ``k <= steps`` that
    admits such a table (zero-restricted first), with the least sum of absolute deviations over all
    cells that HiGHS proves (``optimal``) or finds before stopping. Cells of ``fixed`` that are not
    -1 keep that published value (see :func:`build_program`). ``least`` skips fewer steps, known
    to admit no rounding.

    >>> from cubeguard.cubes.tree import DimHierarchy
    >>> flat = DimHierarchy("D", ("T", "a", "b"), np.array([-1, 0, 0]), np.array([0, 1, 1]))
    >>> controlled_round(np.array([7, 4, 3]), [flat], 3).published.tolist()
    [6, 3, 3]

    Raises:
        InternalError: invalid counts or parameters, or HiGHS failing in a way a table cannot cause.
    """
    started, solving = time.perf_counter(), 0.0
    for k in range(least, steps + 1):
        solution = _round_within(counts, hier, base, k, stop, time_limit_s - (time.perf_counter() - started), fixed)
        solving += solution.solve_seconds
        if solution.status != "infeasible":
            break
    return replace(solution, build_seconds=time.perf_counter() - started - solving, solve_seconds=solving)


def _round_within(
    counts: IntArray,
    hier: Sequence[DimHierarchy],
    base: int,
    steps: int,
    stop: str,
    time_limit_s: float,
    fixed: IntArray | None,
) -> Solution:
    """One solve allowing exactly ``steps`` (see :func:`controlled_round`)."""
    started = time.perf_counter()
    program = build_program(counts, hier, base, steps, fixed)
    built = time.perf_counter()
    t, status, bound = solve(program, stop, max(time_limit_s, 0.0))
    solved = time.perf_counter()
    published = objective = gap = None
    if t is not None:
        published = (program.floor + base * t).reshape(counts.shape)
        free = slice(None) if fixed is None else fixed < 0
        if np.any(program.rows @ published.ravel()) or np.any(np.abs(published - counts)[free] >= steps * base):
            raise InternalError("HiGHS returned a controlled rounding that breaks its constraints; this is a bug")
        objective = int(np.abs(published - counts).sum())
    if bound is not None:
        bound = float(math.ceil(bound + program.offset - 1e-6)) if math.isfinite(bound) else None
    if objective is not None and bound is not None:
        bound = min(bound, float(objective))
        gap = (objective - bound) / objective if objective else 0.0
    return Solution(
        published,
        status,
        objective,
        bound,
        gap,
        counts.size,
        program.rows.shape[0],
        program.cost.size,
        built - started,
        solved - built,
        steps if published is not None else None,
    )

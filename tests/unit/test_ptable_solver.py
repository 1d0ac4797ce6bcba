"""The per-count problem of ptable, solved with NLopt's SLSQP (cubeguard.ckm.ptable_solver)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from cubeguard.ckm.ptable import PTableInfeasibleError, PTableParams, create_cnt_ptable
from cubeguard.ckm.ptable_solver import EPSILON, _Problem, solve_count, support


def test_support_blocks_one_to_js() -> None:
    assert support(1, 5, 2).tolist() == [0, 3, 4, 5, 6]
    assert support(9, 3, 0).tolist() == list(range(6, 13))


def test_solution_meets_ptables_constraints() -> None:
    params = PTableParams(D=5, V=3, js=2)
    solution = solve_count(4, params)
    v = solution.j - 4
    assert solution.ok
    assert math.fsum(solution.p) == pytest.approx(1.0, abs=1e-10)
    assert math.fsum(solution.p * v) == pytest.approx(0.0, abs=1e-8)
    assert math.fsum(solution.p * v * v) == pytest.approx(3.0, abs=1e-6)
    assert np.all(solution.p >= EPSILON)
    negative = solution.p[v <= 0]
    assert np.all(np.diff(negative) >= -1e-8)  # mono: rising towards noise 0


def test_failure_status_still_returns_nlopts_point() -> None:
    # D=5, V=2, js=2, count 1: no distribution exists; NLopt stops with a failure status, which the
    # Python binding raises - the solver must hand back NLopt's point instead, as nloptr does.
    v = (support(1, 5, 2) - 1).astype(np.float64)
    problem = _Problem(v, PTableParams(D=5, V=2, js=2))
    x = problem.solve(np.full(v.size, EPSILON))
    assert problem.status in {"RoundoffLimited", "runtime_error"}
    assert x.shape == v.shape and np.all(np.isfinite(x))
    assert problem.violation(x) > 1e-8


def test_success_reports_nlopts_result_code() -> None:
    v = (support(4, 8, 2) - 4).astype(np.float64)
    problem = _Problem(v, PTableParams(D=8, V=3, js=2))
    problem.solve(np.full(v.size, EPSILON))
    assert problem.status == "4"  # NLOPT_XTOL_REACHED, ptable's stopping rule


def test_feasible_problem_is_not_flagged() -> None:
    v = (support(4, 8, 2) - 4).astype(np.float64)
    assert not _Problem(v, PTableParams(D=8, V=3, js=2)).surely_infeasible(np.full(v.size, EPSILON))


def test_infeasible_parameters_fail_fast() -> None:
    # every js >= 1 with V <= 1 is infeasible (golden README 3.1); the linear check answers at once
    start = time.perf_counter()
    with pytest.raises(PTableInfeasibleError, match="original count 1 "):
        create_cnt_ptable(PTableParams(D=8, V=0.5, js=2))
    assert time.perf_counter() - start < 5.0


def test_solution_repr_hides_the_distribution() -> None:
    solution = solve_count(2, PTableParams(D=5, V=3, js=2))
    assert repr(solution) == "CountSolution(size=6, ok=True)"

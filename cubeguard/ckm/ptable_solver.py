"""The per-count maximum-entropy problem of ``ptable::create_cnt_ptable``, solved with NLopt's SLSQP.

For an original count ``i`` with allowed noise ``v`` (``R/pt_create_pTable.R``), ptable 1.0.0
(``R/pt_optim_entropy.R``) minimises ``sum(x * log2(x))`` (Giessing 2016, PSD, LNCS 9867) with
nloptr's ``NLOPT_LD_SLSQP`` from ``x0 = 1``, ``xtol_rel = 1e-7``, ``maxeval = 100000``, bounds
``lb <= x <= 1`` and nloptr's default constraint tolerances 1e-8:

* equalities: ``sum(x) - 1``, ``sum(v x)`` (``optim = 4``: also ``sum(v^2 x) - V``);
* inequalities ``<= 0``: ``x - 1``, ``sum(v^2 x) - V`` (``optim = 1``), and with ``mono`` the
  rows ``x[k] - x[k + 1]`` left of noise 0.

This module sets up the same problem for NLopt's own SLSQP (the ``nlopt`` Python binding) and
evaluates it as R does: the sums of R's ``sum()`` are sequential long-double sums, the logarithm is
C's ``log2``, and the gradient is ptable's ``log2(x) + 1`` (off by the constant ``1 - 1/ln 2``,
which the sum-to-one constraint absorbs; kept so that SLSQP takes ptable's path). With that,
NLopt 2.7.1, 2.9.1 and 2.10.0 reproduce all 51 golden p-tables bit for bit; with correctly
rounded sums (``math.fsum``) only 40 of them.
"""

from __future__ import annotations

import ctypes
import functools
import math
import sys
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from scipy.optimize import linprog

if TYPE_CHECKING:
    from cubeguard.ckm.ptable import PTableParams

EPSILON = 1e-8  # ptable: lower bound of every probability (1 / 10^ndigits, ndigits = 8)
_XTOL_REL = 1e-7  # ptable calls nloptr with xtol_rel = 1 / 10^7
_MAXEVAL = 100_000
_CONSTRAINT_TOL = 1e-8  # nloptr's default tol_constraints_eq / tol_constraints_ineq
_MAX_SOLVES = 20  # ptable's outer loop solves at most 20 times per count
_PSTAY_STEP = 0.05  # ... lowering the bound of p_stay by 0.05 each time

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, repr=False)
class CountSolution:
    """The noise distribution of one original count.

    Attributes:
        j: the allowed perturbed counts, ascending.
        p: their probabilities (NLopt's point, not yet rounded to the 8-digit intervals).
        ok: False where ptable stops (the probabilities do not sum to 1 at 10 digits) or the
            returned point breaks a constraint by more than 1e-8 (cubeguard is stricter here).
    """

    j: IntArray
    p: FloatArray
    ok: bool

    def __repr__(self) -> str:
        """Size and outcome only: ``j`` reveals D and ``p`` the variance, which must not be logged."""
        return f"CountSolution(size={self.j.size}, ok={self.ok})"


def support(count: int, D: int, js: int) -> IntArray:
    """Allowed perturbed counts ``j = max(i - D, 0) .. i + D`` without the blocked ``1..js``."""
    j = np.arange(max(count - D, 0), count + D + 1, dtype=np.int64)
    allowed: IntArray = j[(j == 0) | (j > js)]
    return allowed


def solve_count(count: int, params: PTableParams) -> CountSolution:
    """Solve the distribution of one original count with ptable's outer loop (:func:`solve_noise`)."""
    j = support(count, params.D, params.js)
    x, ok = solve_noise((j - count).astype(np.float64), params, blocked=1 <= count <= params.js)
    return CountSolution(j, x, ok)


def solve_noise(v: FloatArray, params: PTableParams, blocked: bool = False) -> tuple[FloatArray, bool]:
    """Solve ptable's maximum-entropy problem for the noise values ``v``; return ``(p, ok)``.

    This is the body of ptable's loop over ``i`` for counts and magnitudes alike (the magnitudes'
    ``v`` lie on a grid of step ``1/step``). ptable solves once with ``p_stay >= pstay`` and, while
    ``round(sum(v^2 p), 3) != V``, lowers that bound by 0.05 and solves again (at most 20 solves;
    ``blocked`` counts ``1..js`` solve once). Without ``pstay`` the bound is already 1e-8, so the
    repeats give the same point and are skipped. ``ok`` is False where ptable stops (the
    probabilities do not sum to 1 at 10 digits) or NLopt's point breaks a constraint by more than
    1e-8; the point is all NaN where the constraints surely have no solution.
    """
    problem = _Problem(v, params)
    stay = v == 0
    lower = np.full(v.size, EPSILON)
    if params.pstay is not None:
        lower[stay] = max(params.pstay, EPSILON)
    for solve in range(_MAX_SOLVES):
        if solve > 0:
            lowered = np.maximum(lower[stay] - _PSTAY_STEP, EPSILON)
            if np.array_equal(lowered, lower[stay]):
                break  # the same problem again: NLopt returns the same point
            lower[stay] = lowered
        final = blocked or not np.any(lower[stay] > EPSILON)
        if final and problem.surely_infeasible(lower):
            return np.full(v.size, np.nan), False
        x = problem.solve(lower)
        if round(math.fsum(x), 10) != 1.0:  # ptable's check: stop with an error
            return x, False
        if blocked or round(math.fsum(v * v * x), 3) == params.V:
            break
    return x, problem.violation(x) <= _CONSTRAINT_TOL


@functools.cache
def _nlopt() -> Any:
    """The ``nlopt`` binding, imported once with its SWIG deprecation warnings silenced.

    Its SWIG types have no ``__module__``, so importing it emits DeprecationWarnings; turned
    into errors (pytest's ``filterwarnings = error``) they leave the binding half initialised
    and the next ``nlopt.opt`` crashes the interpreter (nlopt 2.9.1, Python 3.11).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import nlopt
    _keep_swig_runtime()
    return nlopt


def _keep_swig_runtime() -> None:
    """Keep the SWIG runtime capsule alive until the process ends, so it is never freed at exit.

    Freeing it runs ``SWIG_Python_DestroyModule``, which in the nlopt 2.9.1 wheel builds a new
    ``swigvarlink`` object while the interpreter is being torn down and dereferences a NULL type:
    the process then dies with SIGSEGV after everything has finished (seen as exit status 139 of
    a test session; gdb: ``_PyObject_New(tp=0x0)`` under ``SWIG_Python_DestroyModule``). One
    extra reference on the capsule (a single small object, never released) skips that cleanup;
    the operating system reclaims the memory as for any process exit.
    """
    runtime = next((m for name, m in sys.modules.items() if name.startswith("swig_runtime_data")), None)
    capsule = getattr(runtime, "type_pointer_capsule", None)
    if capsule is not None:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(capsule))


def _r_sum(rows: FloatArray) -> FloatArray:
    """Row sums as R's ``sum()`` computes them: sequentially, in a long-double accumulator.

    ``np.add.accumulate`` is strictly sequential (``np.sum`` is pairwise). On x86-64 Linux,
    where the goldens were made, ``np.longdouble`` is the 80-bit type of R's ``LDOUBLE``.
    """
    return np.add.accumulate(rows, axis=-1, dtype=np.longdouble)[..., -1].astype(np.float64)


class _Problem:
    """ptable's constraints as ``A x - b`` (equalities first), evaluated as R evaluates them."""

    def __init__(self, v: FloatArray, params: PTableParams) -> None:
        n, v2 = v.size, v * v
        eq = [np.ones(n), v] + ([v2] if params.optim == 4 else [])
        eq_rhs = [1.0, 0.0] + ([params.V] if params.optim == 4 else [])
        ineq = list(np.eye(n)) + ([v2] if params.optim == 1 else [])
        ineq_rhs = [1.0] * n + ([params.V] if params.optim == 1 else [])
        zero = int(np.flatnonzero(v == 0)[0]) if params.mono and np.any(v == 0) else 0
        for k in range(zero):  # x[k] <= x[k + 1] left of noise 0
            row = np.zeros(n)
            row[k], row[k + 1] = 1.0, -1.0
            ineq.append(row)
            ineq_rhs.append(0.0)
        self.n, self.n_eq = n, len(eq)
        self.a = np.array(eq + ineq)
        self.b = np.array(eq_rhs + ineq_rhs)
        # rows computed with R's sum(): sum, mean[, variance] and (optim 1) the variance bound;
        # the rows x - 1 and x[k] - x[k + 1] are single double operations in R as in a @ x
        self._dense = np.r_[np.arange(self.n_eq), [self.n_eq + n] if params.optim == 1 else []].astype(np.int64)
        self._a_dense, self._b_dense = self.a[self._dense], self.b[self._dense]
        self._terms = np.zeros((self._dense.size + 1, n))  # + the terms of the objective
        self._key = b""
        self._values = np.zeros(self.b.size)
        self._violation = math.inf
        self.status = ""  # NLopt's result code of the last solve, or the exception it raised

    def evaluate(self, x: FloatArray, log2: FloatArray | None = None) -> float:
        """Evaluate the constraints at ``x`` (cached) and, given ``log2(x)``, the objective.

        All R sums of a point, ``sum(x * log2(x))`` included, go through one long-double
        accumulation: NLopt calls the objective, then the constraints, three times per point.
        """
        key = x.tobytes()
        if key == self._key and log2 is None:
            return math.nan
        dense = self._dense.size
        terms = self._terms if log2 is not None else self._terms[:dense]
        np.multiply(self._a_dense, x, out=terms[:dense])
        if log2 is not None:
            np.multiply(x, log2, out=terms[dense])
        sums = _r_sum(terms)
        values = self.a @ x - self.b
        values[self._dense] = sums[:dense] - self._b_dense
        listed = values.tolist()
        self._violation = max(0.0, max(map(abs, listed[: self.n_eq])), max(listed[self.n_eq :]))
        self._key, self._values = key, values
        return float(sums[dense]) if log2 is not None else math.nan

    def values(self, x: FloatArray) -> FloatArray:
        """Constraint values ``A x - b``."""
        self.evaluate(x)
        return self._values

    def violation(self, x: FloatArray) -> float:
        """NLopt's infeasibility: the largest ``|equality|`` or positive inequality."""
        self.evaluate(x)
        return self._violation

    def surely_infeasible(self, lower: FloatArray) -> bool:
        """Whether no point meets the constraints even within NLopt's tolerance of 1e-8.

        Then NLopt can only return an infeasible point, which :func:`solve_count` rejects; the
        linear program says so in milliseconds where SLSQP would take up to 100,000 evaluations.
        """
        eq_a, eq_b = self.a[: self.n_eq], self.b[: self.n_eq]
        a_ub = np.vstack([self.a[self.n_eq :], eq_a, -eq_a])
        b_ub = np.concatenate([self.b[self.n_eq :], eq_b, -eq_b]) + _CONSTRAINT_TOL
        bounds = list(zip(lower.tolist(), [1.0] * self.n, strict=True))
        result = linprog(np.zeros(self.n), A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
        return bool(result.status == 2)  # 2: infeasible

    def solve(self, lower: FloatArray) -> FloatArray:
        """Run NLopt's SLSQP as nloptr does for ptable and return NLopt's point."""
        nlopt = _nlopt()
        run = _Run(self)
        opt = nlopt.opt(nlopt.LD_SLSQP, self.n)
        opt.set_lower_bounds(lower)
        opt.set_upper_bounds(np.ones(self.n))
        opt.set_min_objective(run.objective)
        opt.add_inequality_mconstraint(run.inequalities, [_CONSTRAINT_TOL] * (self.b.size - self.n_eq))
        opt.add_equality_mconstraint(run.equalities, [_CONSTRAINT_TOL] * self.n_eq)
        opt.set_xtol_rel(_XTOL_REL)
        opt.set_maxeval(_MAXEVAL)
        try:
            x: FloatArray = opt.optimize(np.ones(self.n))
        except (nlopt.RoundoffLimited, nlopt.exception) as failure:
            # nloptr returns NLopt's point on any status; the binding raises and drops it
            self.status = type(failure).__name__
            return run.best if run.best is not None else run.last
        self.status = str(opt.last_optimize_result())
        return x


class _Run:
    """NLopt callbacks for one solve; they also keep the point NLopt would return on failure.

    NLopt's SLSQP (``src/algs/slsqp/slsqp.c``) keeps, after every evaluation, the point with the
    lowest objective among those feasible within the tolerances, or the least infeasible one
    while none is feasible. The Python binding raises on a failure status and drops that point,
    which nloptr would hand to ptable, so it is tracked here with the same rule.
    """

    def __init__(self, problem: _Problem) -> None:
        self.problem = problem
        self.best: FloatArray | None = None
        self.last = np.ones(problem.n)
        self._best_f = math.inf
        self._feasible = False
        self._infeasibility = math.inf

    def objective(self, x: FloatArray, grad: FloatArray) -> float:
        """Return ptable's ``sum(x * log2(x))``; fill ``log2(x) + 1`` into ``grad`` if asked."""
        self.last = x.copy()
        values = x.tolist()
        if min(values) <= 0.0:  # R: log2(0) = -Inf, 0 * -Inf = NaN (SLSQP keeps x >= lb > 0)
            grad[:] = -math.inf
            return math.nan
        log2 = np.array([math.log2(t) for t in values])  # C's log2, as R's log2()
        if grad.size:
            np.add(log2, 1.0, out=grad)
        f = self.problem.evaluate(x, log2)
        infeasibility = self.problem.violation(x)
        feasible = infeasibility <= _CONSTRAINT_TOL
        better = f < self._best_f and (feasible or not self._feasible)
        if math.isfinite(f) and (better or (not self._feasible and infeasibility < self._infeasibility)):
            self.best, self._best_f = x.copy(), f
            self._feasible, self._infeasibility = feasible, infeasibility
        return f

    def equalities(self, result: FloatArray, x: FloatArray, grad: FloatArray) -> None:
        """Equalities, as ptable's ``eval_g_eq``: values and (constant) Jacobian."""
        result[:] = self.problem.values(x)[: self.problem.n_eq]
        if grad.size:
            grad[:] = self.problem.a[: self.problem.n_eq]

    def inequalities(self, result: FloatArray, x: FloatArray, grad: FloatArray) -> None:
        """Inequalities, as ptable's ``eval_g_ineq``: values and (constant) Jacobian."""
        result[:] = self.problem.values(x)[self.problem.n_eq :]
        if grad.size:
            grad[:] = self.problem.a[self.problem.n_eq :]

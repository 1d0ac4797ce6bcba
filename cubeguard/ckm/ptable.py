"""Perturbation tables (p-tables) for the cell key method on frequency counts.

A p-table stores, for every original count ``i``, a noise distribution as intervals of ``[0, 1)``:
row ``(i, j, p, v, p_int_lb, p_int_ub)`` says that a cell with count ``i`` is published as ``j``
(noise ``v = j - i``) with probability ``p``, chosen when its cell key falls into
``[p_int_lb, p_int_ub)`` (Handbook on SDC v2, 5.4; seed 001, steps 3-4).

:func:`create_cnt_ptable` reimplements ``ptable::create_cnt_ptable`` (R package ptable 1.0.0,
``R/pt_create_pTable.R`` and ``R/pt_optim_entropy.R``): one maximum-entropy problem per ``i``
(Giessing 2016, PSD, LNCS 9867), solved with SLSQP. :func:`modify_cnt_ptable` is ptable's
"modified" p-table and :func:`read_ptable` reads ptable's CSV and the tau-ARGUS export.
"""

from __future__ import annotations

import contextlib
import csv
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, model_validator
from scipy.optimize import minimize

from cubeguard.errors import CubeguardError

if TYPE_CHECKING:
    import pandas as pd

_EPSILON = 1e-8  # ptable: lower bound of every probability (1 / 10^ndigits, ndigits = 8)
_DIGITS = 8  # ptable rounds the interval bounds to 8 decimals
_XTOL_REL = 1e-7  # ptable calls nloptr with xtol_rel = 1e-7 (ndigits = 7)
_CONSTRAINT_TOL = 1e-8  # nloptr's default tol_constraints_eq / tol_constraints_ineq
_MAX_OUTER = 20  # ptable's outer loop lowers the bound of p_stay at most 20 times
_PSTAY_STEP = 0.05
_COLUMNS = ("i", "j", "p", "v", "p_int_lb", "p_int_ub", "type")

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


class PTableInfeasibleError(CubeguardError):
    """No p-table satisfies the constraints for the given parameters (ptable stops likewise)."""

    def __init__(self, count: int) -> None:
        """Name the original count whose distribution failed.

        D and V are secret (seed 001), so the message names only that count.
        """
        super().__init__(
            f"No noise distribution for original count {count} meets the p-table constraints "
            "(zero mean, variance V, no perturbed values 1..js) with these parameters: change V "
            "(usually enough), D or js, or try mono=False or optim=4."
        )
        self.count = count


class PTableFormatError(CubeguardError):
    """A p-table file or array set does not have the structure of a count p-table."""


class PTableParams(BaseModel):
    """Parameters of ``ptable::create_cnt_ptable`` (ptable 1.0.0, ``pt_create_pParams``).

    ``D``, ``V`` and ``pstay`` are kept out of ``repr`` because they must not be published or
    logged (seed 001: "the central parameters ... are generally not published").

    Attributes:
        D: maximum absolute noise; ``D = 0`` gives the identity p-table (a cubeguard extension).
        V: noise variance (an upper bound with ``optim = 1``, exact with ``optim = 4``).
        js: perturbed counts ``1..js`` never occur (blocking of small counts).
        pstay: lower bound of the probability that a count stays unchanged, or None; ptable
            lowers it in steps of 0.05 where the variance would otherwise stay below V.
        optim: 1 = variance as inequality (ptable's default), 4 = variance as equality.
        mono: probabilities increase towards noise 0 on the negative side.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    D: Annotated[int, Field(ge=0, strict=True, repr=False)]
    V: Annotated[float, Field(gt=0.0, allow_inf_nan=False, repr=False)]
    js: Annotated[int, Field(ge=0, strict=True)] = 0
    pstay: Annotated[float | None, Field(gt=0.0, lt=1.0, repr=False)] = None
    optim: Literal[1, 4] = 1
    mono: bool = True

    @model_validator(mode="after")
    def _check_identity(self) -> PTableParams:
        if self.D == 0 and self.js > 0:
            raise ValueError("js > 0 needs noise to move small counts: set D >= 1 or js = 0")
        return self

    @property
    def ncat(self) -> int:
        """Largest original count with its own distribution (ptable's ``ncat``)."""
        if self.D == 0:
            return 1
        return self.D if self.js == 0 else self.D + self.js + 1


def _frozen(values: npt.ArrayLike, dtype: type) -> npt.NDArray[Any]:
    array: npt.NDArray[Any] = np.array(values, dtype=dtype)
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False, repr=False)
class PTable:
    """A count p-table as read-only numpy arrays, one entry per row.

    Rows are sorted by ``i``, then in file order (ascending ``j`` for ptable's tables). The last
    ``i`` is used for every count ``>= i`` (ptable: "i>=ncat (symmetry)").
    """

    i: IntArray
    j: IntArray
    p: FloatArray
    v: IntArray
    p_int_lb: FloatArray
    p_int_ub: FloatArray
    type: npt.NDArray[np.str_]
    intervals: Literal["default", "modified"] = "default"
    params: PTableParams | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        """Freeze copies of the columns and check the structure of a count p-table."""
        for name in ("i", "j", "v"):
            object.__setattr__(self, name, _frozen(getattr(self, name), np.int64))
        for name in ("p", "p_int_lb", "p_int_ub"):
            object.__setattr__(self, name, _frozen(getattr(self, name), np.float64))
        object.__setattr__(self, "type", _frozen(self.type, np.str_))
        problems = _structure_problems(self)
        if problems:
            raise PTableFormatError("; ".join(problems[:5]) + ".")

    def __repr__(self) -> str:
        """Size only: the distributions reveal D and V, which must not be logged."""
        return f"PTable(rows={self.i.size}, max_i={self.max_i}, intervals={self.intervals!r})"

    @property
    def max_i(self) -> int:
        """The largest original count with its own row block; larger counts use it too."""
        return int(self.i[-1])

    @property
    def max_noise(self) -> int:
        """The largest absolute noise ``max |v|`` (``D`` for tables made by ptable)."""
        return int(np.abs(self.v).max())

    def block(self, count: int) -> slice:
        """Rows used for original count ``count`` (``count >= max_i`` uses the last block)."""
        row = min(count, self.max_i)
        lo, hi = np.searchsorted(self.i, [row, row + 1])
        return slice(int(lo), int(hi))

    def row_moments(self) -> tuple[IntArray, FloatArray, FloatArray]:
        """Per ``i``: mean and (central) variance of the noise, as ``(i, mean, variance)``."""
        counts = np.arange(self.max_i + 1, dtype=np.int64)
        mean = np.bincount(self.i, weights=self.p * self.v).astype(np.float64)
        second = np.bincount(self.i, weights=self.p * self.v.astype(np.float64) ** 2)
        return counts, mean, second.astype(np.float64) - mean**2

    def to_frame(self) -> pd.DataFrame:
        """The table with ptable's columns ``i, j, p, v, p_int_lb, p_int_ub, type``."""
        import pandas as pd

        return pd.DataFrame({name: np.asarray(getattr(self, name)) for name in _COLUMNS})


def _structure_problems(t: PTable) -> list[str]:
    n = t.i.size
    sizes = {t.j.size, t.p.size, t.v.size, t.p_int_lb.size, t.p_int_ub.size, t.type.size}
    if n == 0 or sizes != {n} or t.i.ndim != 1:
        return ["a p-table needs equally long, non-empty 1-D columns i, j, p, v, bounds, type"]
    problems: list[str] = []
    if np.any(np.diff(t.i) < 0) or t.i[0] != 0 or np.any(np.diff(np.unique(t.i)) != 1):
        problems.append("column i must run 0, 1, ..., max i in ascending order without gaps")
    if np.any(t.j - t.i != t.v) or np.any(t.j < 0):
        problems.append("every row needs v = j - i and j >= 0")
    if np.any(t.v[t.i == 0] != 0):
        problems.append("original count 0 must have noise 0 only")
    if np.any(t.p < 0) or np.any(t.p > 1):
        problems.append("probabilities p must lie in [0, 1]")
    first = np.r_[True, t.i[1:] != t.i[:-1]]
    last = np.r_[t.i[1:] != t.i[:-1], True]
    if np.any(t.p_int_lb[first] != 0.0) or np.any(t.p_int_ub[last] != 1.0):
        problems.append("the intervals of every i must start at 0 and end at exactly 1")
    if np.any(t.p_int_ub < t.p_int_lb) or np.any(np.diff(t.p_int_ub)[~last[:-1]] < 0):
        problems.append("the upper bounds p_int_ub must not decrease within an i")
    gap = np.abs(t.p_int_lb[1:] - t.p_int_ub[:-1])[~last[:-1]]
    if np.any(gap > _EPSILON):
        problems.append("each p_int_lb must equal the previous p_int_ub of the same i")
    return problems


# --- construction: ptable's maximum-entropy problem ------------------------------------------


def create_cnt_ptable(params: PTableParams) -> PTable:
    """Build a count p-table exactly as ``ptable::create_cnt_ptable`` does (ptable 1.0.0).

    Row ``i = 0`` is ``j = 0, p = 1``; every ``i = 1..ncat`` gets the maximum-entropy distribution
    of :func:`_solve_count`; bounds are ``round(cumsum(p), 8)`` and ``p = ub - lb``.

    Raises:
        PTableInfeasibleError: the constraints cannot be met for some original count.
    """
    if params.D == 0:
        return identity_ptable(params)
    blocks = [(np.array([0]), np.array([1.0]))]
    blocks += [_solve_count(count, params) for count in range(1, params.ncat + 1)]
    return _assemble(blocks, params, "default")


def identity_ptable(params: PTableParams | None = None) -> PTable:
    """The noise-free p-table: every count keeps its value (the exact, noise-free path)."""
    i, zero, one = np.array([0, 1]), np.zeros(2), np.ones(2)
    kinds = np.array(["all", "all"])
    return PTable(i, i, one, np.zeros(2, np.int64), zero, one, kinds, params=params)


def _support(count: int, D: int, js: int) -> IntArray:
    """Allowed perturbed values ``j = max(i - D, 0) .. i + D`` without the blocked ``1..js``."""
    j = np.arange(max(count - D, 0), count + D + 1, dtype=np.int64)
    allowed: IntArray = j[(j == 0) | (j > js)]
    return allowed


def _solve_count(count: int, params: PTableParams) -> tuple[IntArray, FloatArray]:
    """Solve the distribution of one original count with ptable's outer loop.

    ptable re-solves, lowering the bound of ``p_stay`` by 0.05, while the variance rounded to
    3 digits differs from V (at most 20 solves; no effect without ``pstay``).
    """
    j = _support(count, params.D, params.js)
    v = (j - count).astype(np.float64)
    lower = np.full(v.size, _EPSILON)
    stay = v == 0
    if params.pstay is not None:
        lower[stay] = max(params.pstay, _EPSILON)
    x, feasible = _solve_entropy(v, params, lower, count)
    for _ in range(_MAX_OUTER - 1):
        if round(math.fsum(v * v * x), 3) == params.V or 1 <= count <= params.js:
            break
        lowered = np.maximum(lower[stay] - _PSTAY_STEP, _EPSILON)
        if np.array_equal(lowered, lower[stay]):
            break  # the same problem again: ptable gets the same solution
        lower[stay] = lowered
        x, feasible = _solve_entropy(v, params, lower, count)
    if not feasible:  # stricter than ptable, which checks only the sum
        raise PTableInfeasibleError(count)
    return j, x


def _constraints(v: FloatArray, params: PTableParams) -> tuple[FloatArray, FloatArray, int]:
    """Linear constraints ``A x - b`` of ``R/pt_optim_entropy.R``, in ptable's order.

    Equalities (sum 1, mean 0[, variance V]) come first, then the ``<= 0`` rows (x <= 1[,
    variance <= V], monotony). Returns ``A``, ``b`` and the number of equalities.
    """
    n = v.size
    rows = [np.ones(n), v] + ([v * v] if params.optim == 4 else [])
    rhs = [1.0, 0.0] + ([params.V] if params.optim == 4 else [])
    n_eq = len(rows)
    rows += list(np.eye(n))
    rhs += [1.0] * n
    if params.optim == 1:
        rows.append(v * v)
        rhs.append(params.V)
    zero = int(np.flatnonzero(v == 0)[0]) if params.mono and np.any(v == 0) else 0
    for k in range(zero):  # x[k] <= x[k + 1] left of noise 0
        row = np.zeros(n)
        row[k], row[k + 1] = 1.0, -1.0
        rows.append(row)
        rhs.append(0.0)
    return np.array(rows), np.array(rhs), n_eq


def _row_values(a: FloatArray, b: FloatArray, x: FloatArray) -> FloatArray:
    """Compute ``a @ x - b``, summing dense rows exactly rounded.

    Rows with more than two entries (sum, mean, variance) use ``math.fsum``: the result does not
    depend on the CPU and equals R's long-double ``sum()`` for these short vectors.
    """
    values = a @ x - b
    for row in np.flatnonzero(np.count_nonzero(a, axis=1) > 2):
        values[row] = math.fsum(a[row] * x) - b[row]
    return values


class _ConvergedError(Exception):
    """Raised from the gradient to stop SLSQP where NLopt would stop (not an error)."""


@dataclass
class _NloptLikeRun:
    """Bookkeeping that makes scipy's SLSQP return what NLopt's SLSQP (via nloptr) returns.

    NLopt 2.7.1 (``src/algs/slsqp/slsqp.c``) runs Kraft's SLSQP with its own accuracy test off,
    keeps the best point seen (lowest objective among points feasible within 1e-8, else the least
    infeasible one) and stops when an accepted step moves ``x`` by less than ``xtol_rel`` in L1.
    """

    a: FloatArray
    b: FloatArray
    n_eq: int
    best: FloatArray | None = None
    best_f: float = math.inf
    feasible: bool = False
    infeasibility: float = math.inf
    accepted: list[FloatArray] = field(default_factory=list)
    _last: tuple[bytes, FloatArray] = (b"", np.zeros(0))

    def values(self, x: FloatArray) -> FloatArray:
        """Constraint values ``A x - b`` (cached for the last ``x``: SLSQP asks three times)."""
        key = x.tobytes()
        if key != self._last[0]:
            self._last = (key, _row_values(self.a, self.b, x))
        return self._last[1]

    def objective(self, x: FloatArray) -> float:
        """Return ptable's objective ``sum(x * log2(x))`` and track NLopt's best point."""
        f = math.fsum(x * np.array([math.log2(t) for t in x]))
        c = self.values(x)
        eq, ineq = np.abs(c[: self.n_eq]), c[self.n_eq :]
        feasible = bool(np.all(eq <= _CONSTRAINT_TOL) and np.all(ineq <= _CONSTRAINT_TOL))
        infeasibility = max(0.0, float(eq.max()), float(ineq.max(initial=0.0)))
        better = f < self.best_f and (feasible or not self.feasible)
        if better or (not self.feasible and infeasibility < self.infeasibility):
            self.best, self.best_f = x.copy(), f
            self.feasible, self.infeasibility = feasible, infeasibility
        return f

    def gradient(self, x: FloatArray) -> FloatArray:
        """Return ptable's gradient ``log2(x) + 1`` and stop as NLopt's ``xtol_rel`` test does.

        SLSQP asks for the gradient once per accepted point, where NLopt tests convergence.
        """
        self.accepted.append(x.copy())
        if len(self.accepted) >= 3:  # the first call is the start point, NLopt skips it
            step = math.fsum(np.abs(x - self.accepted[-2]))
            if step < _XTOL_REL * math.fsum(np.abs(x)):
                raise _ConvergedError
        # ptable's gradient is off by the constant 1 - 1/ln 2, which the sum-to-one constraint
        # absorbs; it is kept so that SLSQP takes ptable's path.
        return np.array([math.log2(t) + 1.0 for t in x])


def _solve_entropy(
    v: FloatArray, params: PTableParams, lower: FloatArray, count: int
) -> tuple[FloatArray, bool]:
    """Minimise ``sum(x log2 x)`` under ptable's constraints from ``x0 = 1`` with SLSQP.

    Returns the point NLopt would return and whether it meets every constraint within 1e-8.

    Raises:
        PTableInfeasibleError: the point does not sum to 1 at 10 digits (ptable's check).
    """
    a, b, n_eq = _constraints(v, params)
    run = _NloptLikeRun(a, b, n_eq)
    cons = [
        {"type": "eq", "fun": lambda x: run.values(x)[:n_eq], "jac": lambda x: a[:n_eq]},
        {"type": "ineq", "fun": lambda x: -run.values(x)[n_eq:], "jac": lambda x: -a[n_eq:]},
    ]
    bounds = list(zip(lower, np.ones(v.size), strict=True))
    with contextlib.suppress(_ConvergedError):  # NLopt's xtol_rel test met
        minimize(
            run.objective,
            np.ones(v.size),
            jac=run.gradient,
            method="SLSQP",
            bounds=bounds,
            constraints=cons,
            options={"ftol": 0.0, "maxiter": 100_000},  # ftol 0: SLSQP's own test off, as NLopt
        )
    x = run.best if run.best is not None else np.ones(v.size)
    if round(math.fsum(x), 10) != 1.0:
        raise PTableInfeasibleError(count)
    return x, run.feasible


def _intervals(x: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Interval bounds as ptable writes them.

    ``ub = round(cumsum(p), 8)``, ``lb = round(cumsum(p) - p, 8)``, then ``p = ub - lb``.
    """
    cumulative = np.array([math.fsum(x[: k + 1]) for k in range(x.size)])
    ub = np.array([round(c, _DIGITS) for c in cumulative])
    lb = np.array([round(c, _DIGITS) for c in cumulative - x])
    return ub - lb, lb, ub


def _assemble(
    blocks: list[tuple[IntArray, FloatArray]],
    params: PTableParams | None,
    kind: Literal["default", "modified"],
) -> PTable:
    parts = [(np.full(j.size, count), j, *_intervals(x)) for count, (j, x) in enumerate(blocks)]
    i, j, p, lb, ub = (np.concatenate(col) for col in zip(*parts, strict=True))
    return PTable(i, j, p, j - i, lb, ub, np.full(i.size, "all"), kind, params)


# --- the "modified" p-table -----------------------------------------------------------------


def modify_cnt_ptable(
    ptable: PTable, threshold: float = 0.2, *, rng: np.random.Generator
) -> PTable:
    """Split and shuffle the intervals, as ``ptable::modify_cnt_ptable`` (ptable 1.0.0).

    Every probability ``p >= threshold`` (except ``p = 1``) is split into pieces of ``threshold``
    plus the rest; the pieces of each ``i`` are put in random order and the bounds recomputed
    (8 digits). The noise distribution is unchanged, but the noise no longer grows with the cell
    key, which ptable documents as higher protection. Differences to R: the order comes from
    ``rng`` (not R's ``set.seed``, so R's tables are not reproduced), and empty rest pieces
    (``p`` a multiple of ``threshold``) are dropped instead of kept as zero-width intervals.
    """
    if not 0.0 < threshold <= 1.0:
        raise CubeguardError("threshold of modify_cnt_ptable must be in (0, 1]; e.g. 0.2.")
    blocks = []
    for count in range(ptable.max_i + 1):
        rows = ptable.block(count)
        pieces = [
            _split(p, v, threshold) for p, v in zip(ptable.p[rows], ptable.v[rows], strict=True)
        ]
        p = np.concatenate([piece[0] for piece in pieces])
        v = np.concatenate([piece[1] for piece in pieces])
        order = rng.permutation(p.size)
        blocks.append((v[order] + count, p[order]))
    return _assemble(blocks, ptable.params, "modified")


def _split(p: float, v: int, threshold: float) -> tuple[FloatArray, IntArray]:
    if p < threshold or p == 1.0:
        return np.array([p]), np.array([v])
    times = math.floor(p / threshold)
    rest = p - math.fsum([threshold] * times)
    sizes = [threshold] * times + ([rest] if rest > 0 else [])
    return np.array(sizes), np.full(len(sizes), v)


def adjacent_equal_noise(ptable: PTable) -> int:
    """Count neighbouring intervals with the same noise.

    ptable warns about them after :func:`modify_cnt_ptable`; try another generator seed if the
    count is large.
    """
    same_i = ptable.i[1:] == ptable.i[:-1]
    return int(np.sum(same_i & (ptable.v[1:] == ptable.v[:-1])))


# --- reading ---------------------------------------------------------------------------------


def read_ptable(path: str | Path) -> PTable:
    """Read a count p-table from ptable's CSV or the tau-ARGUS export of ``ptable::pt_export``.

    ptable's CSV has ``i,j,p,v,p_int_lb,p_int_ub,type``, the tau-ARGUS export
    ``i;j;p;v;p_int_ub`` (blanks allowed); the delimiter is taken from the header. Without
    ``p_int_lb`` the lower bound is the previous upper bound of the same ``i``. ``p`` is set to
    ``p_int_ub - p_int_lb`` as ptable does; the file's ``p`` must agree within 1e-7.

    Raises:
        PTableFormatError: a column is missing, a value does not parse, or the rows do not form
            a count p-table (the message names the file and line).
    """
    path = Path(path)
    with path.open(newline="", encoding="utf-8-sig") as handle:
        header = handle.readline()
        delimiter = ";" if ";" in header else ","
        names = [name.strip() for name in header.split(delimiter)]
        missing = sorted({"i", "j", "p", "v", "p_int_ub"} - set(names))
        if missing:
            raise PTableFormatError(
                f"{path}: the header lacks the columns {missing}; expected "
                "i,j,p,v,p_int_lb,p_int_ub,type or i;j;p;v;p_int_ub."
            )
        records = [
            [cell.strip() for cell in row] for row in csv.reader(handle, delimiter=delimiter)
        ]
    return _table_from_records(path, names, [r for r in records if any(r)])


def _table_from_records(path: Path, names: list[str], records: list[list[str]]) -> PTable:
    columns: dict[str, list[str]] = {name: [] for name in names}
    for line, record in enumerate(records, start=2):
        if len(record) != len(names):
            raise PTableFormatError(
                f"{path}: line {line} has {len(record)} fields, the header "
                f"{len(names)}; fix the line or the delimiter."
            )
        for name, cell in zip(names, record, strict=True):
            columns[name].append(cell)
    try:
        ints = {name: np.array([int(c) for c in columns[name]]) for name in ("i", "j", "v")}
        floats: dict[str, FloatArray] = {
            n: np.array([float(c) for c in columns[n]])
            for n in ("p", "p_int_lb", "p_int_ub")
            if n in columns
        }
    except ValueError as error:
        raise PTableFormatError(
            f"{path}: {error}; i, j, v must be integers and p, bounds "
            "numbers with '.' as decimal mark."
        ) from None
    return _checked_table(path, ints, floats, columns.get("type"))


def _checked_table(
    path: Path, ints: dict[str, IntArray], floats: dict[str, FloatArray], kinds: list[str] | None
) -> PTable:
    ub = floats["p_int_ub"]
    first = np.r_[True, ints["i"][1:] != ints["i"][:-1]]
    lb = floats.get("p_int_lb", np.where(first, 0.0, np.r_[0.0, ub[:-1]]))
    if kinds is not None and set(kinds) != {"all"}:
        raise PTableFormatError(f"{path}: only count p-tables (type 'all') are supported.")
    bad = np.flatnonzero(np.abs(floats["p"] - (ub - lb)) > 1e-7)
    if bad.size:
        raise PTableFormatError(
            f"{path}: line {bad[0] + 2}: p differs from p_int_ub - p_int_lb; "
            "check the bounds of that row."
        )
    try:
        return PTable(ints["i"], ints["j"], ub - lb, ints["v"], lb, ub, np.full(ub.size, "all"))
    except PTableFormatError as error:
        raise PTableFormatError(f"{path}: {error}") from None

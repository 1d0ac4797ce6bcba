"""The SAFE heuristic (Höhne 2011, 2.1): a first feasible solution, then tightening the bounds.

Model 2 (2.1.1) starts from the original elementary table (every deviation 0) and moves the records
of unsafe cells (counts 1 and 2) until none is left, keeping every controlled cell's deviation
below ``w_i + b_i`` (strictly, equations 2 and 3); when a pass stagnates (removes less than 2 % of the unsafe cells left), both
bounds grow by one, as in the paper. Model 3 (2.1.2)
then tightens the bounds step by step, first the weights (Table 2: ``w_i`` lowered by one per
correction step down to 0), then ``b`` (the multi-dimensional bound, then the one-dimensional),
repairing the cells a tightening puts out of bounds with moves that keep every elementary cell
safe. A tightening that cannot be repaired is undone and ends that line of tightening; the time
limit ends the optimisation, never the first feasible solution.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from cubeguard.errors import CubeguardError, InternalError
from cubeguard.methods.safe import kernel
from cubeguard.methods.safe.controlled import Controlled, tabulate, weights
from cubeguard.methods.safe.elementary import lexicographic, packed

IntArray = npt.NDArray[np.int64]
#: Model 2 stagnates (both bounds grow by one) when a pass removes less than this share of the unsafe cells.
STALL_SHARE = 0.02
#: Passes of model 3 over the cells at one tightening before it counts as stalled.
MAX_REPAIR_PASSES = 30


@dataclass(frozen=True)
class Settings:
    """The heuristic's parameters.

    Attributes:
        start: the starting bounds (one-dimensional cells, other cells); the paper's 3 and 5.
        target: the bounds at which tightening stops (one-dimensional, other).
        correction_steps: how many weight-correction steps model 3 tries (Table 2; 0 keeps ``w``).
        window: candidates per variable on each side of a cell in that variable's sort order.
        time_limit: seconds the optimisation (model 3) may take; ``None``: no limit.
        max_tightenings: the most tightenings model 3 tries; ``None``: no limit.
    """

    start: tuple[int, int] = (3, 5)
    target: tuple[int, int] = (1, 1)
    correction_steps: int = 8
    window: int = 4
    time_limit: float | None = None
    max_tightenings: int | None = None


@dataclass
class Stage:
    """One entry of the bound schedule actually reached."""

    model: int
    correction_step: int
    bound_one: int
    bound_other: int
    moves: int
    violations: int
    accepted: bool
    seconds: float


@dataclass
class Outcome:
    """What the heuristic found.

    Attributes:
        counts: the protected elementary table (0 or at least 3 everywhere).
        log: the moves made, in order (from cell, to cell, records), rows ``[:n_log]``.
        original: the original count of every controlled cell.
        deviation: every controlled cell's deviation (protected minus original).
        bound: every controlled cell's largest deviation allowed, ``w_i + b_i - 1`` (Höhne 2011, eq. 2 and 3:
            ``|d| < w_i + b_i``).
        schedule: the bound schedule, step by step.
        stopped_by: why model 3 stopped: ``target`` (nothing left to tighten), ``max_tightenings``
            or ``time_limit`` (then the result depends on the machine's speed).
    """

    counts: IntArray
    log: IntArray
    original: IntArray
    deviation: IntArray
    bound: IntArray
    schedule: list[Stage] = field(default_factory=list)
    stopped_by: str = "target"

    @property
    def final(self) -> Stage:
        """The last accepted stage: the bounds every controlled cell keeps."""
        return [s for s in self.schedule if s.accepted][-1]


@dataclass
class _State:
    y: IntArray
    dev: IntArray
    log: IntArray
    n_log: int = 0

    def grow(self) -> None:
        self.log = np.concatenate([self.log, np.zeros_like(self.log)])

    def snapshot(self) -> tuple[IntArray, IntArray, int]:
        return self.y.copy(), self.dev.copy(), self.n_log

    def restore(self, saved: tuple[IntArray, IntArray, int]) -> None:
        self.y, self.dev, self.n_log = saved


def search(
    cats: IntArray,
    counts: IntArray,
    tables: Controlled,
    settings: Settings,
    rng: np.random.Generator,
    progress: Callable[[str], None] | None = None,
    fixed: npt.NDArray[np.bool_] | None = None,
) -> Outcome:
    """Run models 2 and 3 on the elementary table ``counts`` (one row of ``cats`` per cell).

    ``fixed`` marks the variables no move may change (population memberships).
    """
    arrays = tables.arrays
    buf = np.zeros(tables.span, dtype=np.int64)
    strides = tables.strides
    original = tabulate(tables, cats, counts)
    w0 = weights(original)
    keep = np.zeros(cats.shape[1], dtype=bool) if fixed is None else fixed
    ranks, orders = _sort_orders(cats, tables, keep)
    state = _State(
        counts.astype(np.int64).copy(),
        np.zeros(tables.n_cells, np.int64),
        np.zeros((max(16, counts.size), 3), np.int64),
    )
    schedule: list[Stage] = []

    def bound(step: int, one: int, other: int) -> IntArray:  # the largest |d| with |d| < w + b (eq. 2 and 3)
        return np.maximum(w0 - step, 0) + np.where(tables.dims <= 1, one, other) - 1

    def sweep(fn: Callable[..., tuple[int, int]], order: IntArray, lim: IntArray, window: int = settings.window) -> int:
        made = 0
        extra = (buf,) if fn is kernel.repair_sweep else (strides,)
        while True:
            state.n_log, now = fn(
                order,
                window,
                state.y,
                cats,
                ranks,
                orders,
                keep,
                *arrays,
                state.dev,
                lim,
                state.log,
                state.n_log,
                *extra,
            )
            made += now
            if state.n_log + 1 < state.log.shape[0]:
                return made
            state.grow()

    clock = time.perf_counter()
    b_one, b_other = _first_feasible(state, settings, bound, sweep, rng, keep, progress)
    schedule.append(Stage(2, 0, b_one, b_other, state.n_log, 0, True, time.perf_counter() - clock))
    deadline = None if settings.time_limit is None else time.perf_counter() + settings.time_limit
    lim, stopped = _tighten(state, schedule, settings, bound, sweep, rng, deadline, (b_one, b_other), progress)
    return Outcome(state.y, state.log[: state.n_log].copy(), original, state.dev, lim, schedule, stopped)


def _first_feasible(
    state: _State,
    settings: Settings,
    bound: Callable[[int, int, int], IntArray],
    sweep: Callable[..., int],
    rng: np.random.Generator,
    keep: npt.NDArray[np.bool_],
    progress: Callable[[str], None] | None,
) -> tuple[int, int]:
    """Model 2: passes over the unsafe cells until none is left; returns the bounds it ended at."""
    b_one, b_other = settings.start
    total = int(state.y.sum())
    if 0 < total < 3:
        raise CubeguardError(
            f"safe: the microdata hold {total} record(s); no table of fewer than 3 records can be free of 1s and 2s"
        )
    unsafe = np.flatnonzero((state.y == 1) | (state.y == 2))
    order = unsafe[rng.permutation(unsafe.size)]
    lim = bound(0, b_one, b_other)
    window = settings.window
    left = unsafe.size
    while left:
        before = left
        made = sweep(kernel.feasible_sweep, order, lim, window)
        left = int(np.count_nonzero((state.y == 1) | (state.y == 2)))
        if progress:
            progress(f"model 2: {left} unsafe cells left at bounds {b_one}/{b_other}")
        if left and made == 0 and window >= state.y.size:
            if keep.any():
                raise CubeguardError(
                    f"safe: {left} combination(s) hold 1 or 2 records that cannot move without leaving their "
                    "population or changing a household column (a cube's population, the records outside it, or "
                    "a combination of input.household_columns, which a household keeps whole, has fewer than 3 "
                    "records); drop that cube, widen its population, or publish that household column coarser"
                )
            raise InternalError("SAFE found no move for an unsafe cell among all cells; this is a bug in cubeguard")
        if made == 0 and b_other > total:  # the bounds no longer bind: every cell becomes a candidate
            window = state.y.size
        elif before - left < STALL_SHARE * before:
            b_one, b_other = b_one + 1, b_other + 1
            lim = bound(0, b_one, b_other)
        order = order[(state.y[order] == 1) | (state.y[order] == 2)]
    return b_one, b_other


def _tighten(
    state: _State,
    schedule: list[Stage],
    settings: Settings,
    bound: Callable[[int, int, int], IntArray],
    sweep: Callable[[Callable[..., tuple[int, int]], IntArray, IntArray], int],
    rng: np.random.Generator,
    deadline: float | None,
    bounds: tuple[int, int],
    progress: Callable[[str], None] | None,
) -> tuple[IntArray, str]:
    """Model 3: correction steps on ``w``, then ``b`` lowered; every cell's final bound and why it stopped."""
    step, (one, other) = 0, bounds
    lim = bound(step, one, other)
    tries = [("w", k) for k in range(1, settings.correction_steps + 1)]
    stalled: set[str] = set()
    tried = 0
    while True:
        if deadline is not None and time.perf_counter() > deadline:
            return lim, "time_limit"
        if settings.max_tightenings is not None and tried >= settings.max_tightenings:
            return lim, "max_tightenings"
        if tries:
            kind, value = tries.pop(0)
            candidate = (value, one, other)
        elif "other" not in stalled and other > settings.target[1]:
            kind, candidate = "other", (step, one, other - 1)
        elif "one" not in stalled and one > settings.target[0]:
            kind, candidate = "one", (step, one - 1, other)
        else:
            break
        trial = bound(*candidate)
        if np.array_equal(trial, lim):
            step, one, other = candidate
            continue
        ok, stage = _repair(state, trial, candidate, sweep, rng, deadline)
        tried += 1
        schedule.append(stage)
        if progress:
            progress(
                f"model 3: bounds {candidate[1]}/{candidate[2]}, correction step {candidate[0]}: {'kept' if ok else 'undone'}"
            )
        if ok:
            step, one, other = candidate
            lim = trial
        elif kind == "w":
            tries = []
        else:
            stalled.add(kind)
    return lim, "target"


def _repair(
    state: _State,
    lim: IntArray,
    candidate: tuple[int, int, int],
    sweep: Callable[[Callable[..., tuple[int, int]], IntArray, IntArray], int],
    rng: np.random.Generator,
    deadline: float | None,
) -> tuple[bool, Stage]:
    """Repair every cell out of its tightened bound, or undo the tightening."""
    clock = time.perf_counter()
    saved = state.snapshot()
    start = state.n_log
    violations = int(np.count_nonzero(np.abs(state.dev) > lim))
    for _ in range(MAX_REPAIR_PASSES):
        if violations == 0 or (deadline is not None and time.perf_counter() > deadline):
            break
        cells = np.flatnonzero(state.y >= 3)
        made = sweep(kernel.repair_sweep, cells[rng.permutation(cells.size)], lim)
        violations = int(np.count_nonzero(np.abs(state.dev) > lim))
        if made == 0:
            break
    ok = violations == 0
    moves = state.n_log - start
    if not ok:
        state.restore(saved)
    return ok, Stage(3, candidate[0], candidate[1], candidate[2], moves, violations, ok, time.perf_counter() - clock)


def _sort_orders(cats: IntArray, tables: Controlled, fixed: npt.NDArray[np.bool_]) -> tuple[IntArray, IntArray]:
    """Per variable a move may change, the elementary cells sorted with that variable last, and each cell's rank.

    The fixed variables come first, then the others in the order of how many tables use them,
    most first, so a neighbour differs first in the variable itself, then in the least used others.
    """
    n, n_vars = cats.shape
    used = np.bincount(tables.var[tables.var >= 0], minlength=n_vars)
    priority = sorted(range(n_vars), key=lambda v: (not fixed[v], -used[v], v))
    free = [v for v in range(n_vars) if not fixed[v]]
    orders = np.empty((len(free), n), dtype=np.int64)
    ranks = np.empty((len(free), n), dtype=np.int64)
    for row, v in enumerate(free):
        keys = [u for u in priority if u != v] + [v]
        order = lexicographic(packed([cats[:, u] for u in keys]))
        orders[row] = order
        ranks[row, order] = np.arange(n)
    return ranks, orders

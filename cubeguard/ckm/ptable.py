"""Perturbation tables (p-tables) for the cell key method on frequency counts.

A p-table stores, for every original count ``i``, a noise distribution as intervals of ``[0, 1)``:
row ``(i, j, p, v, p_int_lb, p_int_ub)`` says that a cell with count ``i`` is published as ``j``
(noise ``v = j - i``) with probability ``p``, chosen when its cell key falls into
``[p_int_lb, p_int_ub)`` (Handbook on SDC v2, 5.4; Wilak et al. 2024, steps 3-4).

:func:`create_cnt_ptable` is ``ptable::create_cnt_ptable`` (R package ptable 1.0.0,
``R/pt_create_pTable.R``): one maximum-entropy problem per ``i`` (Giessing 2016, PSD, LNCS 9867),
solved in :mod:`~cubeguard.ckm.ptable_solver` with NLopt's SLSQP as ptable does. Related modules:
:mod:`~cubeguard.ckm.ptable_io` (ptable's CSV, the tau-ARGUS format),
:mod:`~cubeguard.ckm.ptable_modify` (the shuffled "modified" p-table) and
:mod:`~cubeguard.ckm.ptable_plot`.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, model_validator

from cubeguard.ckm.ptable_solver import EPSILON, solve_count
from cubeguard.errors import CubeguardError

if TYPE_CHECKING:
    import pandas as pd

_DIGITS = 8  # ptable rounds the interval bounds to 8 decimals
COLUMNS = ("i", "j", "p", "v", "p_int_lb", "p_int_ub", "type")

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


class PTableInfeasibleError(CubeguardError):
    """No p-table satisfies the constraints for the given parameters (ptable stops likewise)."""

    def __init__(self, count: int) -> None:
        """Name the original count whose distribution failed.

        D and V are secret (Wilak et al. 2024), so the message names only that count.
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
    logged (Wilak et al. 2024: "the central parameters ... are generally not published").

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

    @classmethod
    def from_distributions(
        cls,
        blocks: Sequence[tuple[IntArray, FloatArray]],
        params: PTableParams | None = None,
        intervals: Literal["default", "modified"] = "default",
    ) -> PTable:
        """Build a table from ``(j, p)`` per original count ``0, 1, ...``, in row order.

        The bounds are written as ptable writes them: ``ub = round(cumsum(p), 8)``,
        ``lb = round(cumsum(p) - p, 8)``, then ``p = ub - lb`` (hence values such as
        0.14867984999999995).
        """
        parts = [(np.full(j.size, count), j, *cumulative_intervals(p)) for count, (j, p) in enumerate(blocks)]
        i, j, p, lb, ub = (np.concatenate(column) for column in zip(*parts, strict=True))
        return cls(i, j, p, j - i, lb, ub, np.full(i.size, "all"), intervals, params)

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

        return pd.DataFrame({name: np.asarray(getattr(self, name)) for name in COLUMNS})


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
    if np.any(gap > EPSILON):
        problems.append("each p_int_lb must equal the previous p_int_ub of the same i")
    return problems


# --- construction: ptable's maximum-entropy problem ------------------------------------------


def create_cnt_ptable(params: PTableParams) -> PTable:
    """Build a count p-table as ``ptable::create_cnt_ptable`` does (ptable 1.0.0).

    Row ``i = 0`` is ``j = 0, p = 1``; every ``i = 1..ncat`` gets the maximum-entropy
    distribution of :func:`~cubeguard.ckm.ptable_solver.solve_count`, written as 8-digit
    intervals by :meth:`PTable.from_distributions`.

    Raises:
        PTableInfeasibleError: the constraints cannot be met for some original count.
    """
    if params.D == 0:
        return identity_ptable(params)
    blocks = [(np.array([0]), np.array([1.0]))]
    for count in range(1, params.ncat + 1):
        solution = solve_count(count, params)
        if not solution.ok:
            raise PTableInfeasibleError(count)
        blocks.append((solution.j, solution.p))
    return PTable.from_distributions(blocks, params)


def identity_ptable(params: PTableParams | None = None) -> PTable:
    """The noise-free p-table: every count keeps its value (the exact, noise-free path)."""
    i, zero, one = np.array([0, 1]), np.zeros(2), np.ones(2)
    kinds = np.array(["all", "all"])
    return PTable(i, i, one, np.zeros(2, np.int64), zero, one, kinds, params=params)


def cumulative_intervals(p: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``(p, lb, ub)`` as ptable writes them; ``cumsum`` is R's (a long-double accumulator).

    ``ub = round(cumsum(p), 8)``, ``lb = round(cumsum(p) - p, 8)``, ``p = ub - lb``: the same for
    count and numeric p-tables.
    """
    cumulative = np.add.accumulate(p, dtype=np.longdouble).astype(np.float64)
    ub = np.array([round(c, _DIGITS) for c in cumulative.tolist()])
    lb = np.array([round(c, _DIGITS) for c in (cumulative - p).tolist()])
    return ub - lb, lb, ub


# --- names that moved to their own modules ---------------------------------------------------

_MOVED = {
    "read_ptable": "ptable_io",
    "write_ptable": "ptable_io",
    "modify_cnt_ptable": "ptable_modify",
    "adjacent_equal_noise": "ptable_modify",
}


def __getattr__(name: str) -> Any:
    """Keep ``from cubeguard.ckm.ptable import read_ptable`` (and the like) working.

    These functions live in :mod:`~cubeguard.ckm.ptable_io` and :mod:`~cubeguard.ckm.ptable_modify`,
    which import this module, so they are looked up lazily here; new code imports them from there
    or from :mod:`cubeguard.ckm`.
    """
    if name in _MOVED:
        return getattr(importlib.import_module(f"cubeguard.ckm.{_MOVED[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

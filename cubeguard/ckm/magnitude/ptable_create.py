"""Numeric p-tables from their parameters: R ptable's ``create_num_ptable`` (ptable 1.0.0).

Enderle, Giessing, Tent (2018), "Designing confidentiality on the fly methodology - three aspects",
PSD 2018, LNCS 11126; Gießing (2016), "Computational issues in the design of transition
probabilities and disclosure risk estimation for additive noise", PSD 2016, LNCS 9867; Handbook on
SDC v2, 5.4. ptable's ``R/pt_create_pTable.R`` with ``table = "nums"``:

* The rows are ``i = 0`` (``v = 0`` with ``p = 1``) and every ``i`` of ``icat`` (which must hold 1
  and ``D``; ``D`` is its largest entry). cellKey interpolates the noise between these points.
* For each ``i`` the noise lies on a grid of step ``1/step``: ``j = seq(max(i - D, 0), i + D, by
  = 1/step)`` and ``v = j - i``, both rounded to 4 decimals when ``step > 1``.
* Its distribution is the maximum-entropy solution of the counts' problem (zero mean, variance
  ``V``, monotony left of 0), solved by :func:`~cubeguard.ckm.ptable_solver.solve_noise` with
  that ``i``'s ``optim`` and ``mono``; ``js`` and ``pstay`` do not apply to magnitudes.
* The intervals are the counts' (:func:`~cubeguard.ckm.ptable.cumulative_intervals`): ``p_int_ub =
  round(cumsum(p), 8)``, ``p_int_lb = round(cumsum(p) - p, 8)``, ``p = p_int_ub - p_int_lb``.
* ``type`` (``all``, ``even`` or ``odd``) only labels the rows; cellKey picks ``even``/``odd`` rows
  by the parity of a cell's record count, so such a table is combined with one of the other parity.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from cubeguard.ckm.magnitude.ptable import FloatArray, NumPTable, NumPTableError
from cubeguard.ckm.ptable import PTableParams, cumulative_intervals
from cubeguard.ckm.ptable_io import write_columns
from cubeguard.ckm.ptable_solver import solve_noise
from cubeguard.errors import CubeguardError

_MAX_POINTS = 50  # ptable: D * step must stay below 50
_DECIMALS = 4  # ptable rounds j and v to 4 decimals when step > 1


class NumPTableInfeasibleError(CubeguardError):
    """No noise distribution meets the constraints for one ``i`` (ptable stops likewise)."""

    def __init__(self, point: int) -> None:
        """Name the point ``i`` whose distribution failed (D and V are secret, so only ``i``)."""
        super().__init__(
            f"No noise distribution for i = {point} meets the numeric p-table constraints (zero mean, "
            "variance V, noise within D) with these parameters: change V (usually enough), D or step, "
            "or try mono false or optim 4 for that i."
        )
        self.point = point


class NumPTableParams(BaseModel):
    """Parameters of R ptable's ``create_num_ptable`` (``pt_create_pParams(table = "nums")``).

    ``D`` and ``V`` are kept out of ``repr``: they must not be published or logged.

    Attributes:
        D: maximum absolute noise, also the largest point ``i``.
        V: noise variance (an upper bound where ``optim`` is 1, exact where it is 4).
        step: the noise grid has step ``1/step``.
        icat: the points ``i`` with their own distribution; sorted and de-duplicated as ptable does,
            they must hold 1 and ``D``.
        optim: per point of ``icat`` (or one for all): 1 = variance as inequality, 4 = as equality.
        mono: per point of ``icat`` (or one for all): probabilities increase towards noise 0 on the
            negative side.
        type: the rows' ``type``: ``all``, or ``even``/``odd`` for one table of a parity pair.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    D: Annotated[int, Field(ge=1, strict=True, repr=False)]
    V: Annotated[float, Field(gt=0.0, allow_inf_nan=False, repr=False)]
    step: Annotated[int, Field(ge=1, strict=True)] = 2
    icat: tuple[Annotated[int, Field(ge=1, strict=True)], ...]
    optim: tuple[Literal[1, 4], ...] = (1,)
    mono: tuple[bool, ...] = (True,)
    type: Literal["all", "even", "odd"] = "all"

    @field_validator("optim", "mono", mode="before")
    @classmethod
    def _scalar_for_all(cls, value: Any) -> Any:
        return (value,) if isinstance(value, int | bool) else value

    @field_validator("icat", mode="after")
    @classmethod
    def _sorted_unique(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(sorted(set(value)))

    @model_validator(mode="after")
    def _check(self) -> NumPTableParams:
        problems = []
        if 1 not in self.icat or self.D not in self.icat:
            problems.append("icat must hold 1 and D, e.g. icat = 1, D")
        if self.icat and max(self.icat) > self.D:
            problems.append("the largest entry of icat can be D")
        if self.D * self.step >= _MAX_POINTS:
            problems.append(f"D * step must be below {_MAX_POINTS}: reduce D or step")
        for name in ("optim", "mono"):
            if len(getattr(self, name)) not in (1, len(self.icat)):
                problems.append(f"give one {name} or one per entry of icat ({len(self.icat)})")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def points(self) -> list[tuple[int, Literal[1, 4], bool]]:
        """``(i, optim, mono)`` for every point of ``icat``."""
        n = len(self.icat)
        optim = self.optim * n if len(self.optim) == 1 else self.optim
        mono = self.mono * n if len(self.mono) == 1 else self.mono
        return list(zip(self.icat, optim, mono, strict=True))


def num_ptable_params(**values: Any) -> NumPTableParams:
    """:class:`NumPTableParams` from user input, every problem in one :class:`NumPTableError`.

    The message names the parameters, never their values (D and V are secret).

    Raises:
        NumPTableError: a parameter is missing, of the wrong kind or out of range.
    """
    try:
        return NumPTableParams(**values)
    except ValidationError as error:
        shown = [_sentence(e) for e in error.errors(include_input=False, include_url=False)]
        raise NumPTableError(f"invalid numeric p-table parameters: {'; '.join(shown)}.") from None


def _sentence(error: Any) -> str:
    where = ".".join(str(part) for part in error["loc"])
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def noise_grid(point: int, D: int, step: int) -> tuple[FloatArray, FloatArray]:
    """``(j, v)`` of one point ``i``, as ptable forms them with R's ``seq`` and ``round(x, 4)``.

    R's ``seq(from, to, by)`` is ``from + (0:n) * by`` with ``n = as.integer((to - from) / by +
    1e-10)``, capped at ``to``. Python's ``round`` to 4 decimals (correctly rounded) gives R's
    doubles on these grids; only a value exactly halfway between two 4-decimal numbers (a step
    of 32 or more, which ``D * step < 50`` allows for ``D = 1``) could round otherwise in R.

    >>> noise_grid(1, 2, 2)
    (array([0. , 0.5, 1. , 1.5, 2. , 2.5, 3. ]), array([-1. , -0.5,  0. ,  0.5,  1. ,  1.5,  2. ]))
    """
    start, stop, width = float(max(point - D, 0)), float(point + D), 1.0 / step
    n = int((stop - start) / width + 1e-10)
    j = np.minimum(start + np.arange(n + 1) * width, stop)
    v = j - point
    if step != 1:
        j = np.array([round(x, _DECIMALS) for x in j.tolist()])
        v = np.array([round(x, _DECIMALS) for x in (j - point).tolist()])
    return j, v


def create_num_ptable(params: NumPTableParams) -> NumPTable:
    """Build a numeric p-table as R ptable's ``create_num_ptable`` does (ptable 1.0.0).

    Raises:
        NumPTableInfeasibleError: the constraints cannot be met for some point ``i``.
    """
    blocks = [(np.zeros(1), np.zeros(1), np.ones(1), 0)]
    for point, optim, mono in params.points():
        j, v = noise_grid(point, params.D, params.step)
        x, ok = solve_noise(v, PTableParams(D=params.D, V=params.V, optim=optim, mono=mono))
        if not ok:
            raise NumPTableInfeasibleError(point)
        blocks.append((j, v, x, point))
    columns = [_rows(j, v, x, point) for j, v, x, point in blocks]
    i, j, p, v, lb, ub = (np.concatenate(column) for column in zip(*columns, strict=True))
    return NumPTable(i=i, j=j, p=p, v=v, lb=lb, ub=ub, type=np.full(i.size, params.type))


def _rows(j: FloatArray, v: FloatArray, x: FloatArray, point: int) -> tuple[FloatArray, ...]:
    p, lb, ub = cumulative_intervals(x)
    return np.full(j.size, float(point)), j, p, v, lb, ub


def write_num_ptable(table: NumPTable, path: str | Path) -> Path:
    """Write ``table`` as R ptable's CSV (``i,j,p,v,p_int_lb,p_int_ub,type``), which :func:`read_num_ptable` reads.

    Numbers have the shortest digits that read back to the same double, as ``data.table::fwrite``.
    """
    names = ("i", "j", "p", "v", "p_int_lb", "p_int_ub", "type")
    values = (table.i, table.j, table.p, table.v, table.lb, table.ub, table.type)
    return write_columns(path, dict(zip(names, (c.tolist() for c in values), strict=True)))

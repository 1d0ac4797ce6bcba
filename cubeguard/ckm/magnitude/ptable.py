"""Numeric p-tables of the cell key method for magnitudes and the separation point.

A numeric p-table (R ptable's ``create_num_ptable``; Gießing 2016, PSD 2016; Handbook on SDC v2,
5.4) gives, for a few points ``i`` (e.g. 0, 1, 5, 10), a distribution of noise ``v`` on a grid of
step ``1/step``, as intervals ``[lb, ub)`` of the cell key. Its rows carry a ``type``: ``all``;
``even``/``odd`` (by the parity of the cell's record count); ``small_cells`` (magnitudes below
the separation point, looked up like counts).

Files are R ptable's CSV (``i,j,p,v,p_int_lb,p_int_ub,type``) or cellKey's ``params$ptab`` with the
bounds renamed to ``lb``/``ub`` by ``.chk_ptab``; rows keep file order, as cellKey looks them up.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from cubeguard.ckm.magnitude._rnum import r_sum
from cubeguard.ckm.magnitude.params import MagnitudeParams
from cubeguard.errors import CubeguardError

TYPES = ("all", "even", "odd", "small_cells")
FloatArray = npt.NDArray[np.float64]
_BOUNDS = {"lb": ("lb", "p_int_lb"), "ub": ("ub", "p_int_ub")}


class NumPTableError(CubeguardError):
    """A numeric p-table that cannot be read or used; the message says what to change."""


@dataclass(frozen=True, eq=False)
class NumPTable:
    """A numeric p-table: one entry per row, in file order (cellKey takes the first matching row).

    Attributes:
        i: the point of the magnitude ratio ``a`` the row's distribution belongs to.
        j: the perturbed ratio (``i + v``).
        p: the row's probability.
        v: the noise value.
        lb: lower bound of the cell-key interval ``[lb, ub)``.
        ub: upper bound; the last row of every distribution ends at 1.
        type: ``all``, ``even``, ``odd`` or ``small_cells``.
    """

    i: FloatArray
    j: FloatArray
    p: FloatArray
    v: FloatArray
    lb: FloatArray
    ub: FloatArray
    type: npt.NDArray[np.str_]

    def __post_init__(self) -> None:
        problems = _problems(self)
        if problems:
            shown = "; ".join(problems[:5])
            more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
            raise NumPTableError(f"not a usable numeric p-table: {shown}{more}.")

    def types(self) -> set[str]:
        """The row types present."""
        return {str(t) for t in np.unique(self.type)}

    def max_i(self, kind: str) -> float:
        """Largest ``i`` of the rows of type ``kind`` (cellKey's ``max_i``)."""
        return float(self.i[self.type == kind].max())


def _problems(t: NumPTable) -> list[str]:
    problems = []
    unknown = sorted(set(np.unique(t.type).tolist()) - set(TYPES))
    if unknown:
        problems.append(f"unknown row types {unknown}; use {', '.join(TYPES)}")
    for kind in sorted(set(np.unique(t.type).tolist()) & set(TYPES)):
        rows = np.flatnonzero(t.type == kind)
        if not (t.i[rows] == 0.0).any():
            problems.append(f"type {kind!r} has no rows with i = 0 (cellKey interpolates from i = 0)")
        for level in np.unique(t.i[rows]):
            block = rows[t.i[rows] == level]
            if np.any(np.diff(t.ub[block]) < 0.0) or t.ub[block[-1]] != 1.0 or np.any(np.diff(block) != 1):
                problems.append(f"type {kind!r}, i = {level:g}: the rows must be adjacent with ub ascending to 1")
    return problems


def read_num_ptable(path: str | Path) -> NumPTable:
    """Read a numeric p-table from R ptable's CSV (or cellKey's ``lb``/``ub`` layout).

    Raises:
        NumPTableError: a column is missing, a value does not parse, or the rows do not form a
            numeric p-table (the message names the file).
    """
    path = Path(path)
    with path.open(newline="", encoding="utf-8-sig") as handle:
        records = list(csv.DictReader(handle))
    names = set(records[0]) if records else set()
    columns = {"i": "i", "j": "j", "p": "p", "v": "v", "type": "type"}
    for key, options in _BOUNDS.items():
        columns[key] = next((o for o in options if o in names), options[1])
    missing = sorted(c for c in columns.values() if c not in names)
    if missing:
        raise NumPTableError(f"{path}: no rows or no columns {missing}; expected i,j,p,v,p_int_lb,p_int_ub,type.")
    try:
        floats = {k: np.array([float(r[c]) for r in records]) for k, c in columns.items() if k != "type"}
    except ValueError as error:
        raise NumPTableError(f"{path}: {error}; i, j, p, v and the bounds must be numbers.") from None
    kinds = np.array([r[columns["type"]].strip() for r in records])
    try:
        return NumPTable(type=kinds, **floats)
    except NumPTableError as error:
        raise NumPTableError(f"{path}: {error}") from None


@dataclass(frozen=True)
class Separation:
    """The separation point of cellKey's ``ck_params_nums`` (Handbook on SDC v2, 5.4).

    Attributes:
        m_fixed_sq: variance of the last ``small_cells`` distribution, ``sum((i - j)^2 p)`` over
            its rows; None without a ``small_cells`` table.
        zs: magnitudes below ``zs`` use the ``small_cells`` table with ``x_delta = 1``;
            ``sqrt(m_fixed_sq) / (sqrt(E) * p)``, 0 without separation.
        E: sum of the squared epsilons.
    """

    m_fixed_sq: float | None
    zs: float
    E: float


def separation(params: MagnitudeParams, ptable: NumPTable) -> Separation:
    """Separation point of ``params`` with ``ptable`` (``p`` is ``p_small`` for flex, as cellKey 1.0.2).

    Raises:
        NumPTableError: neither rows of type ``all`` nor of both ``even`` and ``odd`` (a table of
            one parity alone, as ``create_num_ptable(type = "even")`` makes, is not enough), or
            even/odd tables with ``top_k > 1`` (cellKey refuses them too).
    """
    kinds = ptable.types()
    if not ("all" in kinds or {"even", "odd"} <= kinds):
        raise NumPTableError("the p-table needs rows of type 'all', or of both 'even' and 'odd'; add the missing rows.")
    if params.top_k > 1 and "all" not in kinds:
        raise NumPTableError(f"even/odd p-tables need top_k = 1 (top_k is {params.top_k}); give a table of type 'all'.")
    e = params.epsilon_sq_sum
    if "small_cells" not in ptable.types():
        return Separation(None, 0.0, e)
    rows = np.flatnonzero((ptable.type == "small_cells") & (ptable.i == ptable.max_i("small_cells")))
    diff = ptable.i[rows] - ptable.j[rows]
    m_fixed_sq = r_sum((diff * diff * ptable.p[rows]).tolist())
    return Separation(m_fixed_sq, float(np.sqrt(m_fixed_sq) / (np.sqrt(e) * params.mult.scale)), e)

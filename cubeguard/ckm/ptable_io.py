"""Reading and writing count p-tables: ptable's CSV and the tau-ARGUS format.

* ptable's CSV (``data.table::fwrite`` of the ``pTable`` slot): ``i,j,p,v,p_int_lb,p_int_ub,type``.
* tau-ARGUS (``ptable::pt_export``, ``SDCtool = "TauArgus"``): ``i;j;p;v;p_int_ub`` - the lower
  bound of a row is the upper bound of the previous row of the same ``i``.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import numpy as np

from cubeguard.ckm.ptable import COLUMNS, FloatArray, IntArray, PTable, PTableFormatError
from cubeguard.errors import CubeguardError

_TAU_COLUMNS = ("i", "j", "p", "v", "p_int_ub")


def write_ptable(ptable: PTable, path: str | Path, format: Literal["ptable", "tau"] = "ptable") -> Path:
    """Write a p-table as ptable's CSV or in the tau-ARGUS format; return the path.

    ``"ptable"`` writes every column with the shortest digits that read back to the same double,
    as ``data.table::fwrite`` does, so a table read from ptable's CSV is written back byte for
    byte. ``"tau"`` writes what ``ptable::pt_export`` writes for tau-ARGUS: ``;`` separated,
    integers right-aligned to a common width, ``p`` and ``p_int_ub`` with 8 decimals (R switches
    to 1e-08 notation only when no value needs 8 decimals, which never happens for ptable's
    tables; cubeguard always writes decimals).

    Raises:
        CubeguardError: ``format`` is neither ``"ptable"`` nor ``"tau"``.
    """
    if format == "ptable":
        return write_columns(path, {name: getattr(ptable, name).tolist() for name in COLUMNS})
    if format != "tau":
        raise CubeguardError(f"unknown p-table format {format!r}; use 'ptable' or 'tau'.")
    return _write_lines(path, ";", _TAU_COLUMNS, [_aligned(ptable, name) for name in _TAU_COLUMNS])


def write_columns(path: str | Path, columns: Mapping[str, Sequence[object]]) -> Path:
    """Write named columns as ``data.table::fwrite`` writes them (``,``, shortest round-trip numbers).

    Count and numeric p-tables alike (ptable's CSV); return the path.
    """
    texts = [[_shortest(x) for x in column] for column in columns.values()]
    return _write_lines(Path(path), ",", tuple(columns), texts)


def _write_lines(path: str | Path, delimiter: str, names: Sequence[str], columns: Sequence[list[str]]) -> Path:
    path = Path(path)
    lines = [delimiter.join(names)] + [delimiter.join(row) for row in zip(*columns, strict=True)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _shortest(value: object) -> str:
    """``fwrite``'s number format: shortest round-trip digits, whole numbers without ``.0``."""
    text = repr(value) if isinstance(value, float) else str(value)
    return text[:-2] if text.endswith(".0") else text


def _aligned(ptable: PTable, name: str) -> list[str]:
    """One column as R's ``format(pTable, digits = 8)`` prints it."""
    values = getattr(ptable, name).tolist()
    if name in ("p", "p_int_ub"):
        return [f"{x:.8f}" for x in values]
    width = max(len(str(x)) for x in values)
    return [str(x).rjust(width) for x in values]


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
        records = [[cell.strip() for cell in row] for row in csv.reader(handle, delimiter=delimiter)]
    return _table_from_records(path, names, [r for r in records if any(r)])


def _table_from_records(path: Path, names: list[str], records: list[list[str]]) -> PTable:
    columns: dict[str, list[str]] = {name: [] for name in names}
    for line, record in enumerate(records, start=2):
        if len(record) != len(names):
            raise PTableFormatError(
                f"{path}: line {line} has {len(record)} fields, the header {len(names)}; fix the line or the delimiter."
            )
        for name, cell in zip(names, record, strict=True):
            columns[name].append(cell)
    try:
        ints = {name: np.array([int(c) for c in columns[name]]) for name in ("i", "j", "v")}
        floats: dict[str, FloatArray] = {
            n: np.array([float(c) for c in columns[n]]) for n in ("p", "p_int_lb", "p_int_ub") if n in columns
        }
    except ValueError as error:
        raise PTableFormatError(
            f"{path}: {error}; i, j, v must be integers and p, bounds numbers with '.' as decimal mark."
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
            f"{path}: line {bad[0] + 2}: p differs from p_int_ub - p_int_lb; check the bounds of that row."
        )
    try:
        return PTable(ints["i"], ints["j"], ub - lb, ints["v"], lb, ub, np.full(ub.size, "all"))
    except PTableFormatError as error:
        raise PTableFormatError(f"{path}: {error}") from None

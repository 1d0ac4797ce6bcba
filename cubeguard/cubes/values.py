"""What the cell key method for magnitudes needs of a numeric column, per cell: one implementation for cubes and tables.

Per bottom cell: the count, the exact record-key sums of all records and of those with a non-zero
value, the sum, the largest and smallest value, and the ``k`` largest contributions by absolute
value with their records' ranks (ties: the lower rank first). Margins are then summed (counts, key
sums and sums, exact since the values are whole numbers) or merged along each axis (the top ``k`` of
a union is among its parts' top ``k``; maxima and minima), and partial accumulators of separate
passes merge the same way, so a cell has the same inputs, hence the same perturbed sum, in every
cube and flexible table that holds it (Handbook on SDC v2, 5.7; Gießing 2016).

A cube that publishes the sums of a column keeps the inputs of its perturbation in the internal
store as variables named by :func:`input_names` (``sum.<column>`` is the exact sum there and the
published one after protection, as ``count``); :func:`stored_cells` reads them back.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import xarray as xr
from numba import njit

from cubeguard.ckm.keys import KeyScale
from cubeguard.ckm.magnitude import MagnitudeCells
from cubeguard.ckm.magnitude.topk import MAX_TOP
from cubeguard.cubes.hierarchy import Breakdown
from cubeguard.errors import CubeguardError

Values = dict[str, npt.NDArray[Any]]
#: Sums every total and subtotal of a bottom-cell array along the breakdowns (counts, key sums, sums).
Expand = Callable[[npt.NDArray[Any], list[Breakdown]], npt.NDArray[Any]]

SUMMED = ("counts", "key_sums", "nz_key_sums", "sums")
FIELDS = (*SUMMED, "high", "low", "top", "rank")
SUM_PREFIX = "sum."


@njit(nogil=True, inline="always")
def insert(top, rank, i, x, r):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Put ``x`` (rank ``r``) into row ``i`` of (cells, k) lists, kept by |x| descending, then rank ascending.

    Rows are indexed, not sliced: a view per record cost ten times the rest of a record's work.
    """
    k = top.shape[1]
    j = k
    while j > 0 and (
        rank[i, j - 1] < 0 or abs(top[i, j - 1]) < abs(x) or (abs(top[i, j - 1]) == abs(x) and rank[i, j - 1] > r)
    ):
        j -= 1
    if j == k:
        return
    for m in range(k - 1, j, -1):
        top[i, m] = top[i, m - 1]
        rank[i, m] = rank[i, m - 1]
    top[i, j] = x
    rank[i, j] = r


@njit(nogil=True, cache=True)
def _add_indexed(cells, values, keys, first_rank, counts, key_sums, nz_key_sums, sums, high, low, top, rank):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Add record ``r`` (value, fixed-point key) to flat cell ``cells[r]`` (skipped when negative), ranked ``first_rank + r``.

    One loop with the work written out: a function call per record cost five times the work.
    """
    for r in range(cells.size):
        i = cells[r]
        if i < 0:
            continue
        x = values[r]
        counts[i] += 1
        key_sums[i] += keys[r]
        sums[i] += x
        if x != 0.0:
            nz_key_sums[i] += keys[r]
        high[i] = max(high[i], x)
        low[i] = min(low[i], x)
        insert(top, rank, i, x, first_rank + r)


@njit(nogil=True, cache=True)
def merge_along(top, rank, high, low, lo, hi, out_top, out_rank, out_high, out_low):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Along axis 1 of (outer, n, inner[, k]) arrays: merge positions ``lo[c]..hi[c]-1`` into code ``c``."""
    k = top.shape[3]
    codes, inner = lo.size, top.shape[2]
    flat_top, flat_rank = out_top.reshape(-1, k), out_rank.reshape(-1, k)  # contiguous: no copy
    for o in range(top.shape[0]):
        for c in range(codes):
            for q in range(inner):
                out_high[o, c, q] = -np.inf
                out_low[o, c, q] = np.inf
                row = (o * codes + c) * inner + q
                for m in range(k):
                    flat_rank[row, m] = -1
                for s in range(lo[c], hi[c]):
                    out_high[o, c, q] = max(out_high[o, c, q], high[o, s, q])
                    out_low[o, c, q] = min(out_low[o, c, q], low[o, s, q])
                    for m in range(k):
                        if rank[o, s, q, m] < 0:
                            break
                        insert(flat_top, flat_rank, row, top[o, s, q, m], rank[o, s, q, m])


def empty_values(shape: tuple[int, ...], top_k: int) -> Values:
    """Accumulators of :data:`FIELDS` for cells of ``shape``, with ``max(top_k, 1)`` contributions kept."""
    k = max(top_k, 1)
    return {
        "counts": np.zeros(shape, dtype=np.int64),
        "key_sums": np.zeros(shape, dtype=np.uint64),
        "nz_key_sums": np.zeros(shape, dtype=np.uint64),
        "sums": np.zeros(shape, dtype=np.float64),
        "high": np.full(shape, -np.inf),
        "low": np.full(shape, np.inf),
        "top": np.full((*shape, k), np.nan),
        "rank": np.full((*shape, k), -1, dtype=np.int64),
    }


def flat(acc: Values) -> list[npt.NDArray[Any]]:
    """The accumulators in :data:`FIELDS` order, viewed with one axis of cells (and one of contributions)."""
    n = acc["counts"].size
    return [acc[f].reshape(n, -1) if f in ("top", "rank") else acc[f].reshape(n) for f in FIELDS]


def add_indexed(
    acc: Values, cells: npt.NDArray[np.int64], values: npt.NDArray[np.float64], keys: npt.NDArray[np.uint64], first: int
) -> None:
    """Add records to the flat cells ``cells`` gives (negative: none); record ``r`` ranks ``first + r``."""
    _add_indexed(cells, values, keys, first, *flat(acc))


def merge_values(acc: Values, other: Values) -> None:
    """Add ``other``'s accumulators (same cells) into ``acc``: sums add, extremes and top lists merge."""
    for name in SUMMED:
        acc[name] += other[name]
    n, k = acc["counts"].size, acc["top"].shape[-1]
    pair: Values = {
        f: np.stack([acc[f].reshape(n, -1), other[f].reshape(n, -1)]).reshape(1, 2, n, k) for f in ("top", "rank")
    }
    pair |= {f: np.stack([acc[f].reshape(n), other[f].reshape(n)]).reshape(1, 2, n) for f in ("high", "low")}
    out: Values = {"top": np.full((1, 1, n, k), np.nan), "rank": np.empty((1, 1, n, k), dtype=np.int64)}
    out |= {f: np.empty((1, 1, n)) for f in ("high", "low")}
    merge_along(
        pair["top"], pair["rank"], pair["high"], pair["low"], np.zeros(1, dtype=np.int64), np.full(1, 2, dtype=np.int64),
        out["top"], out["rank"], out["high"], out["low"],
    )  # fmt: skip
    for f in ("top", "rank", "high", "low"):
        acc[f][...] = out[f].reshape(acc[f].shape)


def value_margins(bottom: Values, bds: list[Breakdown], expand: Expand) -> Values:
    """Every total and subtotal: summed fields by ``expand``, extremes and top lists merged axis by axis."""
    out = {name: expand(bottom[name], bds) for name in SUMMED}
    top, rank, high, low = (bottom[f] for f in ("top", "rank", "high", "low"))
    for d, bd in enumerate(bds):
        shape = high.shape
        outer, inner, k = math.prod(shape[:d]), math.prod(shape[d + 1 :]), top.shape[-1]
        grown = (*shape[:d], bd.lo.size, *shape[d + 1 :])
        new_top, new_rank = np.full((*grown, k), np.nan), np.full((*grown, k), -1, dtype=np.int64)
        new_high, new_low = np.empty(grown), np.empty(grown)
        merge_along(
            top.reshape(outer, shape[d], inner, k), rank.reshape(outer, shape[d], inner, k),
            high.reshape(outer, shape[d], inner), low.reshape(outer, shape[d], inner), bd.lo, bd.hi,
            new_top.reshape(outer, bd.lo.size, inner, k), new_rank.reshape(outer, bd.lo.size, inner, k),
            new_high.reshape(outer, bd.lo.size, inner), new_low.reshape(outer, bd.lo.size, inner),
        )  # fmt: skip
        top, rank, high, low = new_top, new_rank, new_high, new_low
    return {**out, "top": top, "rank": rank, "high": high, "low": low}


def magnitude_cells(cells: Values, scale: KeyScale, top_k: int | None = None) -> MagnitudeCells:
    """The perturbation's input for every cell (flattened), from :func:`value_margins` (the first ``top_k`` kept)."""
    counts = cells["counts"].reshape(-1)
    sums = cells["sums"].reshape(-1)
    empty = counts == 0
    top = cells["top"].reshape(counts.size, -1)[:, :top_k]
    padded = np.full((counts.size, MAX_TOP), np.nan)
    padded[:, : top.shape[1]] = top
    with np.errstate(invalid="ignore"):
        means = np.where(empty, 0.0, sums / np.maximum(counts, 1))
        spreads = np.where(empty, 0.0, cells["high"].reshape(-1) - cells["low"].reshape(-1))
    return MagnitudeCells(
        sums=sums,
        counts=counts,
        top=padded,
        n_top=np.minimum(counts, top.shape[1]),
        means=means,
        spreads=spreads,
        keys=scale.cell_keys(cells["key_sums"].reshape(-1)),
        keys_nz=scale.cell_keys(cells["nz_key_sums"].reshape(-1)),
    )


def whole_numbers(name: str, column: pa.Array, where: str, drop: str = "") -> npt.NDArray[np.float64]:
    """A summed column as float64, refused unless numeric, complete and whole (so sums are exact in any order).

    ``where`` says what sums it (``summed by cube c3``, ``of tables.means``) and ``drop`` how else to
    get rid of the problem (`` or drop the mean``), in the error's sentence.
    """
    if not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)) or column.null_count:
        raise CubeguardError(f"column {name!r} {where} must be numeric without missing values; fix the column{drop}")
    values = np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)
    if not np.all(np.isfinite(values) & (values == np.round(values))) or np.abs(values).sum() >= 2**53:
        raise CubeguardError(
            f"column {name!r} {where} must hold whole numbers (sums are then exact in any order); round it, "
            "or express it in a smaller unit (cents, not euros)"
        )
    return values


# The cube's variables (internal store) for a summed column.


def sum_name(column: str) -> str:
    """The variable of a column's sums: exact in the original store, published after protection."""
    return f"{SUM_PREFIX}{column}"


def input_names(column: str, top_k: int) -> list[str]:
    """The internal variables beside ``sum.<column>`` that the perturbation reads (never published)."""
    return [f"nz_key_sum.{column}", f"max.{column}", f"min.{column}"] + [
        f"top{j}.{column}" for j in range(1, top_k + 1)
    ]


def summed_columns(cube: xr.Dataset) -> list[str]:
    """The columns whose sums ``cube`` holds (``sum.<column>`` variables), in variable order."""
    return [str(v)[len(SUM_PREFIX) :] for v in cube.data_vars if str(v).startswith(SUM_PREFIX)]


def unperturbed(cube: xr.Dataset) -> list[str]:
    """Summed columns whose perturbation inputs are still in ``cube`` (their sums are exact)."""
    return [c for c in summed_columns(cube) if f"nz_key_sum.{c}" in cube.data_vars]


def stored_variables(cells: Values, column: str, top_k: int) -> dict[str, npt.NDArray[Any]]:
    """The cube variables of one summed column, from its accumulators with margins (``count``/``key_sum`` aside)."""
    names = input_names(column, top_k)
    out = {sum_name(column): cells["sums"], names[0]: cells["nz_key_sums"], names[1]: cells["high"]}
    out[names[2]] = cells["low"]
    for j in range(top_k):
        out[names[3 + j]] = np.ascontiguousarray(cells["top"][..., j])
    return out


def stored_cells(cube: xr.Dataset, column: str, scale: KeyScale) -> MagnitudeCells:
    """The perturbation's input for every cell of ``cube`` (flattened) from its stored variables."""
    tops = sorted(
        (str(v) for v in cube.data_vars if str(v).startswith("top") and str(v).endswith(f".{column}")),
        key=lambda v: int(v[3 : -len(column) - 1]),
    )
    shape = cube["count"].shape
    cells: Values = {
        "counts": np.asarray(cube["count"].values),
        "key_sums": np.asarray(cube["key_sum"].values),
        "nz_key_sums": np.asarray(cube[f"nz_key_sum.{column}"].values),
        "sums": np.asarray(cube[sum_name(column)].values),
        "high": np.asarray(cube[f"max.{column}"].values),
        "low": np.asarray(cube[f"min.{column}"].values),
        "top": np.stack([np.asarray(cube[t].values) for t in tops], axis=-1) if tops else np.full((*shape, 0), np.nan),
    }
    return magnitude_cells(cells, scale)

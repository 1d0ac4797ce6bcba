"""Published sums of the additive magnitude types (``mean``, ``sum``) in two compiled loops: the serving path.

A cell of type ``mean`` or ``sum`` has one noise component, scaled by its mean or sum (cellKey
1.0.2's ``.perturb_cell_flex``/``_simple``; Gießing 2016, PSD 2016; Handbook on SDC v2, 5.4 and
5.7), so its published sum needs only its count, sum and key sum. :func:`perturbed_sums` builds
every intermediate array first (cell keys, component keys in long double, magnitudes, table
types); here a loop over the cells with records gives each one's component key from its key
sum (:func:`~cubeguard.ckm.keys.cell_key`, :func:`.first_key.first_key`), and a second one the
sum rounded to ``unit``: the very component of :mod:`.perturb` (x_delta, rescaling, the lookup of
:mod:`.lookup`, x_hat; the R ``sum`` of one ``x_hat`` is ``0 + x_hat``). The few keys R writes in
scientific notation, or with one decimal, take the reference (:func:`.keys.scramble_keys_reference`)
and the second loop once more, over those cells. (Both in one loop cost a third more.)

The lookup is written out in the loop: in numba, every call that takes an array costs a
reference count in and out (atomic), which was four times the rest of a cell's work. A point's
first row with ``ub > ck`` is found from an index by the key's first 8 bits (:func:`row_index`)
and a step or two, instead of a bisection whose every step was mispredicted.

The result is :func:`perturbed_sums` (then rounded to ``unit``) bit for bit, for every cell;
cells without records publish 0 (as the cell key step does), unless ``topk`` is
``cellkey_1_0_2``, whose cells are all perturbed as cellKey perturbs them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from numba import njit

from cubeguard.ckm.keys import KeyScale, cell_key
from cubeguard.ckm.magnitude.first_key import first_key
from cubeguard.ckm.magnitude.keys import scramble_keys_reference
from cubeguard.ckm.magnitude.lookup import UNDEFINED, KernelTable, kernel_table, lookup_v
from cubeguard.ckm.magnitude.params import FlexParams, MagnitudeParams
from cubeguard.ckm.magnitude.perturb import x_delta_of, x_hat_of
from cubeguard.ckm.magnitude.ptable import TYPES, NumPTable, separation
from cubeguard.errors import InternalError

FloatArray = npt.NDArray[np.float64]
BUCKETS = 256  # a power of two: ``ck * BUCKETS`` is exact and its integer part is ck's bucket
_EVEN, _ODD = TYPES.index("even"), TYPES.index("odd")


@dataclass(frozen=True, eq=False)
class AdditiveSums:
    """One magnitude perturbation of type ``mean`` or ``sum``, prepared for :meth:`published`.

    Attributes:
        params: the parameters (``top_k`` is 1; no cell gets ``mu_c``).
        unit: published sums are multiples of it (``np.round(sum / unit) * unit``).
        table: the p-table, flattened (:func:`.lookup.kernel_table`).
        rows: :func:`row_index` of ``table``.
        options: same_key, type mean, flex, even/odd tables, every cell (``topk: cellkey_1_0_2``).
        numbers: ``fp, p_small, p_large, q`` (simple: ``inf, p, p, 1``), the separation point, the unit.
    """

    params: MagnitudeParams
    unit: float
    table: KernelTable
    rows: npt.NDArray[np.int64]
    options: tuple[bool, bool, bool, bool, bool]
    numbers: tuple[float, float, float, float, float, float]

    @classmethod
    def of(cls, params: MagnitudeParams, ptable: NumPTable, unit: float = 1.0) -> AdditiveSums:
        """Prepare ``params`` with ``ptable`` (raises as :func:`.ptable.separation` does)."""
        if params.type not in ("mean", "sum") or params.top_k != 1:
            raise InternalError(f"the additive serving path got type {params.type!r}; this is a bug in cubeguard")
        mult, table = params.mult, kernel_table(ptable)
        if isinstance(mult, FlexParams):
            fp, p_small, p_large, q = mult.fp, mult.p_small, mult.p_large, mult.q
        else:  # as .perturb reads simple parameters
            fp, p_small, p_large, q = np.inf, mult.p, mult.p, 1.0
        parity = "all" not in ptable.types()
        options = (
            params.same_key,
            params.type == "mean",
            isinstance(mult, FlexParams),
            parity,
            params.topk != "correct",
        )
        numbers = (fp, p_small, p_large, q, separation(params, ptable).zs, unit)
        return cls(params, unit, table, row_index(table), options, numbers)

    def published(
        self,
        counts: npt.NDArray[np.int64],
        sums: FloatArray,
        key_sums: npt.NDArray[np.uint64],
        nz_key_sums: npt.NDArray[np.uint64],
        scale: KeyScale,
    ) -> FloatArray:
        """Published sums of cells given by their counts, sums and record-key sums (any shape, the same for all)."""
        shape = np.shape(counts)
        n = np.ascontiguousarray(counts, dtype=np.int64).ravel()
        s = np.ascontiguousarray(sums, dtype=np.float64).ravel()
        keys = np.ascontiguousarray(key_sums if self.params.use_zero_rkeys else nz_key_sums, dtype=np.uint64).ravel()
        out = np.empty(n.size)
        cells, first = np.empty(n.size, dtype=np.int64), np.empty(n.size)
        live, slow = _first_keys(n, keys, scale.compiled(), self.options, cells, first, out)
        _published(cells[:live], first[:live], n, s, self.options, self.numbers, self.table, self.rows, out)
        if slow:
            at = cells[cells.size - slow :]
            first = scramble_keys_reference(scale.cell_keys(keys[at]), 1, self.params.same_key)[:, 0]
            _published(at, first, n, s, self.options, self.numbers, self.table, self.rows, out)
        return out.reshape(shape)


def row_index(table: KernelTable) -> npt.NDArray[np.int64]:
    """Per point ``k`` and bucket ``b``: the first row of the point whose bound exceeds ``b / BUCKETS``.

    Entry ``k * BUCKETS + b``. A key in bucket ``b`` is at least ``b / BUCKETS``, so its row is
    this one or a later one; bounds ascend to 1 (:class:`.ptable.NumPTable` checks it).
    """
    edges = np.arange(BUCKETS) / BUCKETS
    index = [
        s + np.searchsorted(table.ub[s:e], edges, side="right")
        for s, e in zip(table.row_start, table.row_end, strict=True)
    ]
    return np.concatenate(index).astype(np.int64) if index else np.empty(0, dtype=np.int64)


@njit(nogil=True, cache=True, error_model="numpy")
def _first_keys(
    counts: np.ndarray,
    key_sums: np.ndarray,
    scale: tuple[bool, np.uint64, float],
    options: tuple[bool, bool, bool, bool, bool],
    cells: np.ndarray,
    keys: np.ndarray,
    out: np.ndarray,
) -> tuple[int, int]:  # pragma: no cover - compiled
    """The cells to perturb and their first component keys, from the front of ``cells`` and ``keys``.

    Cells whose key needs the reference go to the back of ``cells``; cells without records (unless
    every cell is perturbed) publish 0. Returns how many cells are at the front and at the back.
    """
    same_key, every = options[0], options[4]
    live, slow = 0, 0
    for cell in range(counts.size):
        if counts[cell] == 0 and not every:
            out[cell] = 0.0
            continue
        key, exact = first_key(cell_key(key_sums[cell], scale), same_key)
        if exact:
            cells[live], keys[live] = cell, key
            live += 1
        else:
            slow += 1
            cells[cells.size - slow] = cell
    return live, slow


@njit(nogil=True, cache=True, error_model="numpy")
def _published(
    cells: np.ndarray,
    keys: np.ndarray,
    counts: np.ndarray,
    sums: np.ndarray,
    options: tuple[bool, bool, bool, bool, bool],
    numbers: tuple[float, float, float, float, float, float],
    table: KernelTable,
    rows: np.ndarray,
    out: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """The published sums of ``cells`` whose first component keys are ``keys``."""
    _, mean, flex, parity, _ = options
    fp, p_small, p_large, q, zs, unit = numbers
    first, points, ub, noise, max_i = table.first, table.points, table.ub, table.v, table.max_i
    for k in range(cells.size):
        cell, key = cells[k], keys[k]
        count, cv = counts[cell], sums[cell]
        x_hat = 0.0
        if not (key == 0.0 or (flex and cv == 0.0)):  # .perturb's _kernel: the cell is left as it is
            x = (0.0 if count == 0 else cv / count) if mean else cv
            kind = (_EVEN if count % 2 == 0 else _ODD) if parity else 0
            x_delta, kind, _, _, zero_pert = x_delta_of(cv, x, kind, flex, fp, p_small, p_large, q, 1.0, zs, False)
            bucket = np.int64(key * BUCKETS) if 0.0 <= key < 1.0 else -1  # NaN or 10 ("1" rotated): -1
            a = abs(cv / x_delta)
            capped = max_i[kind] if a > max_i[kind] else a
            if not zero_pert and bucket >= 0 and capped == capped:
                below, point = first[kind], -1  # .lookup.lookup_v, written out
                for p in range(first[kind], first[kind + 1]):
                    if points[p] == capped:
                        point = p
                        break
                    if points[p] < capped:
                        below = p
                low = rows[(below if point < 0 else point) * BUCKETS + bucket]
                while ub[low] <= key:
                    low += 1
                v = noise[low]
                if point < 0:
                    up = rows[(below + 1) * BUCKETS + bucket]
                    while ub[up] <= key:
                        up += 1
                    lam = (capped - points[below]) / (points[below + 1] - points[below])
                    v = (1.0 - lam) * noise[low] + lam * noise[up]
                x_hat = x_hat_of(cv, x_delta, v, 0.0)
            elif not zero_pert:  # a = 0/0, or a key R read as NaN or 10 ("1" rotated): rare
                x_hat = _looked_up(cv, x_delta, kind, key, table)
        out[cell] = np.rint((cv + (0.0 + x_hat)) / unit) * unit  # R's sum of one x_hat is 0 + x_hat


@njit(nogil=True, cache=True, error_model="numpy")
def _looked_up(xo: float, x_delta: float, kind: int, key: float, table: KernelTable) -> float:  # pragma: no cover
    """``x_hat`` from :func:`.lookup.lookup_v` itself (0 where it is undefined)."""
    found = np.empty(7)
    if lookup_v(kind, key, abs(xo / x_delta), table, found) == UNDEFINED:
        return 0.0
    return x_hat_of(xo, x_delta, found[1], 0.0)

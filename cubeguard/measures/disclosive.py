"""Directly disclosive cells with reference to a k-coalition, and record swapping's success measures.

Handbook on SDC v2, 5.9, after Lupp and Langsrud (2021): a cell ``c`` is *directly disclosive with
reference to k* if there is a published marginal cell ``p_c`` within a sensitive variable such that
``c`` contributes to ``p_c`` and ``|p_c| - k <= |c|``: an attacker who knows ``k`` contributors can
deduce that every other unit of ``p_c`` is in ``c`` (``k = 0``: the whole group shares the attribute).

In a cube the marginal cells of ``c`` within sensitive dimension ``d`` are the cells with ``c``'s codes
on the other dimensions and an ancestor of ``c``'s code on ``d`` (parent, grandparent, ..., total).
Two readings of the definition, stated here because the Handbook leaves them open:

* ``|p_c| > k`` is also required: when the coalition is the whole marginal, nobody else's
  attribute is learnt (and zero cells can then never be disclosive);
* an ancestor reached only through codes that are sole children is skipped: the child is the same
  group as its parent, so equality discloses nothing.

On a protected cube the test uses published values: the result is the *apparent* disclosures an
attacker sees, true or not. Frend et al. (2011), section 4, measure record swapping by "the
proportion of real cases ... of attribute disclosure in a given table that have been removed" and
"the proportion of the apparent attribute disclosures that are actually false (ie. cases of
attribute disclosure created by imputed or swapped records)"; :func:`swap_success` computes both,
with attribute disclosure read as direct disclosure with reference to ``k`` (default 0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
import xarray as xr

from cubeguard.cubes.tree import DimHierarchy, hierarchies
from cubeguard.measures._arrays import NumArray, check_same_cells, count_array, numeric
from cubeguard.measures.errors import MeasureConfigError
from cubeguard.measures.select import check_dims

_SHORT_RUN = 1024  # bytes: runs of contiguous cells shorter than this are processed level by level


def _cube(obj: xr.Dataset | xr.DataArray) -> xr.DataArray:
    da = count_array(obj)
    if not isinstance(da, xr.DataArray):
        raise MeasureConfigError("disclosive cells need a cube with hierarchy coordinates, not a plain array")
    return da


def _ancestor_levels(h: DimHierarchy) -> list[npt.NDArray[np.int64]]:
    """Per level ``L``: each code's ``L``-th ancestor, or -1 if it has none or covers it alone."""
    n_children = h.n_children
    has_parent = h.parent >= 0
    sole = np.zeros(len(h.codes), dtype=bool)
    sole[has_parent] = n_children[h.parent[has_parent]] == 1
    cur = np.arange(len(h.codes))
    covered = np.ones(len(h.codes), dtype=bool)
    levels: list[npt.NDArray[np.int64]] = []
    while True:
        active = h.parent[cur] >= 0
        if not active.any():
            return levels
        covered &= np.where(active, sole[cur], True)
        cur = np.where(active, h.parent[cur], cur)
        levels.append(np.where(active & ~covered, cur, -1).astype(np.int64))


def _narrow(values: NumArray) -> NumArray:
    """Non-negative integer counts as int32 when they fit, else unchanged (half the memory traffic)."""
    if values.dtype.kind == "i" and values.size and values.min() >= 0 and values.max() < 2**31 - 1:
        return values.astype(np.int32)
    return values


def _threshold(marginal: NumArray, k: int) -> NumArray:
    """``|p_c| - k`` where ``|p_c| > k``, else a value no count reaches: ``c`` is flagged iff ``c >= it``."""
    never = np.inf if marginal.dtype.kind == "f" else np.iinfo(marginal.dtype).max
    out: NumArray = np.where(marginal > k, marginal - k, never).astype(marginal.dtype)
    return out


def _along_slabs(values: NumArray, out: npt.NDArray[np.bool_], axis: int, h: DimHierarchy, k: int) -> None:
    """Flag cells along ``axis`` code by code: each code's slab against its ancestors' thresholds."""
    outer = int(np.prod(values.shape[:axis], dtype=np.int64))
    v3 = values.reshape(outer, values.shape[axis], -1)
    o3 = out.reshape(v3.shape)
    hit = np.empty((outer, v3.shape[2]), dtype=bool)
    thresholds: dict[int, NumArray] = {}
    for anc_of in _ancestor_levels(h):
        for c in np.flatnonzero(anc_of >= 0).tolist():
            a = int(anc_of[c])
            if a not in thresholds:
                thresholds[a] = _threshold(v3[:, a, :], k)
            np.greater_equal(v3[:, c, :], thresholds[a], out=hit)
            o3[:, c, :] |= hit


def _along_levels(values: NumArray, out: npt.NDArray[np.bool_], axis: int, h: DimHierarchy, k: int) -> None:
    """Flag cells along ``axis`` level by level, the whole cube at once (for short inner strides)."""
    shape = [1] * values.ndim
    shape[axis] = -1
    for anc_of in _ancestor_levels(h):
        valid = anc_of >= 0
        marginal = np.take(values, np.where(valid, anc_of, 0), axis=axis)
        hit = marginal > k
        hit &= valid.reshape(shape)
        marginal -= k
        hit &= values >= marginal
        out |= hit


def _disclosive_cells(values: NumArray, hier: list[tuple[int, DimHierarchy]], k: int) -> npt.NDArray[np.bool_]:
    """Directly disclosive cells of ``values`` along the given ``(axis, hierarchy)`` pairs.

    Along an axis whose slabs are long contiguous runs, every code's slab is compared with a
    threshold slab of each ancestor (two passes per code and level); along the last axes, where a
    code's cells are scattered over every cache line, whole-cube passes per level are cheaper.
    """
    values = np.ascontiguousarray(values)
    out = np.zeros(values.shape, dtype=bool)
    for axis, h in hier:
        inner = int(np.prod(values.shape[axis + 1 :], dtype=np.int64))
        along = _along_slabs if inner * values.itemsize >= _SHORT_RUN else _along_levels
        along(values, out, axis, h, k)
    return out


def directly_disclosive(
    cube: xr.Dataset | xr.DataArray, coalition: int = 1, sensitive_dims: Sequence[str] | None = None
) -> xr.DataArray:
    """Which cells of ``cube`` are directly disclosive with reference to a ``coalition``-coalition.

    Handbook on SDC v2, 5.9 (Lupp and Langsrud 2021); see the module docstring for the marginal
    cells considered. ``sensitive_dims`` defaults to every dimension.

    Returns:
        A boolean DataArray with the cube's cells.

    Raises:
        MeasureConfigError: for a negative coalition or an unknown sensitive dimension.
    """
    if coalition < 0:
        raise MeasureConfigError(f"the coalition size k must be 0 or more, got {coalition}")
    da = _cube(cube)
    dims = [str(d) for d in da.dims] if sensitive_dims is None else list(sensitive_dims)
    check_dims(da, dims, "sensitive dimensions")
    hier = hierarchies(da)
    values = _narrow(numeric(da))
    order = [(da.dims.index(d), hier[d]) for d in dims]
    out = _disclosive_cells(values, order, coalition)
    return xr.DataArray(out, coords=da.coords, dims=da.dims, name="disclosive")


class DisclosiveCells(NamedTuple):
    """Directly disclosive cells before and after protection (counts and shares of all cells)."""

    original: int
    protected: int
    both: int
    share_original: float
    share_protected: float


def disclosive_cells(
    original: xr.Dataset | xr.DataArray,
    protected: xr.Dataset | xr.DataArray,
    coalition: int = 1,
    sensitive_dims: Sequence[str] | None = None,
) -> DisclosiveCells:
    """Count directly disclosive cells in the original and (apparent ones) in the protected cube.

    ``both`` counts cells disclosive in both, i.e. apparent disclosures that are true. Shares are of
    all cells of the cube (Handbook on SDC v2, 5.9: "the share of directly disclosive cells in their
    total number can be a good measure of primary disclosure risk").
    """
    o, p = _cube(original), _cube(protected)
    check_same_cells(o, p)
    before = directly_disclosive(o, coalition, sensitive_dims).values
    after = directly_disclosive(p, coalition, sensitive_dims).values
    n = before.size
    nb, na = int(before.sum()), int(after.sum())
    return DisclosiveCells(nb, na, int((before & after).sum()), nb / n if n else math.nan, na / n if n else math.nan)


class SwapSuccess(NamedTuple):
    """Frend et al. (2011), section 4: the two success measures of record swapping."""

    real: int
    apparent: int
    removed_share: float
    false_share: float


def swap_success(
    original: xr.Dataset | xr.DataArray,
    swapped: xr.Dataset | xr.DataArray,
    coalition: int = 0,
    sensitive_dims: Sequence[str] | None = None,
    imputed: xr.Dataset | xr.DataArray | None = None,
) -> SwapSuccess:
    r"""Share of real attribute disclosures removed, and share of apparent ones that are false.

    Frend et al. (2011), section 4. A *real* case is a cell directly disclosive (reference
    ``coalition``) in the original cube that holds at least one record not created by imputation
    (``imputed``: the cube of imputed records only; ``None`` means none imputed). An *apparent* case
    is a cell directly disclosive in the swapped cube. ``removed_share = |real \ apparent| / |real|``
    and ``false_share = |apparent \ real| / |apparent|``; ``nan`` when the denominator is 0.
    """
    o, s = _cube(original), _cube(swapped)
    check_same_cells(o, s)
    real = directly_disclosive(o, coalition, sensitive_dims).values
    if imputed is not None:
        imp = _cube(imputed)
        check_same_cells(o, imp)
        real &= numeric(o) - numeric(imp) > 0
    apparent = directly_disclosive(s, coalition, sensitive_dims).values
    n_real, n_app = int(real.sum()), int(apparent.sum())
    removed = int((real & ~apparent).sum()) / n_real if n_real else math.nan
    false = int((apparent & ~real).sum()) / n_app if n_app else math.nan
    return SwapSuccess(n_real, n_app, removed, false)

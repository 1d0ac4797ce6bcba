"""Turning cubes, tables and plain arrays into aligned numpy arrays of counts."""

from __future__ import annotations

import math
from typing import Any, NamedTuple, TypeAlias

import numpy as np
import numpy.typing as npt
import xarray as xr

from cubeguard.cubes.tree import InvalidCubeError
from cubeguard.measures.errors import CubeMismatchError, NegativeCountError

Counts: TypeAlias = "xr.Dataset | xr.DataArray | npt.ArrayLike"
NumArray: TypeAlias = npt.NDArray[Any]


def count_array(obj: Counts) -> xr.DataArray | NumArray:
    """The ``count`` variable of a Dataset, or the object itself (DataArray or array-like)."""
    if isinstance(obj, xr.Dataset):
        if "count" not in obj.data_vars:
            raise InvalidCubeError("the cube has no 'count' variable; pass a cube with one")
        return obj["count"]
    if isinstance(obj, xr.DataArray):
        return obj
    return np.asarray(obj)


def numeric(values: npt.ArrayLike) -> NumArray:
    """``values`` as int64 when integral (bool included), else float64."""
    a = np.asarray(values)
    if a.dtype.kind in "biu":
        return a.astype(np.int64, copy=False)
    return a.astype(np.float64, copy=False)


def pair(original: Counts, protected: Counts) -> tuple[NumArray, NumArray]:
    """Aligned numeric arrays of the two objects; raise if their cells differ."""
    o, p = count_array(original), count_array(protected)
    if isinstance(o, xr.DataArray) and isinstance(p, xr.DataArray):
        check_same_cells(o, p)
    a, b = numeric(o), numeric(p)
    if a.shape != b.shape:
        raise CubeMismatchError(
            f"original has shape {a.shape} but protected has {b.shape}; compare tables with the same cells"
        )
    return a, b


def check_same_cells(original: xr.DataArray, protected: xr.DataArray) -> None:
    """Raise unless both have the same dimensions, in the same order, with the same codes."""
    if original.dims != protected.dims:
        raise CubeMismatchError(
            f"original has dimensions {original.dims} but protected has {protected.dims}; "
            "compare cubes with the same dimensions in the same order"
        )
    bad = [
        str(d)
        for d in original.dims
        if d in original.indexes
        and (d not in protected.indexes or not original.indexes[d].equals(protected.indexes[d]))
    ]
    if bad:
        raise CubeMismatchError(
            f"codes differ between original and protected along {', '.join(bad)}; "
            "compare cubes with the same codes in the same order"
        )


def check_nonnegative(values: NumArray, what: str) -> None:
    """Raise :class:`NegativeCountError` if any value is negative."""
    if values.size and values.min() < 0:
        raise NegativeCountError(f"{what} needs non-negative counts but got {values.min()}; publish counts >= 0")


class BeforeAfter(NamedTuple):
    """A statistic on the original and on the protected table."""

    original: float
    protected: float

    @property
    def relative_change(self) -> float:
        """``(protected - original) / original``; ``nan`` when the original is 0 or ``nan``."""
        if self.original == 0 or math.isnan(self.original):
            return math.nan
        return (self.protected - self.original) / self.original

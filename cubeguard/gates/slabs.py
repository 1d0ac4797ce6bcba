"""Reading an original/protected cube pair slab by slab along the leading dimension.

A cube from :func:`cubeguard.cubes.store.open_cube` is lazy and chunked along its leading dimensions
(:func:`cubeguard.cubes.store.chunks_for`), so the gates read it in slabs of whole chunks along the
leading dimension: every other dimension is whole in a slab, and a large cube is never held whole
in memory (nor twice).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import xarray as xr

from cubeguard.cubes.tree import hierarchies
from cubeguard.errors import CubeguardError

DEFAULT_SLAB_CELLS = 4_000_000
IntArray = npt.NDArray[np.int64]


class GateInputError(CubeguardError):
    """The cubes cannot be gated: no ``count``, different cells, or missing counts."""


@dataclass(frozen=True)
class Layout:
    """Dimensions, codes and parent positions of a cube, shared by all its slabs.

    Attributes:
        dims: dimension names, in the order of the original's ``count``.
        codes: per dimension, its codes in coordinate (pre-)order.
        parent: per dimension, each position's parent position (-1 for the total).
    """

    dims: tuple[str, ...]
    codes: tuple[tuple[str, ...], ...]
    parent: tuple[IntArray, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        """Positions per dimension."""
        return tuple(len(c) for c in self.codes)

    @property
    def cells(self) -> int:
        """Cells of the cube."""
        return int(np.prod(self.shape, dtype=np.int64))


def _count(cube: xr.Dataset, role: str) -> xr.DataArray:
    if "count" not in cube.data_vars:
        raise GateInputError(
            f"the {role} cube {cube.attrs.get('cube_id', '?')!r} has no 'count' variable; pass a cube Dataset"
        )
    return cube["count"]


def layout(original: xr.Dataset, protected: xr.Dataset) -> tuple[Layout, xr.DataArray, xr.DataArray]:
    """The pair's layout and both ``count`` arrays, the protected one in the original's dimension order.

    Raises:
        GateInputError: if a cube has no ``count``, or the two differ in dimensions or codes.
        cubeguard.cubes.tree.InvalidCubeError: if a dimension breaks the cube convention.
    """
    o, p = _count(original, "original"), _count(protected, "protected")
    if set(o.dims) != set(p.dims):
        raise GateInputError(f"original dims {list(o.dims)} differ from protected dims {list(p.dims)}")
    if not o.dims:
        raise GateInputError("a cube needs at least one dimension")
    p = p.transpose(*o.dims)
    bad = [str(d) for d in o.dims if not np.array_equal(original[d].values, protected[d].values)]
    if bad:
        raise GateInputError(f"original and protected cubes have different codes along {bad}; gate matching cubes")
    found = hierarchies(o)
    dims = tuple(str(d) for d in o.dims)
    return Layout(dims, tuple(found[d].codes for d in dims), tuple(found[d].parent for d in dims)), o, p


def slab_rows(count: xr.DataArray, slab_cells: int) -> int:
    """Positions of the leading dimension per slab: about ``slab_cells`` cells, whole stored chunks."""
    rest = int(np.prod(count.shape[1:], dtype=np.int64))
    rows = max(1, slab_cells // max(rest, 1))
    if count.chunks:
        chunk = int(count.chunks[0][0])
        rows = max(chunk, rows // chunk * chunk)
    return rows


def _values(count: xr.DataArray, lo: int, hi: int, role: str) -> IntArray:
    values = np.asarray(count.data[lo:hi])
    if values.dtype.kind == "f" and np.isnan(values).any():
        raise GateInputError(f"the {role} 'count' has missing values; every cell needs a count")
    return values.astype(np.int64, copy=False)


def iter_slabs(
    original: xr.DataArray | None, protected: xr.DataArray, slab_cells: int = DEFAULT_SLAB_CELLS
) -> Iterator[tuple[int, IntArray | None, IntArray]]:
    """Yield ``(lo, original slab, protected slab)`` along the leading dimension (original None if not read).

    Raises:
        GateInputError: if a count is missing (NaN).
    """
    rows = slab_rows(protected, slab_cells)
    n = protected.shape[0]
    for lo in range(0, n, rows):
        hi = min(lo + rows, n)
        o = None if original is None else _values(original, lo, hi, "original")
        yield lo, o, _values(protected, lo, hi, "protected")

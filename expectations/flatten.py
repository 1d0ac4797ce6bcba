"""A cube (or an original/protected pair) as a flat table: one row per cell, for Great Expectations.

Columns, in this order:

* one categorical column per dimension, named by the dimension (``GEO.2``), holding the cell's code;
  its categories are the dimension's index in pre-order, so the category codes are the cell's
  positions in the cube;
* ``<dim>.parent`` per dimension (categorical): the parent code of the cell's code along that
  dimension ("" for the total), which the additivity check needs;
* ``published``: the protected cube's ``count`` (int64);
* ``original``: the original cube's ``count`` (int64), when the original is given.

Rows are in the cubes' C order (last dimension fastest). The values are read one slab of about
``chunk_cells`` cells at a time along the leading dimension, so a lazy (Dask-backed) cube from
:func:`cubeguard.cubes.store.open_cube` is never held twice in memory; :func:`iter_flat` yields the
slabs as separate frames for consumers that stream.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd
import xarray as xr

from cubeguard.errors import CubeguardError

PUBLISHED = "published"
ORIGINAL = "original"
PARENT_SUFFIX = ".parent"
DEFAULT_CHUNK_CELLS = 1_000_000


class FlattenError(CubeguardError):
    """The cubes cannot be flattened (no ``count``, or original and protected differ in their cells)."""


@dataclass(frozen=True)
class _Layout:
    """Dimensions, shape and categorical dtypes shared by every slab of one cube."""

    dims: tuple[str, ...]
    shape: tuple[int, ...]
    code_dtypes: tuple[pd.CategoricalDtype, ...]
    parent_dtypes: tuple[pd.CategoricalDtype, ...]
    parent_of: tuple[npt.NDArray[np.intp], ...]  # per dim: category code of each position's parent

    @property
    def cells(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def slab_rows(self, chunk_cells: int) -> int:
        """Positions of the leading dimension per slab (at least one)."""
        rest = int(np.prod(self.shape[1:], dtype=np.int64))
        return max(1, chunk_cells // max(rest, 1))

    def positions(self, k: int, lo: int, hi: int) -> npt.NDArray[np.intp]:
        """Position along dimension ``k`` of every cell of the slab ``lo:hi`` of the leading dimension."""
        shape = (hi - lo, *self.shape[1:])
        n = shape[k]
        axis = np.arange(lo, hi) if k == 0 else np.arange(n)
        view = axis.reshape([-1 if i == k else 1 for i in range(len(shape))])
        return np.broadcast_to(view, shape).reshape(-1)


def _layout(cube: xr.Dataset, reserved: tuple[str, ...]) -> _Layout:
    if "count" not in cube.data_vars:
        raise FlattenError(f"cube {cube.attrs.get('cube_id', '?')!r} has no 'count' variable; pass a cube Dataset")
    dims = tuple(str(d) for d in cube["count"].dims)
    clash = [d for d in dims if d in reserved or d.endswith(PARENT_SUFFIX)]
    if clash:
        raise FlattenError(
            f"dimension name(s) {clash} clash with the flat table's columns {list(reserved)}; rename them"
        )
    code_dtypes, parent_dtypes, parent_of = [], [], []
    for d in dims:
        codes = [str(c) for c in cube[d].values.tolist()]
        parents = (
            [str(p) for p in cube[f"{d}{PARENT_SUFFIX}"].values.tolist()]
            if f"{d}{PARENT_SUFFIX}" in cube.coords
            else [""] * len(codes)
        )
        parent_cats = list(dict.fromkeys(parents))
        code_dtypes.append(pd.CategoricalDtype(codes))
        parent_dtypes.append(pd.CategoricalDtype(parent_cats))
        parent_of.append(pd.Index(parent_cats).get_indexer(parents).astype(np.intp))
    return _Layout(
        dims, tuple(int(cube.sizes[d]) for d in dims), tuple(code_dtypes), tuple(parent_dtypes), tuple(parent_of)
    )


def _check_same_cells(original: xr.Dataset, protected: xr.Dataset) -> None:
    o, p = original["count"], protected["count"]
    if o.dims != p.dims:
        raise FlattenError(f"original dims {list(o.dims)} differ from protected dims {list(p.dims)}")
    bad = [str(d) for d in o.dims if not np.array_equal(original[d].values, protected[d].values)]
    if bad:
        raise FlattenError(f"original and protected cubes have different codes along {bad}")


def _values(cube: xr.Dataset, dim0: str, lo: int, hi: int) -> npt.NDArray[np.int64]:
    da = cube["count"]
    if da.chunks is None and lo == 0 and hi == da.shape[0]:
        return np.asarray(da.values, dtype=np.int64).reshape(-1)
    return np.asarray(da.isel({dim0: slice(lo, hi)}).values, dtype=np.int64).reshape(-1)


def _frame(layout: _Layout, lo: int, hi: int, values: dict[str, npt.NDArray[np.int64]]) -> pd.DataFrame:
    columns: dict[str, object] = {}
    positions = [layout.positions(k, lo, hi) for k in range(len(layout.dims))]
    for k, d in enumerate(layout.dims):
        columns[d] = pd.Categorical.from_codes(positions[k], dtype=layout.code_dtypes[k])
    for k, d in enumerate(layout.dims):
        parents = layout.parent_of[k][positions[k]]
        columns[f"{d}{PARENT_SUFFIX}"] = pd.Categorical.from_codes(parents, dtype=layout.parent_dtypes[k])
    columns.update(values)
    return pd.DataFrame(columns, copy=False)


def _prepare(protected: xr.Dataset, original: xr.Dataset | None) -> tuple[_Layout, list[tuple[str, xr.Dataset]]]:
    """The layout and the ``(column, cube)`` pairs to read; every input check happens here."""
    layout = _layout(protected, (PUBLISHED, ORIGINAL))
    if not layout.dims:
        raise FlattenError("a cube needs at least one dimension")
    if original is None:
        return layout, [(PUBLISHED, protected)]
    _check_same_cells(original, protected)
    return layout, [(PUBLISHED, protected), (ORIGINAL, original)]


def _slabs(layout: _Layout, chunk_cells: int) -> Iterator[tuple[int, int]]:
    step = layout.slab_rows(chunk_cells)
    for lo in range(0, layout.shape[0], step):
        yield lo, min(lo + step, layout.shape[0])


def iter_flat(
    protected: xr.Dataset, original: xr.Dataset | None = None, *, chunk_cells: int = DEFAULT_CHUNK_CELLS
) -> Iterator[pd.DataFrame]:
    """Yield the flat table (see the module docstring) in slabs of about ``chunk_cells`` cells.

    Raises:
        FlattenError: if a cube has no ``count`` or the original's cells differ from the protected's.
    """
    layout, sources = _prepare(protected, original)
    for lo, hi in _slabs(layout, chunk_cells):
        yield _frame(layout, lo, hi, {name: _values(cube, layout.dims[0], lo, hi) for name, cube in sources})


def flatten(
    protected: xr.Dataset, original: xr.Dataset | None = None, *, chunk_cells: int = DEFAULT_CHUNK_CELLS
) -> pd.DataFrame:
    """The whole flat table of a cube or pair (see the module docstring), read slab by slab.

    The value columns are filled in place slab by slab, so peak memory is the result plus one slab
    (``pd.concat`` of :func:`iter_flat` would hold every slab and the result at once).

    Raises:
        FlattenError: if a cube has no ``count`` or the original's cells differ from the protected's.

    Examples:
        >>> import numpy as np, xarray as xr
        >>> cube = xr.Dataset(
        ...     {"count": (["SEX"], np.array([5, 2, 3]))},
        ...     coords={"SEX": ["0", "1", "2"], "SEX.parent": ("SEX", ["", "0", "0"])},
        ... )
        >>> flatten(cube).to_dict("list")
        {'SEX': ['0', '1', '2'], 'SEX.parent': ['', '0', '0'], 'published': [5, 2, 3]}
    """
    layout, sources = _prepare(protected, original)
    out = {name: np.empty(layout.cells, dtype=np.int64) for name, _ in sources}
    rest = layout.cells // max(layout.shape[0], 1)
    for lo, hi in _slabs(layout, chunk_cells):
        for name, cube in sources:
            out[name][lo * rest : hi * rest] = _values(cube, layout.dims[0], lo, hi)
    return _frame(layout, 0, layout.shape[0], out)

"""The controlled tables of SAFE as the heuristic reads them: every cell, its deviation and its bound.

A controlled table (Höhne 2011, section 2.1: ``Ay = a + d``) is a list of dimensions, each a
breakdown of one SAFE variable, with every code the breakdown selects (totals and subtotals too), so
each cell of a table is one controlled cell ``i``. An elementary cell (a combination of the
variables' finest categories) lies in the cells of a table given, per dimension, by the *chain* of
its category: the breakdown's codes that cover it, total first. The cells it lies in are the
product of its chains; two elementary cells share exactly the cells whose every coordinate lies in
the common prefix of their chains, which is what makes a move cheap to evaluate.

All tables live in one flat array of cells (``base[t]`` is table ``t``'s first cell), so the kernel
needs no Python objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cubeguard.cubes.margins import expand_ranges

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Dimension:
    """One dimension of a controlled table.

    Attributes:
        variable: index of the SAFE variable it reads.
        position: per finest category of that variable, its bottom position in the breakdown
            (-1: the category lies outside the breakdown, so its records are in no cell of the table).
        lo: per code of the breakdown (pre-order, the total first), the first bottom position it covers.
        hi: per code, one past the last bottom position it covers.
    """

    variable: int
    position: IntArray
    lo: IntArray
    hi: IntArray


@dataclass(frozen=True)
class Controlled:
    """Every controlled table flattened for the kernel.

    Attributes:
        nd: per table, its number of dimensions.
        var: per table and dimension, the variable (padded with -1).
        ptr: per table and dimension, where its categories' chain starts are in ``cstart``.
        cstart: chain starts into ``cval``; category ``c`` of (t, d) has ``cval[cstart[p + c]:cstart[p + c + 1]]``.
        cval: chain entries, each a code's offset (code index times the dimension's stride).
        base: per table, its first cell in the flat cell arrays.
        shapes: per table, its shape (codes per dimension).
        dims: per cell, how many of its coordinates are not a total (the paper's table dimension).
        span: the most cells of one table an elementary cell can lie in (a buffer size for the kernel).
        sources: the tables as given to :func:`build`, for :func:`tabulate`.
    """

    nd: IntArray
    var: IntArray
    ptr: IntArray
    cstart: IntArray
    cval: IntArray
    base: IntArray
    shapes: tuple[tuple[int, ...], ...]
    dims: npt.NDArray[np.int8]
    span: int = 1
    sources: tuple[tuple[Dimension, ...], ...] = ()

    @property
    def n_cells(self) -> int:
        """Controlled cells in all tables."""
        return int(self.dims.size)

    @property
    def strides(self) -> IntArray:
        """Per table and dimension, the step between its codes' cells (padded with 1)."""
        width = self.var.shape[1] if self.var.ndim == 2 else 1
        out = np.ones((len(self.shapes), width), dtype=np.int64)
        for t, shape in enumerate(self.shapes):
            out[t, : len(shape)] = _strides(shape)
        return out

    @property
    def arrays(self) -> tuple[IntArray, IntArray, IntArray, IntArray, IntArray, IntArray]:
        """The arrays the kernel takes, in its order."""
        return (self.nd, self.var, self.ptr, self.cstart, self.cval, self.base)


def build(tables: Sequence[Sequence[Dimension]]) -> Controlled:
    """Flatten ``tables`` (each a list of dimensions) for the kernel."""
    width = max((len(t) for t in tables), default=1)
    nd = np.array([len(t) for t in tables], dtype=np.int64)
    var = np.full((len(tables), width), -1, dtype=np.int64)
    ptr = np.zeros((len(tables), width), dtype=np.int64)
    starts: list[IntArray] = []
    values: list[IntArray] = []
    shapes = tuple(tuple(int(d.lo.size) for d in t) for t in tables)
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    base = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if tables else np.zeros(0, np.int64)
    n_starts = n_values = 0
    span = 1
    for t, table in enumerate(tables):
        strides = _strides(shapes[t])
        longest = 1
        for d, dim in enumerate(table):
            var[t, d] = dim.variable
            ptr[t, d] = n_starts
            lengths, entries = _chains(dim, strides[d])
            longest *= int(lengths.max(initial=1))
            starts.append(n_values + np.concatenate([[0], np.cumsum(lengths)]))
            values.append(entries)
            n_starts += lengths.size + 1
            n_values += entries.size
        span = max(span, longest)
    dims = [_cell_dims(s) for s in shapes]
    return Controlled(
        nd=nd,
        var=var,
        ptr=ptr,
        cstart=np.concatenate(starts).astype(np.int64) if starts else np.zeros(1, np.int64),
        cval=np.concatenate(values).astype(np.int64) if values else np.zeros(0, np.int64),
        base=base,
        shapes=shapes,
        dims=np.concatenate(dims) if dims else np.zeros(0, np.int8),
        span=span,
        sources=tuple(tuple(t) for t in tables),
    )


def tabulate(tables: Controlled, cats: IntArray, counts: IntArray) -> IntArray:
    """Every controlled cell's count (``A y``) of the elementary table ``counts`` (rows of ``cats``).

    Per table, the records are counted in its bottom cells (one ``bincount``, in float64: exact below
    2**53 records), then each axis is summed into its codes, totals and subtotals too, by the cubes'
    margin kernel (a code covers a range of bottom positions:
    :func:`~cubeguard.cubes.margins.expand_ranges`): linear in the elementary cells and the table's
    size, where adding every elementary cell to each cell holding it costs their product.
    """
    out = np.zeros(tables.n_cells, dtype=np.int64)
    for t, table in enumerate(tables.sources):
        bottoms = [max(int(d.hi.max(initial=0)), int(d.position.max(initial=-1)) + 1) for d in table]
        inside = np.ones(counts.size, dtype=bool)
        flat = np.zeros(counts.size, dtype=np.int64)
        for dim, n in zip(table, bottoms, strict=True):
            pos = dim.position[cats[:, dim.variable]]
            inside &= pos >= 0
            flat = flat * n + np.maximum(pos, 0)
        cube = np.bincount(flat[inside], weights=counts[inside], minlength=int(np.prod(bottoms, dtype=np.int64)))
        cube = cube.astype(np.int64).reshape(bottoms)
        for axis, dim in enumerate(table):
            cube = expand_ranges(cube, axis, dim.lo, dim.hi)
        out[tables.base[t] : tables.base[t] + cube.size] = cube.ravel()
    return out


def _strides(shape: tuple[int, ...]) -> list[int]:
    out = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        out[d] = out[d + 1] * shape[d + 1]
    return out


def _chains(dim: Dimension, stride: int) -> tuple[IntArray, IntArray]:
    """Per category, the offsets of the codes covering it (pre-order: total first), and their lengths."""
    pos = dim.position[:, None]
    covers = (dim.lo[None, :] <= pos) & (pos < dim.hi[None, :]) & (pos >= 0)
    lengths = covers.sum(axis=1).astype(np.int64)
    _, code = np.nonzero(covers)  # row-major: per category, codes in pre-order
    return lengths, (code * stride).astype(np.int64)


def _cell_dims(shape: tuple[int, ...]) -> npt.NDArray[np.int8]:
    """Per cell of a table, the number of coordinates that are not the total (code 0)."""
    count = np.zeros(shape, dtype=np.int8)
    for d, n in enumerate(shape):
        axis = (np.arange(n) != 0).astype(np.int8).reshape([n if k == d else 1 for k in range(len(shape))])
        count = count + axis
    return count.ravel()


def weights(original: IntArray) -> IntArray:
    """``w_i = int(log10(a_i))`` (Höhne 2011, equation 4 and Table 1); 0 for empty cells."""
    powers = 10 ** np.arange(1, 19, dtype=np.int64)
    found: IntArray = np.searchsorted(powers, original, side="right").astype(np.int64)
    return found

"""A published cube as the intruder reads it: codes, hierarchy, values, and cells shared with other cubes.

A cell is a set of units: the cube's population, and for every variable the code it takes (a
variable the cube does not cross, or its total code, means "any"). Two cubes of one population that
cross different variables or levels share cells: 5.3's ``GEO.L x SEX`` margin is the cell of 4.3
with the same codes. :func:`cell_keys` gives each cell one integer for the whole release, so the
attacks can line up the same cell in every cube that publishes it (Handbook on SDC v2, 5.2,
differencing across tables). Codes are those of the variable's classification, the same in every
breakdown of the variable (``attrs["variables"]`` names a cube dimension's variable).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import xarray as xr

from cubeguard.attack.intervals import IntArray, Relations
from cubeguard.errors import InternalError


@dataclass(frozen=True)
class CubeView:
    """One cube's public layout and published counts (and, to score an attack, its originals).

    Attributes:
        cube: the cube id.
        population: its population (cells of different populations are never the same units).
        dims: its dimensions, in order.
        variables: the variable of each dimension.
        codes: each dimension's codes, in pre-order.
        axes: each dimension's parent-children relations.
        published: the published counts.
        original: the original counts (never shown to the attack, only to score it), or None.
    """

    cube: str
    population: str
    dims: tuple[str, ...]
    variables: tuple[str, ...]
    codes: tuple[tuple[str, ...], ...]
    roots: tuple[str, ...]
    axes: tuple[Relations, ...]
    published: IntArray
    original: IntArray | None

    @classmethod
    def of(cls, published: xr.Dataset, original: xr.Dataset | None = None) -> CubeView:
        """From a published cube (``count``, ``<dim>.parent`` coordinates, ``variables`` and ``population`` attrs)."""
        dims = tuple(str(d) for d in published["count"].dims)
        names = published.attrs.get("variables") or {}
        if set(dims) - set(names):
            raise InternalError(f"cube {published.attrs.get('cube_id')} does not name the variable of every dimension")
        codes = tuple(tuple(str(c) for c in published[d].values) for d in dims)
        parents = [[str(p) for p in published[f"{d}.parent"].values] for d in dims]
        roots = tuple(c[p.index("")] for c, p in zip(codes, parents, strict=True))
        counts = np.asarray(published["count"].values, dtype=np.int64)
        orig = None if original is None else np.asarray(original["count"].transpose(*dims).values, dtype=np.int64)
        if orig is not None and orig.shape != counts.shape:
            raise InternalError(f"cube {published.attrs.get('cube_id')}: original and published cells differ")
        return cls(
            cube=str(published.attrs.get("cube_id", "")),
            population=str(published.attrs.get("population", "total")),
            dims=dims,
            variables=tuple(str(names[d]) for d in dims),
            codes=codes,
            roots=roots,
            axes=tuple(Relations.of_codes(c, p) for c, p in zip(codes, parents, strict=True)),
            published=counts,
            original=orig,
        )

    @property
    def interior(self) -> npt.NDArray[np.bool_]:
        """Cells with no total or subtotal code on any axis."""
        out = np.ones(self.published.shape, dtype=bool)
        for k, rel in enumerate(self.axes):
            leaf = np.ones(len(self.codes[k]), dtype=bool)
            leaf[rel.parents] = False
            out &= leaf.reshape([-1 if j == k else 1 for j in range(len(self.axes))])
        return out

    def cell_name(self, flat: int) -> str:
        """``dim=code`` of a cell, for reports (codes only, never a value)."""
        at = np.unravel_index(flat, self.published.shape)
        return ", ".join(f"{d}={self.codes[k][int(at[k])]}" for k, d in enumerate(self.dims))


class CodeBook:
    """Integer ids of (variable, code) over a set of cubes; the total of a variable is id 0."""

    def __init__(self, views: Sequence[CubeView]) -> None:
        self.ids: dict[str, dict[str, int]] = {}
        for v in views:
            for var, codes, root in zip(v.variables, v.codes, v.roots, strict=True):
                known = self.ids.setdefault(var, {})
                known.setdefault(root, 0)
                for c in codes:
                    if c != root and c not in known:
                        known[c] = len(known)
        self.order = sorted(self.ids)
        self.radix: dict[str, int] = {}
        step = 1
        for var in self.order:
            self.radix[var] = step
            step *= len(self.ids[var]) + 1
        if step >= 2**58:
            raise InternalError("the release's classifications have too many code combinations for one cell key")

    def keys(self, view: CubeView) -> IntArray:
        """Each cell's key: the same for the same units in every cube of the set."""
        out = np.zeros(view.published.shape, dtype=np.int64)
        for k, (var, codes, root) in enumerate(zip(view.variables, view.codes, view.roots, strict=True)):
            ids = np.array([0 if c == root else self.ids[var][c] for c in codes], dtype=np.int64)
            out += (ids * self.radix[var]).reshape([-1 if j == k else 1 for j in range(out.ndim)])
        return out


def by_population(views: Sequence[CubeView]) -> Mapping[str, list[CubeView]]:
    """The cubes of each population (only these can share cells)."""
    out: dict[str, list[CubeView]] = {}
    for v in views:
        out.setdefault(v.population, []).append(v)
    return out

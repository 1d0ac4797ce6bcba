"""Shared by the tests of the methods' published bounds: protect a cube with a method's real step, check the bounds."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from cubeguard.methods.base import CubeMethod
from cubeguard.methods.bounds import interior_mask
from tests.strategies import build_cube, two_level_tree


@dataclass(frozen=True)
class Bounded:
    """A cube before and after a step, and the bounds the step declares from the published counts."""

    original: np.ndarray
    published: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    interior: np.ndarray


def keyed(cube: xr.Dataset) -> xr.Dataset:
    """A test cube whose key sums read as binary record keys (as a tabulated cube says in its attributes)."""
    return cube.assign_attrs(key_scale="2^64", cube_id="t")


def protect(method: CubeMethod[Any], step: Any, cube: xr.Dataset) -> Bounded:
    """``cube`` protected by ``method.prepare(step)``, and the bounds of ``method.bounds(step)``, checked to hold.

    Every cell, totals included, must have ``lo <= original <= hi``; the arrays are float64 of
    the published shape, ``lo >= 0``.
    """
    assert method.bounds is not None
    cube = keyed(cube)
    original = np.asarray(cube["count"].values)
    published = np.asarray(method.prepare(step)(cube)["count"].values)
    interior = interior_mask(cube)
    lo, hi = method.bounds(step)(published, interior)
    assert lo.shape == hi.shape == published.shape
    assert lo.dtype == hi.dtype == np.float64
    assert np.all(lo >= 0) and np.all(lo <= hi)
    outside = np.flatnonzero(((original < lo) | (original > hi)).ravel())
    assert outside.size == 0, [
        (int(original.flat[k]), int(published.flat[k]), float(lo.flat[k]), float(hi.flat[k]), bool(interior.flat[k]))
        for k in outside[:5]
    ]
    return Bounded(original, published, lo, hi, interior)


def large_cube(seed: int, high: int = 30, groups: int = 6, per_group: int = 8, width: int = 40) -> xr.Dataset:
    """A 2-way cube of ``groups * per_group x width`` inner cells (counts ``0 .. high - 1``), with subtotals."""
    rng = np.random.default_rng(seed)
    dims = {"GEO.M": two_level_tree("G", groups, per_group), "AGE.L": two_level_tree("A", 1, width)}
    shape = (groups * per_group, width)
    keys = rng.integers(0, 2**64, shape, dtype=np.uint64)
    return build_cube(dims, rng.integers(0, high, shape), keys)


def support(outcomes: Callable[[int], Iterable[int]], originals: range) -> dict[int, set[int]]:
    """For each published count, the originals of ``originals`` that ``outcomes`` (original -> published counts) reaches it from."""
    found: dict[int, set[int]] = {}
    for n in originals:
        for p in outcomes(n):
            found.setdefault(int(p), set()).add(n)
    return found


def assert_tight(
    bounds: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
    found: dict[int, set[int]],
    published: range,
) -> None:
    """The bounds of each count of ``published`` that ``found`` reaches are exactly its least and greatest original.

    Counts never published (e.g. a rounding's non-multiples) bound nothing the method can produce: not checked.
    """
    values = np.array([p for p in published if p in found], dtype=np.int64)
    assert values.size > 0
    lo, hi = bounds(values, np.ones(values.shape, dtype=bool))
    for p, low, high in zip(values.tolist(), lo.tolist(), hi.tolist(), strict=True):
        expected = (min(found[p]), max(found[p]))
        assert (low, high) == expected, (p, low, high, expected)

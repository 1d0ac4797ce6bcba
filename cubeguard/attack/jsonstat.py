"""A flexible table as the intruder reads it from the table service: JSON-stat to :class:`CubeView`.

The service answers ``GET /api/table`` with a JSON-stat 2.0 dataset (:mod:`cubeguard.tables.formats`):
each dimension's codes in order and its hierarchy (``child``), the published counts row-major, and
the population in ``extension``. That is all an intruder of the service holds, and it is the same
layout as a published cube's, so every attack of :mod:`cubeguard.attack` runs on service tables,
beside the cubes or alone (issue 35: ``cubeguard attack --service URL``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from cubeguard.attack.cells import CubeView
from cubeguard.attack.intervals import IntArray, Relations
from cubeguard.attack.system import Bounder
from cubeguard.errors import InternalError

FloatArray = npt.NDArray[np.float64]


#: A cell the service withheld (``null`` in JSON-stat): the intruder knows only that it is a count.
WITHHELD = -1


def withheld_aware(bounds: Bounder | None) -> Bounder | None:
    """``bounds`` for a table with withheld cells: those hold any count, ``[0, inf)``; the rest as ``bounds`` say."""
    if bounds is None:
        return None

    def found(published: IntArray, interior: npt.NDArray[np.bool_]) -> tuple[FloatArray, FloatArray]:
        hidden = published == WITHHELD
        lo, hi = bounds(np.where(hidden, 0, published), interior)
        return np.where(hidden, 0.0, lo), np.where(hidden, np.inf, hi)

    return found


def view_of_table(body: Mapping[str, Any], variables: Mapping[str, str], cube: str,
                  original: IntArray | None = None) -> CubeView:  # fmt: skip
    """The table ``body`` (JSON-stat) as cube ``cube``; ``variables`` maps each breakdown to its variable."""
    dims = tuple(str(d) for d in body["id"])
    codes: list[tuple[str, ...]] = []
    parents: list[list[str]] = []
    for d in dims:
        category = body["dimension"][d]["category"]
        index = category["index"]
        own = tuple(str(c) for c in (sorted(index, key=lambda c: index[c]) if isinstance(index, dict) else index))
        up = {str(child): str(parent) for parent, kids in category.get("child", {}).items() for child in kids}
        codes.append(own)
        parents.append([up.get(c, "") for c in own])
    shape = tuple(int(n) for n in body["size"])
    values = body["value"]
    published = np.asarray([WITHHELD if v is None else v for v in values], dtype=np.int64).reshape(shape)
    if original is not None and original.shape != shape:
        raise InternalError(f"table {cube}: original and published cells differ")
    return CubeView(
        cube=cube,
        population=str(body.get("extension", {}).get("population", "total")),
        dims=dims,
        variables=tuple(str(variables[d]) for d in dims),
        codes=tuple(codes),
        roots=tuple(c[p.index("")] for c, p in zip(codes, parents, strict=True)),
        axes=tuple(Relations.of_codes(list(c), p) for c, p in zip(codes, parents, strict=True)),
        published=published,
        original=original,
    )

"""The in-memory form of a hypercube: a labelled xarray Dataset.

One dimension per breakdown (named by its id, e.g. ``AGE.M``), whose index holds the category codes
including every total and subtotal in pre-order; per dimension the non-index coordinates
``<dim>.parent`` (parent code, "" for the total), ``<dim>.depth`` (0 for the total) and
``<dim>.label``. Data variables: ``count`` (int64) and ``key_sum`` (uint64 record-key numerators,
see ``cubeguard.ckm.keys``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import xarray as xr

from cubeguard.cubes.hierarchy import Breakdown, PerBreakdown


def make_cube(
    breakdowns: list[Breakdown],
    counts: npt.NDArray[np.int64],
    key_sums: npt.NDArray[np.uint64],
    attrs: dict[str, object],
) -> xr.Dataset:
    """Wrap full (margins included) arrays as a cube Dataset."""
    return labelled(breakdowns, {"count": counts, "key_sum": key_sums}, attrs)


def labelled(
    breakdowns: Sequence[Breakdown], data: dict[str, npt.NDArray[Any]], attrs: dict[str, object]
) -> xr.Dataset:
    """Full arrays (one axis per breakdown, margins included) as a Dataset with the breakdowns' coordinates."""
    dims = [b.id for b in breakdowns]
    coords: dict[str, object] = {}
    for b in breakdowns:
        coords.update(_coords(b))
    return xr.Dataset(
        {name: (dims, values) for name, values in data.items()},
        coords=coords,
        attrs={**attrs, "breakdowns": dims},
    )


def _built_coords(b: Breakdown) -> dict[str, xr.Variable]:
    """The coordinates of breakdown ``b``: codes, parents, depths, labels (read-only variables)."""
    return {
        b.id: xr.IndexVariable((b.id,), np.array(b.codes, dtype=object)),  # type: ignore[no-untyped-call]
        f"{b.id}.parent": xr.Variable((b.id,), np.array(b.parents, dtype=object)),
        f"{b.id}.depth": xr.Variable((b.id,), np.array(b.depths, dtype=np.int16)),
        f"{b.id}.label": xr.Variable((b.id,), np.array(b.labels, dtype=object)),
    }


#: Built once per breakdown: converting codes and labels to xarray's types costs more than the rest
#: of a small cube (the table service labels one per CSV or SDMX-CSV answer).
_coords = PerBreakdown(_built_coords)

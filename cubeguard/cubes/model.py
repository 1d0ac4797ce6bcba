"""The in-memory form of a hypercube: a labelled xarray Dataset.

One dimension per breakdown (named by its id, e.g. ``AGE.M``), whose index holds the category codes
including every total and subtotal in pre-order; per dimension the non-index coordinates
``<dim>.parent`` (parent code, "" for the total), ``<dim>.depth`` (0 for the total) and
``<dim>.label``. Data variables: ``count`` (int64) and ``key_sum`` (uint64 record-key numerators,
see ``cubeguard.ckm.keys``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import xarray as xr

from cubeguard.cubes.hierarchy import Breakdown


def make_cube(
    breakdowns: list[Breakdown],
    counts: npt.NDArray[np.int64],
    key_sums: npt.NDArray[np.uint64],
    attrs: dict[str, object],
) -> xr.Dataset:
    """Wrap full (margins included) arrays as a cube Dataset."""
    dims = [b.id for b in breakdowns]
    coords: dict[str, object] = {}
    for b in breakdowns:
        coords[b.id] = (b.id, np.array(b.codes, dtype=object))
        coords[f"{b.id}.parent"] = (b.id, np.array(b.parents, dtype=object))
        coords[f"{b.id}.depth"] = (b.id, np.array(b.depths, dtype=np.int16))
        coords[f"{b.id}.label"] = (b.id, np.array(b.labels, dtype=object))
    return xr.Dataset(
        {"count": (dims, counts), "key_sum": (dims, key_sums)},
        coords=coords,
        attrs={**attrs, "breakdowns": dims},
    )

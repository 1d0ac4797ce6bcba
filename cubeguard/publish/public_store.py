"""The public Zarr store of a release: published counts (and published sums), from the protected store.

The protected store also holds each cell's internal ``noise`` (count minus noise is the original
count) and the config hash in each cube's attributes; neither may leave. Each cube is therefore
rewritten rather than copied file by file: its ``count`` variable with the hierarchy coordinates,
and only the whitelisted attributes below, so a new internal variable or attribute is never
published by accident. A cube configured with ``sums`` also keeps its ``sum.<column>`` variables:
in the protected store they hold the perturbed sums (the protection step refuses to write a cube
whose sums were not perturbed), never an input of their perturbation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import xarray as xr
import zarr

from cubeguard.cubes.store import list_cubes, load_cube, write_cube
from cubeguard.cubes.values import sum_name, summed_columns
from cubeguard.errors import CubeguardError, InternalError

PUBLIC_VARIABLES = ("count",)
PUBLIC_ATTRS = ("cube_id", "label", "population", "unit", "stand_in", "breakdowns", "hierarchies", "variables", "steps")


@dataclass(frozen=True)
class PublishedCube:
    """What the manifest says of one published cube: the published (protected) counts only.

    Attributes:
        id: The hypercube id (its group in the store, its export file name).
        breakdowns: The cube's dimensions, one breakdown id each, in order.
        cells: Number of cells, totals and subtotals included.
        total: The published grand total (the protected count of the all-totals cell).
    """

    id: str
    breakdowns: tuple[str, ...]
    cells: int
    total: int

    def as_dict(self) -> dict[str, object]:
        """Plain-dict form, as the manifest lists it."""
        return {"id": self.id, "breakdowns": list(self.breakdowns), "cells": self.cells, "total": self.total}


def write_public_store(
    protected: Path, target: Path, chunk_cells: int, after_cube: Callable[[str], None] | None = None
) -> list[PublishedCube]:
    """Write every cube of ``protected`` into a new store ``target`` with public content only.

    Args:
        protected: The protected store (published counts plus internal noise).
        target: The new store; must not exist yet.
        chunk_cells: Cells per chunk, as ``output.chunk_cells``.
        after_cube: Called with the cube id after each cube is written.

    Returns:
        One summary per cube, in the store's (sorted) order.

    Raises:
        CubeguardError: The protected store is missing or holds no cube.
    """
    cube_ids = list_cubes(protected)
    if not cube_ids:
        raise CubeguardError(f"store {protected} holds no cube; run the release steps before publishing")
    zarr.open_group(target, mode="w-", zarr_format=3)
    out = []
    for cube_id in cube_ids:
        public = public_cube(load_cube(protected, cube_id))
        write_cube(target, public, chunk_cells, label_arrays=True)
        out.append(summarise(cube_id, public))
        if after_cube:
            after_cube(cube_id)
    return out


def public_cube(cube: xr.Dataset) -> xr.Dataset:
    """The cube with only its public variables, coordinates and attributes."""
    public = cube[[*PUBLIC_VARIABLES, *(sum_name(c) for c in summed_columns(cube))]]
    public.attrs = {k: v for k, v in cube.attrs.items() if k in PUBLIC_ATTRS}
    return public


def summarise(cube_id: str, cube: xr.Dataset) -> PublishedCube:
    """Id, breakdowns, cell count and published grand total of a cube.

    Codes are in pre-order with the total first (``cubeguard.cubes.model``), so the grand total is
    the first cell of every dimension.
    """
    counts = cube["count"]
    dims = tuple(str(d) for d in counts.dims)
    if any(int(cube[f"{d}.depth"].values[0]) != 0 for d in dims):
        raise InternalError(f"cube {cube_id}: the first code of a dimension is not its total")
    total = int(counts.isel(dict.fromkeys(dims, 0)).values)
    return PublishedCube(cube_id, dims, int(counts.size), total)

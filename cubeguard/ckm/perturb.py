"""Perturb whole cubes with the cell key method, chunk by chunk.

Every cell, totals and subtotals included, gets ``noise = v`` of the p-table row selected by its
count and its cell key ``(sum of record keys) mod 1`` (Wilak et al. 2024; Handbook on SDC v2 5.4). The cell
key is derived from the exact ``key_sum`` (``cubeguard.ckm.keys``), so the same set of records
is perturbed the same in every cube, margin and chunk layout.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import xarray as xr

from cubeguard.ckm.keys import KeyScale
from cubeguard.ckm.lookup import lookup_noise, published_counts
from cubeguard.ckm.ptable import PTable


def cell_keys(cube: xr.Dataset) -> xr.DataArray:
    """Cell keys in [0, 1) of every cell (lazy if the cube is)."""
    scale = KeyScale.from_label(str(cube.attrs["key_scale"]))
    keys: xr.DataArray = xr.apply_ufunc(
        scale.cell_keys, cube["key_sum"], dask="parallelized", output_dtypes=[np.float64]
    )
    return keys


def _noise_block(
    counts: npt.NDArray[np.int64], key_sums: npt.NDArray[np.uint64], ptable: PTable, scale: KeyScale
) -> npt.NDArray[np.int64]:
    return lookup_noise(counts, scale.cell_keys(key_sums), ptable)


def perturb_cells(
    counts: npt.NDArray[np.int64], key_sums: npt.NDArray[np.uint64], ptable: PTable, scale: KeyScale
) -> npt.NDArray[np.int64]:
    """Published counts of cells given as plain arrays (any shape): ``count + noise``, as :func:`perturb_cube`."""
    return published_counts(counts, key_sums, ptable, scale.compiled())


def perturb_cube(cube: xr.Dataset, ptable: PTable) -> xr.Dataset:
    """The cube with ``count`` replaced by published counts and the ``noise`` added (internal).

    Zero cells stay zero. Works on numpy- or Dask-backed cubes without computing them early.
    """
    scale = KeyScale.from_label(str(cube.attrs["key_scale"]))
    if cube["count"].chunks is None:  # in memory (a flexible table): numpy, without apply_ufunc's alignment
        counts = cube["count"].values
        published = perturb_cells(counts, cube["key_sum"].values, ptable, scale)
        dims = cube["count"].dims
        noise = xr.Variable(dims, published - counts)
        total = cube["noise"].variable + noise if "noise" in cube else noise
        return cube.assign(count=xr.Variable(dims, published), noise=total)
    noise = xr.apply_ufunc(
        _noise_block,
        cube["count"],
        cube["key_sum"],
        kwargs={"ptable": ptable, "scale": scale},
        dask="parallelized",
        output_dtypes=[np.int64],
    )
    total = cube["noise"] + noise if "noise" in cube else noise  # stacked steps: published minus original
    return cube.assign(count=cube["count"] + noise, noise=total)

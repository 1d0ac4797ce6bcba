"""Small cell adjustment as a release step: the cube function, public parameters, config checks."""

from __future__ import annotations

import numpy as np
import xarray as xr

from cubeguard.errors import InternalError
from cubeguard.methods.base import BoundsFunction, CubeFunction
from cubeguard.methods.bounds import BoolArray, Bounds, IntArray, by_value, open_margins
from cubeguard.methods.cells import change_interior, last_step_problems
from cubeguard.methods.context import CheckContext, Problem
from cubeguard.methods.small_cell_adjustment.kernel import adjust_small_cells
from cubeguard.methods.small_cell_adjustment.model import SmallCellAdjustmentStep


def adjust_cube(cube: xr.Dataset, base: int, seed: int | None) -> xr.Dataset:
    """The cube with small inner counts moved to 0 or ``base`` and every margin summed from them.

    Hundepool et al. (2024), Handbook on SDC v2, 5.5. ``seed`` ``None`` draws each cell's uniform
    number from its cell key (the cube needs its record-key sums); an integer draws them from a
    seeded stream. ``count`` becomes the published count and ``noise`` published minus original
    (an earlier step's noise is added to).
    """
    return change_interior(cube, seed, lambda inner, u: adjust_small_cells(inner, u, base))


def prepare(step: SmallCellAdjustmentStep) -> CubeFunction:
    """Adjust a cube's small cells to the step's base, with the step's seed or the cell keys.

    Raises:
        InternalError: the seed is still a reference (secrets are resolved before a step runs).
    """
    seed = step.seed
    if seed is not None and not isinstance(seed, int):
        raise InternalError("the small cell adjustment step's seed is not resolved; this is a bug in cubeguard")

    def adjusted(cube: xr.Dataset) -> xr.Dataset:
        return adjust_cube(cube, step.base, seed)

    return adjusted


def bounds(step: SmallCellAdjustmentStep) -> BoundsFunction:
    """An inner 0 comes from ``0 .. b - 1``, an inner ``b`` from ``1 .. b``, any other count is exact (Handbook on SDC v2, 5.5).

    :func:`adjust_small_cells` moves the inner counts ``1 .. b - 1`` to 0 or ``b`` and leaves the
    others, so inner counts ``1 .. b - 1`` are never published; totals are sums, left to additivity.
    """
    b = step.base
    lo_of = np.r_[0.0, np.full(b - 1, np.nan), 1.0]
    hi_of = np.r_[float(b - 1), np.full(b - 1, np.nan), float(b)]

    def adjusted(published: IntArray, interior: BoolArray) -> Bounds:
        return open_margins(by_value(published, lo_of, hi_of, (0, 0)), interior)

    return adjusted


def public(step: SmallCellAdjustmentStep) -> dict[str, object]:
    """The base is public (users read the published small counts as 0 or the base); never the seed."""
    return {"base": step.base}


def check(step: SmallCellAdjustmentStep, ctx: CheckContext) -> list[Problem]:
    """No later step protects a cube this step adjusts (it would bring back small counts and break additivity).

    Earlier steps may perturb the cube: the adjustment publishes their inner cells, adjusted, and
    sums its margins from them. A second adjustment of the same cube is reported at the first one.
    """
    return last_step_problems(ctx, f"add up or be free of counts from 1 to {step.base - 1}")

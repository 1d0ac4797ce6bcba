"""Conventional rounding as a release step: the cube function, public parameters, config checks."""

from __future__ import annotations

import xarray as xr

from cubeguard.methods.base import BoundsFunction, CubeFunction
from cubeguard.methods.bounds import BoolArray, Bounds, IntArray, offsets
from cubeguard.methods.cells import last_step_problems
from cubeguard.methods.context import CheckContext, Problem
from cubeguard.methods.conventional_rounding.kernel import round_to_base
from cubeguard.methods.conventional_rounding.model import ConventionalRoundingStep


def round_cube(cube: xr.Dataset, base: int) -> xr.Dataset:
    """The cube with every cell, totals included, rounded to a multiple of ``base`` (Handbook on SDC v2, 5.5).

    ``count`` becomes the published count and ``noise`` published minus original: an earlier
    step's noise is added to, so ``noise`` stays the change from the tabulated count. Works on
    numpy- or Dask-backed cubes without computing them early.
    """
    count = cube["count"]
    published = xr.apply_ufunc(
        round_to_base, count, kwargs={"base": base}, dask="parallelized", output_dtypes=[count.dtype]
    )
    change = published - count
    noise = cube["noise"] + change if "noise" in cube else change
    return cube.assign(count=published, noise=noise)


def prepare(step: ConventionalRoundingStep) -> CubeFunction:
    """Round a cube to the step's base."""

    def rounded(cube: xr.Dataset) -> xr.Dataset:
        return round_cube(cube, step.base)

    return rounded


def bounds(step: ConventionalRoundingStep) -> BoundsFunction:
    """The counts that round to each published one, totals included (Handbook on SDC v2, 5.5; halves up).

    :func:`round_to_base` sends ``n`` down when ``2 (n mod b) < b``, else up, so a published ``p``
    comes from ``p - floor(b/2) .. p + ceil(b/2) - 1`` (base 5: ``p - 2 .. p + 2``; base 4: ``p - 2 .. p + 1``).
    """
    below, above = step.base // 2, (step.base + 1) // 2 - 1

    def nearest(published: IntArray, interior: BoolArray) -> Bounds:
        return offsets(published, below, above)

    return nearest


def public(step: ConventionalRoundingStep) -> dict[str, object]:
    """The base is public: users read the published counts as multiples of it."""
    return {"base": step.base}


def check(step: ConventionalRoundingStep, ctx: CheckContext) -> list[Problem]:
    """No later step protects a cube this step rounds (its counts would no longer all be multiples of the base).

    Earlier steps may perturb the cube (e.g. the cell key method): rounding their output keeps
    every published count a multiple of the base. A second rounding step on the same cube is
    reported at the first one: to the same base it does nothing, to another it can move a count
    more than half a base from the tabulated one.
    """
    return last_step_problems(ctx, f"all be multiples of {step.base}")

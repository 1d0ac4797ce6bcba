"""Barnardisation as a release step: the cube function, public parameters, config checks."""

from __future__ import annotations

import numpy as np
import xarray as xr

from cubeguard.errors import InternalError
from cubeguard.methods.barnardisation.kernel import barnardise
from cubeguard.methods.barnardisation.model import BarnardisationStep
from cubeguard.methods.base import BoundsFunction, CubeFunction
from cubeguard.methods.bounds import BoolArray, Bounds, IntArray, by_value, open_margins
from cubeguard.methods.cells import change_interior, last_step_problems
from cubeguard.methods.context import CheckContext, Problem


def barnardise_cube(cube: xr.Dataset, p: float, seed: int | None) -> xr.Dataset:
    """The cube with its non-zero inner cells changed by -1, 0 or +1 and every margin summed from them.

    Hundepool et al. (2024), Handbook on SDC v2, 5.3. ``seed`` ``None`` draws each cell's uniform
    number from its cell key (the cube needs its record-key sums); an integer draws them from a
    seeded stream. ``count`` becomes the published count and ``noise`` published minus original
    (an earlier step's noise is added to).
    """
    return change_interior(cube, seed, lambda inner, u: barnardise(inner, u, p))


def prepare(step: BarnardisationStep) -> CubeFunction:
    """Barnardise a cube with the step's p, and its seed or the cell keys.

    Raises:
        InternalError: p or the seed is still a reference (secrets are resolved before a step runs).
    """
    p, seed = step.p, step.seed
    if not isinstance(p, int | float) or (seed is not None and not isinstance(seed, int)):
        raise InternalError("the Barnardisation step's secrets are not resolved; this is a bug in cubeguard")
    chance = float(p)

    def perturbed(cube: xr.Dataset) -> xr.Dataset:
        return barnardise_cube(cube, chance, seed)

    return perturbed


def bounds(step: BarnardisationStep) -> BoundsFunction:
    """An inner ``p`` comes from ``p - 1 .. p + 1``, an inner 0 from 0 or 1, an inner 1 from 1 or 2 (Handbook on SDC v2, 5.3).

    :func:`barnardise` changes each non-zero inner count by -1, 0 or +1 (``p`` in (0, 1), so all
    three can happen) and keeps zeros, so a published 1 never came from 0; totals are sums, left to
    additivity.
    """
    lo_of, hi_of = np.array([0.0, 1.0]), np.array([1.0, 2.0])

    def plus_minus_one(published: IntArray, interior: BoolArray) -> Bounds:
        return open_margins(by_value(published, lo_of, hi_of, (1, 1)), interior)

    return plus_minus_one


def public(step: BarnardisationStep) -> dict[str, object]:
    """Nothing: p (how many cells change) and the seed are secret."""
    return {}


def check(step: BarnardisationStep, ctx: CheckContext) -> list[Problem]:
    """No later step protects a cube this step perturbs (its margins would no longer be the sums of its inner cells).

    Earlier steps may perturb the cube: Barnardisation perturbs their inner cells and sums its
    margins from them. A second Barnardisation of the same cube is reported at the first one.
    """
    return last_step_problems(ctx, "add up")

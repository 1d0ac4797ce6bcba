"""Semi-controlled random rounding as a release step: control groups, the cube function, config checks."""

from __future__ import annotations

import numpy as np
import xarray as xr

from cubeguard.cubes.tree import hierarchies
from cubeguard.errors import InternalError
from cubeguard.methods.base import BoundsFunction, CubeFunction
from cubeguard.methods.bounds import BoolArray, Bounds, IntArray, offsets, open_margins
from cubeguard.methods.cells import control_groups, interior, last_step_problems, leaf_index, publish, summed, uniforms
from cubeguard.methods.context import CheckContext, Problem
from cubeguard.methods.semi_controlled_rounding.kernel import semi_controlled_round
from cubeguard.methods.semi_controlled_rounding.model import SemiControlledRoundingStep


def round_cube(cube: xr.Dataset, step: SemiControlledRoundingStep, seed: int | None) -> xr.Dataset:
    """The cube's interior rounded semi-controlled to its control groups, every margin summed from it."""
    counts = np.asarray(cube["count"].values, dtype=np.int64)
    u_all = uniforms(cube, seed)
    found = hierarchies(cube)
    index = leaf_index(cube, found)
    group, total_cells = control_groups(cube, step.control, step.control_depth, index, found)
    inner = interior(counts, index)
    rounded = semi_controlled_round(
        inner.ravel(), step.base, interior(u_all, index).ravel(), group.ravel(), u_all.ravel()[total_cells]
    )
    return publish(cube, summed(cube, rounded.reshape(inner.shape), found))


def prepare(step: SemiControlledRoundingStep) -> CubeFunction:
    """Round a cube as the (resolved) step says."""
    seed = step.seed
    if seed is not None and not isinstance(seed, int):
        raise InternalError("the semi-controlled rounding seed is not resolved; this is a bug in cubeguard")

    def rounded(cube: xr.Dataset) -> xr.Dataset:
        return round_cube(cube, step, seed)

    return rounded


def bounds(step: SemiControlledRoundingStep) -> BoundsFunction:
    """An interior ``p`` comes from ``p - b + 1 .. p + b - 1`` (Shlomo 2009, 3.2.1); totals, summed, from additivity.

    :func:`semi_controlled_round` moves each interior cell to one of its adjacent multiples. A
    control group's total also lies within ``b - 1`` of its published sum, but a bounds function
    sees only which cells are interior, not which are control totals, so it leaves them open too.
    """
    step_ = step.base - 1

    def adjacent(published: IntArray, interior: BoolArray) -> Bounds:
        return open_margins(offsets(published, step_, step_), interior)

    return adjacent


def public(step: SemiControlledRoundingStep) -> dict[str, object]:
    """Base and controls are public (users may rely on the controlled totals); the seed is not."""
    return {"base": step.base, "control": step.control, "control_depth": step.control_depth}


def check(step: SemiControlledRoundingStep, ctx: CheckContext) -> list[Problem]:
    """The control breakdowns exist, and no later step protects a cube this step rounds."""
    found: list[Problem] = [
        (("control", k), f"unknown breakdown {bid!r}; name a breakdown id of the release's variables")
        for k, bid in enumerate(step.control)
        if ctx.breakdowns and bid not in ctx.breakdowns
    ]
    return found + last_step_problems(ctx, f"all be multiples of {step.base} and add up")

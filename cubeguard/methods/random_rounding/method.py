"""Random rounding as a release step: the cube function, public parameters, config checks."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import xarray as xr

from cubeguard.ckm.keys import KeyScale
from cubeguard.errors import InternalError
from cubeguard.methods.base import BoundsFunction, CellFunction, CubeFunction
from cubeguard.methods.bounds import BoolArray, Bounds, IntArray, offsets, open_margins
from cubeguard.methods.cells import change_interior, last_step_problems, publish, uniforms
from cubeguard.methods.context import CheckContext, Problem
from cubeguard.methods.random_rounding.kernel import random_round
from cubeguard.methods.random_rounding.model import RandomRoundingStep


def round_cube(cube: xr.Dataset, base: int, margins: str, seed: int | None) -> xr.Dataset:
    """The cube randomly rounded to ``base`` (Shlomo 2009, 3.2.1); ``noise`` is published minus original.

    ``margins="independent"`` rounds every cell with its own draw; ``"summed"`` rounds the
    interior and publishes each total and subtotal as the sum of the rounded interior.
    """
    if margins == "summed":
        return change_interior(cube, seed, lambda inner, u: random_round(inner, base, u))
    counts = np.asarray(cube["count"].values, dtype=np.int64)
    return publish(cube, random_round(counts, base, uniforms(cube, seed)))


def prepare(step: RandomRoundingStep) -> CubeFunction:
    """Round a cube as the (resolved) step says."""
    seed = step.seed
    if seed is not None and not isinstance(seed, int):
        raise InternalError("the random rounding seed is not resolved; this is a bug in cubeguard")

    def rounded(cube: xr.Dataset) -> xr.Dataset:
        return round_cube(cube, step.base, step.margins, seed)

    return rounded


def cellwise(step: RandomRoundingStep) -> bool:
    """Every cell rounded with its own draw, its cell key: one value whatever table holds it."""
    return step.margins == "independent" and step.seed is None


def cells(step: RandomRoundingStep) -> CellFunction:
    """Rounding with cell-key draws on plain arrays of counts and record-key sums (a ``cellwise`` step)."""
    if not cellwise(step):
        raise InternalError("only independent margins with cell-key draws round cell by cell; this is a bug")

    def rounded(
        counts: npt.NDArray[np.int64], key_sums: npt.NDArray[np.uint64], scale: KeyScale
    ) -> npt.NDArray[np.int64]:
        return random_round(counts, step.base, scale.cell_keys(key_sums))

    return rounded


def bounds(step: RandomRoundingStep) -> BoundsFunction:
    """A published ``p`` comes from ``p - b + 1 .. p + b - 1`` (Shlomo 2009, 3.2.1: to an adjacent multiple).

    :func:`random_round` moves ``n`` to ``n - (n mod b)`` or that plus ``b``, a multiple staying,
    and does not keep zeros (a count below ``b`` may go to 0). With ``margins: summed`` only the
    interior is rounded; the totals, sums of rounded cells, are left to additivity.
    """
    step_ = step.base - 1

    def adjacent(published: IntArray, interior: BoolArray) -> Bounds:
        found = offsets(published, step_, step_)
        return open_margins(found, interior) if step.margins == "summed" else found

    return adjacent


def public(step: RandomRoundingStep) -> dict[str, object]:
    """The base and how margins are published are public; the seed is not, nor whether one is set."""
    return {"base": step.base, "margins": step.margins}


def check(step: RandomRoundingStep, ctx: CheckContext) -> list[Problem]:
    """No later step protects a cube this step rounds."""
    kept = f"all be multiples of {step.base}" + (" and add up" if step.margins == "summed" else "")
    return last_step_problems(ctx, kept)

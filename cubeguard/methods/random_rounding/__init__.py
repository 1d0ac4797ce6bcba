"""Unbiased random rounding (Shlomo 2009, 3.2.1): each count up or down to a multiple of the base, unbiased."""

from cubeguard.methods.base import CubeMethod
from cubeguard.methods.random_rounding.kernel import random_round
from cubeguard.methods.random_rounding.method import bounds, cells, cellwise, check, prepare, public, round_cube
from cubeguard.methods.random_rounding.model import RandomRoundingStep

METHOD = CubeMethod(
    model=RandomRoundingStep,
    public=public,
    prepare=prepare,
    check=check,
    additive=lambda step: step.margins == "summed",
    rounds=True,
    cellwise=cellwise,
    cells=cells,
    bounds=bounds,
)

__all__ = ["METHOD", "RandomRoundingStep", "random_round", "round_cube"]

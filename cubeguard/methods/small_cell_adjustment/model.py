"""The config model of small cell adjustment."""

from __future__ import annotations

from typing import Literal

from cubeguard.methods.fields import CellSeed, base_field
from cubeguard.methods.models import CubeStep


class SmallCellAdjustmentStep(CubeStep):
    """Small cell adjustment (Hundepool et al. 2024, Handbook on SDC v2, 5.5).

    Every inner cell (a leaf code on every dimension) with ``0 < count < base`` is moved to 0 or to
    ``base`` by an unbiased scheme: to ``base`` with probability ``count / base``, so the expected
    change is 0. Other inner cells, zeros included, are published unchanged; totals and subtotals
    are the sums of the adjusted inner cells, so the cube is additive and no margin is a small
    count either. The Handbook adjusts each table independently; here, without a ``seed``, each
    cell's draw is its cell key, so a cell shared by several cubes is adjusted the same in all of
    them (margins of different cubes may still differ). A cube may be adjusted by one such step,
    and no later step may change it.
    """

    method: Literal["small_cell_adjustment"]
    name: str = "small_cell_adjustment"
    base: int = base_field(
        2,
        "Adjustment base (public): inner counts 1 to base - 1 are published as 0 or base. "
        "3 removes the 1s and 2s (Hundepool et al. 2024, Handbook on SDC v2, 5.5).",
    )
    seed: CellSeed

"""The config model of semi-controlled random rounding."""

from __future__ import annotations

from typing import Literal

from cubeguard.methods.fields import CellSeed, Control, ControlDepth, base_field
from cubeguard.methods.models import CubeStep


class SemiControlledRoundingStep(CubeStep):
    """Semi-controlled random rounding to ``base`` (Shlomo 2009, 3.2.1), as the Eurostat task force ran it.

    The interior cells are rounded to multiples of the base; within each control group, and for
    each residual value ``r``, the number of cells rounded up is fixed in advance to the expected
    number ``n_r * r / base`` (its integer part, plus one with the probability of its fraction,
    drawn by systematic sampling across the residuals), and that many cells are chosen without
    replacement. The rounded interior of a group then adds up exactly to its total randomly
    rounded to the base, with zero bias. Every total and subtotal is published as the sum of the
    rounded interior, so the cube is additive. A control group is one code at ``control_depth``
    of the first of the ``control`` breakdowns the cube has (e.g. each NUTS2 area), or the whole
    cube when it has none of them. The draws come from the cell keys (a group's from the key of
    its total cell) unless a ``seed`` is given. No later step may change a rounded cube.
    """

    method: Literal["semi_controlled_rounding"]
    name: str = "semi_controlled_rounding"
    base: int = base_field(
        1,
        "Rounding base (public): every published count is a multiple of it; 1 publishes the counts unchanged.",
    )
    control: Control
    control_depth: ControlDepth
    seed: CellSeed

"""The config model of unbiased random rounding."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from cubeguard.methods.fields import CellSeed, base_field
from cubeguard.methods.models import CubeStep


class RandomRoundingStep(CubeStep):
    """Unbiased random rounding to ``base`` (Shlomo 2009, 3.2.1; Handbook on SDC v2, 5.5).

    A count ``x`` with residual ``r = x mod base`` goes up to the next multiple with probability
    ``r / base`` and down otherwise, so its expected change is zero; multiples of the base stay.
    The uniform number of each cell is its cell key (the record keys' sum mod 1), so a cell shared
    by several cubes, which has the same records and so the same key, rounds the same in all of
    them (Shlomo and Young 2008); with a ``seed`` the numbers come from a seeded stream instead.
    With ``margins: independent`` every total and subtotal is rounded on its own, like the
    interior, and the cube is not additive; with ``margins: summed`` only the interior is rounded and every total is published as the sum
    of the rounded interior (additive, but a total may then be several bases from its count).
    A cube may be rounded by one such step, and no later step may change it.
    """

    method: Literal["random_rounding"]
    name: str = "random_rounding"
    base: int = base_field(
        1,
        "Rounding base (public): every published count is a multiple of it; 1 publishes the counts unchanged.",
    )
    margins: Literal["independent", "summed"] = Field(
        default="independent",
        description="independent: totals and subtotals rounded on their own (not additive); summed: published as "
        "sums of the rounded interior cells (additive).",
    )
    seed: CellSeed

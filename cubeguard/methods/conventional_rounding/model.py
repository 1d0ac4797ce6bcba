"""The config model of conventional rounding."""

from __future__ import annotations

from typing import Literal

from cubeguard.methods.fields import base_field
from cubeguard.methods.models import CubeStep


class ConventionalRoundingStep(CubeStep):
    """Conventional rounding (Handbook on SDC v2, 5.5): every cell to the nearest multiple of ``base``.

    Totals and subtotals are rounded on their own, like the inner cells, so a rounded cube is not
    additive (do not set ``gates.require_additivity``). A count exactly halfway between two
    multiples (only with an even base) is rounded up: the Handbook states no convention, and the
    Glossary of Statistical Disclosure Control (2005) names always rounding up as a usual one.
    Zeros stay zero, and a count is published the same in every cube. Base 1 publishes every count
    unchanged (the noise-free path). The Handbook does not recommend conventional rounding for
    disclosure control (differencing and linking tables unpick it); it suits rounding for quality
    reasons. A cube may be rounded by one such step, and no later step may change it.
    """

    method: Literal["conventional_rounding"]
    name: str = "conventional_rounding"
    base: int = base_field(
        1,
        "Rounding base (public): every published count is a multiple of it. 3 and 5 are the "
        "common choices (Handbook on SDC v2, 5.5); 3 is the smallest base that publishes no 1s and 2s.",
    )

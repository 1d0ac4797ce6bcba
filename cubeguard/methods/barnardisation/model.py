"""The config model of Barnardisation."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from cubeguard.methods.fields import CellSeed
from cubeguard.methods.models import CubeStep
from cubeguard.secrets import EnvSecret, PrefectSecret

Probability = Annotated[float, Field(gt=0.0, lt=1.0, allow_inf_nan=False)] | EnvSecret | PrefectSecret


class BarnardisationStep(CubeStep):
    """Barnardisation (Hundepool et al. 2024, Handbook on SDC v2, 5.3).

    Every non-zero inner cell (a leaf code on every dimension) gets -1, 0 or +1 with probabilities
    ``p/2``, ``1 - p`` and ``p/2``, so the expected change is 0; zeros are not adjusted. Totals and
    subtotals are the sums of the perturbed inner cells, so the cube is additive. A count of 1 may
    go to 0 (the Handbook does not forbid it), never below 0. ``p`` is secret (it says how much
    noise there is): the Handbook notes the proportion of cells modified is not revealed. Without a
    ``seed``, each cell's draw is its cell key, so a cell shared by several cubes is perturbed the
    same in all of them. A cube may be perturbed by one such step, and no later step may change it.
    """

    method: Literal["barnardisation"]
    name: str = "barnardisation"
    p: Probability = Field(
        description="Probability that a non-zero inner cell changes, strictly between 0 and 1 (secret): "
        "-1 and +1 each with p/2. Typically small (Hundepool et al. 2024, Handbook on SDC v2, 5.3).",
    )
    seed: CellSeed

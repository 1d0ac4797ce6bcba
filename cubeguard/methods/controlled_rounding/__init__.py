"""Controlled rounding (Handbook on SDC v2, 5.5.1): an additive table of multiples of a public base, least total deviation."""

from cubeguard.methods.base import CubeMethod, always
from cubeguard.methods.controlled_rounding.kernel import Solution, additivity_rows, controlled_round
from cubeguard.methods.controlled_rounding.method import REPORT_ATTR, bounds, check, prepare, public, round_cube
from cubeguard.methods.controlled_rounding.model import ControlledRoundingStep

METHOD = CubeMethod(
    model=ControlledRoundingStep,
    public=public,
    prepare=prepare,
    check=check,
    additive=always,
    rounds=True,
    bounds=bounds,
)

__all__ = [
    "METHOD",
    "REPORT_ATTR",
    "ControlledRoundingStep",
    "Solution",
    "additivity_rows",
    "controlled_round",
    "round_cube",
]

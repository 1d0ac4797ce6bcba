"""Semi-controlled random rounding (Shlomo 2009, 3.2.1): unbiased, the interior adding up to its controlled totals."""

from cubeguard.methods.base import CubeMethod, always
from cubeguard.methods.cells import control_groups
from cubeguard.methods.semi_controlled_rounding.kernel import semi_controlled_round
from cubeguard.methods.semi_controlled_rounding.method import bounds, check, prepare, public, round_cube
from cubeguard.methods.semi_controlled_rounding.model import SemiControlledRoundingStep

METHOD = CubeMethod(
    model=SemiControlledRoundingStep,
    public=public,
    prepare=prepare,
    check=check,
    additive=always,
    rounds=True,
    bounds=bounds,
)

__all__ = ["METHOD", "SemiControlledRoundingStep", "control_groups", "round_cube", "semi_controlled_round"]

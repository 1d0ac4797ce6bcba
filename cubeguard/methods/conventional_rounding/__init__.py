"""Conventional rounding (Handbook on SDC v2, 5.5): every cell to the nearest multiple of a public base."""

from cubeguard.methods.base import CubeMethod
from cubeguard.methods.conventional_rounding.kernel import round_to_base
from cubeguard.methods.conventional_rounding.method import bounds, check, prepare, public, round_cube
from cubeguard.methods.conventional_rounding.model import ConventionalRoundingStep

METHOD = CubeMethod(
    model=ConventionalRoundingStep, public=public, prepare=prepare, check=check, rounds=True, bounds=bounds
)

__all__ = ["METHOD", "ConventionalRoundingStep", "round_cube", "round_to_base"]

"""Barnardisation (Hundepool et al. 2024, Handbook on SDC v2, 5.3): inner cells +1, 0 or -1, margins summed."""

from cubeguard.methods.barnardisation.kernel import barnardise
from cubeguard.methods.barnardisation.method import barnardise_cube, bounds, check, prepare, public
from cubeguard.methods.barnardisation.model import BarnardisationStep
from cubeguard.methods.base import CubeMethod, always

METHOD = CubeMethod(
    model=BarnardisationStep, public=public, prepare=prepare, check=check, additive=always, bounds=bounds
)

__all__ = ["METHOD", "BarnardisationStep", "barnardise", "barnardise_cube"]

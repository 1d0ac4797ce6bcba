"""Small cell adjustment (Hundepool et al. 2024, Handbook on SDC v2, 5.5): small inner counts to 0 or a base, margins summed."""

from cubeguard.methods.base import CubeMethod, always
from cubeguard.methods.small_cell_adjustment.kernel import adjust_small_cells
from cubeguard.methods.small_cell_adjustment.method import adjust_cube, bounds, check, prepare, public
from cubeguard.methods.small_cell_adjustment.model import SmallCellAdjustmentStep

METHOD = CubeMethod(
    model=SmallCellAdjustmentStep,
    public=public,
    prepare=prepare,
    check=check,
    additive=always,
    rounds=True,
    bounds=bounds,
)

__all__ = ["METHOD", "SmallCellAdjustmentStep", "adjust_cube", "adjust_small_cells"]

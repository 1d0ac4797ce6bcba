"""The cell key method (Thompson, Broadfoot and Elazar 2013; Handbook on SDC v2, 5.4).

The p-table machinery (R ptable and cellKey reproduced) lives in :mod:`cubeguard.ckm`; this
package is the method as a release step.
"""

from cubeguard.methods.base import CubeMethod, always
from cubeguard.methods.cell_key import section
from cubeguard.methods.cell_key.method import bounds, cells, check, files, magnitudes, prepare, public
from cubeguard.methods.cell_key.model import CellKeyStep

METHOD = CubeMethod(
    model=CellKeyStep,
    public=public,
    prepare=prepare,
    check=check,
    files=files,
    cellwise=always,
    cells=cells,
    magnitudes=magnitudes,
    bounds=bounds,
    section=section.section,
)

__all__ = ["METHOD", "CellKeyStep"]

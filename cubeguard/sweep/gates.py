"""The release gates, evaluated on one protected cube in memory for a parameter sweep.

The release checks its :class:`~cubeguard.config.models.GateSpec` with Great Expectations
(``expectations/``), which the core may not import; this module applies the same thresholds with
the same semantics to a cube pair and its row of measures, so that a sweep says which parameter
sets the release gates would pass:

* ``forbidden_values``: no published cell, totals included, takes a forbidden value
  (``expectations/forbidden.py``);
* ``max_small_cells_unchanged``: the share of original small cells (1 and 2), over every cell of the
  cube, published unchanged is at most the bound; a cube without small cells passes (Shlomo 2009,
  4.1; ``expectations/small_cells.py``);
* ``require_additivity``: every total and subtotal equals the sum of its children along every
  dimension; blocking only when required, so it is checked only then (``expectations/additivity.py``);
* ``max_hellinger`` and ``max_mean_absolute_deviation``: ``hellinger@interior`` and
  ``average_absolute_distance@interior`` of the measures are at most their bounds; an undefined
  (NaN) value passes, as GX skips missing values (``expectations/distance.py``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import xarray as xr

from cubeguard.config.models import GateSpec
from cubeguard.measures.risk import small_cells_unchanged
from cubeguard.measures.select import hierarchies

#: The blocking checks, in the order they are reported (named as the ``gates:`` keys).
CHECKS = (
    "forbidden_values",
    "max_small_cells_unchanged",
    "require_additivity",
    "max_hellinger",
    "max_mean_absolute_deviation",
)
SCOPE = "interior"  # the measures' scope the distance gates read, as expectations.gates.run_gates
SMALL_VALUES = (1, 2)  # expectations.small_cells.DEFAULT_SMALL_VALUES


@dataclass(frozen=True)
class CubeGates:
    """What the gates observed on one cube, and which blocking checks it fails.

    Attributes:
        forbidden_cells: published cells with a forbidden value (None: no forbidden values set).
        small_cells_unchanged: share of original small cells published unchanged, NaN without
            small cells (None: no bound set).
        non_additive_cells: totals and subtotals that differ from the sum of their children
            (None: additivity not required).
        failing: the names (:data:`CHECKS`) of the blocking checks the cube fails.
    """

    forbidden_cells: int | None
    small_cells_unchanged: float | None
    non_additive_cells: int | None
    failing: tuple[str, ...]

    def row(self) -> dict[str, object]:
        """The cube's gate columns for the sweep table."""
        return {
            "gate.forbidden_cells": self.forbidden_cells,
            "gate.small_cells_unchanged": self.small_cells_unchanged,
            "gate.non_additive_cells": self.non_additive_cells,
            "passes": not self.failing,
            "failing": ", ".join(self.failing),
        }


def evaluate_gates(
    original: xr.Dataset, protected: xr.Dataset, measures: Mapping[str, float], gates: GateSpec
) -> CubeGates:
    """Apply ``gates`` to one cube pair and its row of :func:`~cubeguard.measures.table.measure_cube`."""
    o = np.asarray(original["count"].values, dtype=np.int64)
    p = np.asarray(protected["count"].transpose(*original["count"].dims).values, dtype=np.int64)
    failing = []
    forbidden = None
    if gates.forbidden_values:
        forbidden = int(np.isin(p, sorted(set(gates.forbidden_values))).sum())
        if forbidden:
            failing.append("forbidden_values")
    small = None
    if gates.max_small_cells_unchanged is not None:
        small = small_cells_unchanged(o.reshape(-1), p.reshape(-1), SMALL_VALUES)
        if not math.isnan(small) and small > gates.max_small_cells_unchanged:
            failing.append("max_small_cells_unchanged")
    gaps = None
    if gates.require_additivity:
        gaps = non_additive_cells(p, [hierarchies(original["count"])[str(d)].parent for d in original["count"].dims])
        if gaps:
            failing.append("require_additivity")
    bounds = (
        ("max_hellinger", "hellinger", gates.max_hellinger),
        ("max_mean_absolute_deviation", "average_absolute_distance", gates.max_mean_absolute_deviation),
    )
    for check, measure, bound in bounds:
        value = measures.get(f"{measure}@{SCOPE}", math.nan)
        if bound is not None and not math.isnan(value) and value > bound:
            failing.append(check)
    return CubeGates(forbidden, small, gaps, tuple(failing))


def non_additive_cells(values: npt.NDArray[np.int64], parents: list[npt.NDArray[np.int64]]) -> int:
    """Cells with children along some dimension that differ from the sum of those children.

    ``parents[k]`` holds, per position along dimension ``k``, its parent's position (-1: the total).
    As ``expectations.additivity.check_additivity`` counts violations (Handbook on SDC v2, 5.4).

    Examples:
        >>> non_additive_cells(np.array([5, 2, 4]), [np.array([-1, 0, 0])])
        1
    """
    bad = np.zeros(values.shape, dtype=bool)
    for k, parent in enumerate(parents):
        a, b = np.moveaxis(values, k, 0), np.moveaxis(bad, k, 0)
        for p in np.unique(parent[parent >= 0]):
            b[p] |= a[p] != a[np.flatnonzero(parent == p)].sum(axis=0)
    return int(bad.sum())

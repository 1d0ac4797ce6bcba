"""The release gates, evaluated on one protected cube in memory for a parameter sweep.

A thin view of :mod:`cubeguard.gates`, the one implementation of the gate rules that the release's
Great Expectations gate (``expectations/``) also judges by, so that a sweep says which parameter sets
the release gates would pass. The blocking checks (:data:`CHECKS`, named as the ``gates:`` keys):

* ``forbidden_values``: no published cell, totals included, takes a forbidden value;
* ``max_small_cells_unchanged``: the share of original small cells (1 and 2), over every cell of the
  cube, published unchanged is at most the bound; a cube without small cells passes (Shlomo 2009, 4.1);
* ``require_additivity``: every total and subtotal equals the sum of its children along every
  dimension; blocking only when required, so the sweep checks it only then (Handbook on SDC v2, 5.4);
* ``max_hellinger`` and ``max_mean_absolute_deviation``: ``hellinger@interior`` and
  ``average_absolute_distance@interior`` of the measures are at most their bounds; an undefined
  (NaN) value passes;
* ``max_recovered_by_attack`` and ``attack_self_test``: the feasibility-interval attack on the cube
  alone (:func:`cubeguard.attack.attack_cube`; the release also attacks cubes together) recovers at
  most so many small cells, and recovers every one on the unprotected counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import xarray as xr

from cubeguard.config.models import GateSpec
from cubeguard.gates import CHECKS, evaluate_cube
from cubeguard.gates.distance import SCOPE
from cubeguard.gates.small_cells import SMALL_VALUES

__all__ = ["CHECKS", "SCOPE", "SMALL_VALUES", "CubeGates", "evaluate_gates"]


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
        recovered_by_attack: small cells the attack recovered with certainty (None: no attack bound set).
    """

    forbidden_cells: int | None
    small_cells_unchanged: float | None
    non_additive_cells: int | None
    failing: tuple[str, ...]
    recovered_by_attack: float | None = None

    def row(self) -> dict[str, object]:
        """The cube's gate columns for the sweep table."""
        return {
            "gate.forbidden_cells": self.forbidden_cells,
            "gate.small_cells_unchanged": self.small_cells_unchanged,
            "gate.non_additive_cells": self.non_additive_cells,
            "gate.recovered_by_attack": self.recovered_by_attack,
            "passes": not self.failing,
            "failing": ", ".join(self.failing),
        }


def evaluate_gates(
    original: xr.Dataset, protected: xr.Dataset, measures: Mapping[str, float], gates: GateSpec
) -> CubeGates:
    """Apply ``gates`` to one cube pair and its row of :func:`~cubeguard.measures.table.measure_cube`."""
    result = evaluate_cube(original, protected, measures, gates, scope=SCOPE, small_values=SMALL_VALUES)
    return CubeGates(
        forbidden_cells=None if result.forbidden is None else result.forbidden.cells,
        small_cells_unchanged=None if result.small_cells is None else result.small_cells.share,
        non_additive_cells=None if result.additivity is None else result.additivity.violations,
        failing=result.failing,
        recovered_by_attack=None if result.attack is None else result.attack.recovered,
    )
